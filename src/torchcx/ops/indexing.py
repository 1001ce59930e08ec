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
from ._common import opmath, partwise, register, result_ctype, to_complex
from .creation import clone_impl

aten = torch.ops.aten

partwise(
    # flip as Inductor's decompositions spell it
    torch.ops.prims.rev,
    # concatenation and splitting (aten.cat.default: cat_impl below)
    aten.cat.out,
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
    # backward formulas of the above with no decomposition in torch._decomp: they
    # sum or move gradient elements (self, where an argument, only gives the shape)
    aten.masked_scatter_backward,
    aten.replication_pad1d_backward,
    aten.replication_pad2d_backward,
    aten.replication_pad3d_backward,
)

# Scalar arguments that are values of the result: split into parts too.
partwise(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar, values=("self", "other"))
partwise(aten._unsafe_masked_index, values=("fill",))


@register(aten.cat.default)
def cat_impl(tensors: list[Any], dim: int = 0) -> ComplexTensor:
    # Concatenation is partwise, but the result dtype promotes over every operand,
    # legacy empty 1-D ones included. The parts are converted to it first: Inductor's
    # cat lowering drops those empty operands before it promotes (a float64 (0,) part
    # catted with a float32 one gives float32), which would turn complex128 into complex64.
    ctype = result_ctype(*tensors)
    parts = [to_complex(t, ctype) for t in tensors]
    return ComplexTensor(aten.cat([p.re for p in parts], dim), aten.cat([p.im for p in parts], dim))


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
def scatter_reduce_impl(x: ComplexTensor, dim: int, index: Tensor, src: Any, *, reduce: str) -> ComplexTensor:
    if reduce not in ("add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    compute = opmath(x.component_dtype)
    xr, xi = x.re.to(compute), x.im.to(compute)
    sr, si = _src_parts(x, index, src, compute)
    if reduce == "add":
        re, im = aten.scatter_add(xr, dim, index, sr), aten.scatter_add(xi, dim, index, si)
    else:
        # A product of complex numbers multiplies their moduli and adds their
        # arguments: scatter both as real reductions, then back to (re, im).
        modulus = aten.scatter_reduce(torch.hypot(xr, xi), dim, index, torch.hypot(sr, si), "prod")
        phase = aten.scatter_add(torch.atan2(xi, xr), dim, index, torch.atan2(si, sr))
        re, im = modulus * torch.cos(phase), modulus * torch.sin(phase)
    return ComplexTensor(re.to(x.component_dtype), im.to(x.component_dtype))


def _src_parts(x: ComplexTensor, index: Tensor, src: Any, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """scatter's ``src`` (a tensor, or the scalar of a ``.value`` overload) as parts in ``dtype``."""
    if isinstance(src, Tensor):
        s = to_complex(src)
        return s.re.to(dtype), s.im.to(dtype)
    value = complex(src)
    return (
        torch.full(index.shape, value.real, dtype=dtype, device=x.device),
        torch.full(index.shape, value.imag, dtype=dtype, device=x.device),
    )
