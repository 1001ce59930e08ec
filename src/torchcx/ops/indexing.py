"""Indexing, scatter/gather, masking, concatenation, padding and movement ops.

Most act on the two parts independently (``partwise``): picking, moving,
copying or adding complex elements is picking, moving, copying or adding their
real and imaginary parts. The few that multiply (``scatter`` with
``reduce="multiply"``, a complex ``alpha``) are written out below.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..tensor import ComplexTensor
from ._common import partwise, register, result_ctype, to_complex
from .creation import clone_impl

aten = torch.ops.aten

partwise(
    # concatenation and splitting
    aten.cat,
    aten._chunk_cat,
    # indexing and gathering
    aten.index.Tensor,
    aten._unsafe_index.Tensor,
    aten.index_select,
    aten.gather,
    aten.take,
    aten.masked_select,
    # writing at indices (the in-place variants mutate both parts)
    aten.index_put,
    aten.index_put_,
    aten._unsafe_index_put,
    aten._index_put_impl_,
    aten._unsafe_masked_index_put_accumulate,
    aten.index_copy,
    aten.index_copy_,
    aten.index_fill,
    aten.index_fill_,
    aten.scatter.src,
    aten.scatter.value,
    aten.scatter_.src,
    aten.scatter_.value,
    aten.scatter_add,
    aten.scatter_add_,
    aten.put,
    aten.put_,
    aten.masked_fill,
    aten.masked_fill_,
    aten.masked_scatter,
    aten.masked_scatter_,
    # embedding a tensor into a bigger one
    aten.diagonal_scatter,
    aten.select_scatter,
    aten.slice_scatter,
    aten.diag_embed,
    aten.tril,
    aten.triu,
    aten.tril_,
    aten.triu_,
    # movement
    aten.flip,
    aten.roll,
    aten.repeat,
    aten.pixel_shuffle,
    aten.pixel_unshuffle,
    aten.channel_shuffle,
    aten.native_channel_shuffle,
    aten.im2col,
    aten.col2im,
    # padding: the pad value is a complex value (split), reflect/replicate/circular copy elements
    aten.constant_pad_nd,
    aten.reflection_pad1d,
    aten.reflection_pad2d,
    aten.reflection_pad3d,
    aten.replication_pad1d,
    aten.replication_pad2d,
    aten.replication_pad3d,
    aten._pad_circular,
)

# Scalar arguments that are values of the result: split into parts too.
partwise(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar, values=("self", "other"))
partwise(aten._unsafe_masked_index, values=("fill",))


@register(aten.as_strided_scatter.default)
def as_strided_scatter_impl(
    x: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: Any = None
) -> ComplexTensor:
    # A copy of x with src written through its as_strided view. size and stride
    # address the copy's memory, so the copy's parts are laid out as the
    # native clone would be, counting complex elements.
    ctype = result_ctype(x, src)
    x = clone_impl(to_complex(x, ctype))
    src = to_complex(src, ctype)
    return ComplexTensor(
        aten.as_strided_scatter(x.re, src.re, size, stride, storage_offset),
        aten.as_strided_scatter(x.im, src.im, size, stride, storage_offset),
    )


@register(aten.index_add.default)
def index_add_impl(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> ComplexTensor:
    # x + alpha * source at the indices: a complex alpha scales source first
    # (a complex product), then the addition is partwise.
    if isinstance(alpha, complex):
        source, alpha = torch.mul(source, alpha), 1
    ctype = result_ctype(x, source)
    x, source = to_complex(x, ctype), to_complex(source, ctype)
    return ComplexTensor(
        aten.index_add(x.re, dim, index, source.re, alpha=alpha),
        aten.index_add(x.im, dim, index, source.im, alpha=alpha),
    )


@register(aten.scatter.reduce, aten.scatter.value_reduce)
def scatter_reduce_impl(x: Tensor, dim: int, index: Tensor, src: Any, *, reduce: str) -> ComplexTensor:
    if reduce == "add":
        return _scatter_add(x, dim, index, src)
    if reduce != "multiply":
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    # A product of complex numbers multiplies their moduli and adds their
    # arguments: scatter both as real reductions, then back to (re, im).
    ctype = result_ctype(x, src)
    x = to_complex(x, ctype)
    if not isinstance(src, Tensor):
        src = torch.full(index.shape, src, dtype=x.dtype if ctype.real != torch.bfloat16 else None, device=x.device)
    src = to_complex(src, ctype)
    modulus = aten.scatter_reduce(torch.abs(x), dim, index, torch.abs(src), "prod")
    phase = aten.scatter_add(torch.angle(x), dim, index, torch.angle(src))
    return ComplexTensor(modulus * torch.cos(phase), modulus * torch.sin(phase))


def _scatter_add(x: Tensor, dim: int, index: Tensor, src: Any) -> ComplexTensor:
    ctype = result_ctype(x, src)
    x = to_complex(x, ctype)
    if isinstance(src, Tensor):
        src = to_complex(src, ctype)
        sr, si = src.re, src.im
    else:
        value = complex(src)
        sr = torch.full(index.shape, value.real, dtype=ctype.real, device=x.device)
        si = torch.full(index.shape, value.imag, dtype=ctype.real, device=x.device)
    return ComplexTensor(aten.scatter_add(x.re, dim, index, sr), aten.scatter_add(x.im, dim, index, si))
