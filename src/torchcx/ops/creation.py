"""Creation and conversion ops: factories with a complex dtype, ``*_like``,
``new_*``, ``_to_copy`` (dtype and device conversion), ``clone``, ``copy_``,
random fills and ``item()``.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor
from torch._prims_common import is_non_overlapping_and_dense_or_false

from .. import _layout
from ..tensor import ComplexTensor, RealView, component_dtype_of
from ._common import partwise, register
from ._parts import parts
from ._registry import REAL_TO_COMPLEX_OPS

aten = torch.ops.aten


def _part_dtype(dtype: torch.dtype | None, like: Tensor | None = None) -> torch.dtype:
    """The part dtype for a requested (complex) dtype; defaults to ``like``'s parts.

    ``like``'s own dtype means ``like``'s parts: ``zeros_like(z, dtype=z.dtype)``
    of bfloat16 parts has bfloat16 parts, although z.dtype is complex32
    (Note [dtype of a ComplexTensor]).
    """
    if isinstance(like, ComplexTensor) and (dtype is None or dtype == like.dtype):
        return like.component_dtype
    if dtype is None:
        return component_dtype_of(torch.complex64 if torch.get_default_dtype() == torch.float32 else torch.complex128)
    return component_dtype_of(dtype)


def _factory_kwargs(kwargs: dict[str, Any], like: Tensor | None = None) -> tuple[torch.dtype, dict[str, Any]]:
    """(part dtype, kwargs for the real factory) from a complex factory's kwargs."""
    kw = dict(kwargs)
    dtype = kw.pop("dtype", None)
    kw.pop("layout", None)
    kw.pop("pin_memory", None)
    if like is not None and kw.get("device") is None:
        kw["device"] = like.device
    return _part_dtype(dtype, like), kw


def _split_fill(value: Any) -> tuple[Any, Any]:
    if isinstance(value, complex):
        return value.real, value.imag
    if isinstance(value, Tensor):
        return parts(value, value.real.dtype if value.is_complex() else value.dtype)
    return value, 0


# -- factories -------------------------------------------------------------------------


# (_efficientzerotensor: autograd's zero gradients, e.g. of sgn. A ZeroTensor has no storage,
# so run natively it could not cross the boundary; materialized, as Inductor does for real ones.)
@register(aten.empty.memory_format, aten.zeros.default, aten._efficientzerotensor.default)
def zeros_impl(size: Any, **kwargs: Any) -> ComplexTensor:
    dtype, kw = _factory_kwargs(kwargs)
    kw.pop("memory_format", None)
    re = torch.zeros(size, dtype=dtype, **kw)
    return ComplexTensor(re, torch.zeros_like(re))


@register(aten.ones.default)
def ones_impl(size: Any, **kwargs: Any) -> ComplexTensor:
    dtype, kw = _factory_kwargs(kwargs)
    return ComplexTensor(torch.ones(size, dtype=dtype, **kw), torch.zeros(size, dtype=dtype, **kw))


@register(aten.full.default)
def full_impl(size: Any, fill_value: Any, **kwargs: Any) -> ComplexTensor:
    dtype, kw = _factory_kwargs(kwargs)
    fr, fi = _split_fill(fill_value)
    return ComplexTensor(torch.full(size, fr, dtype=dtype, **kw), torch.full(size, fi, dtype=dtype, **kw))


@register(aten.scalar_tensor)
def scalar_tensor_impl(value: Any, **kwargs: Any) -> ComplexTensor:
    return full_impl((), value, **kwargs)


@register(aten.empty_strided)
def empty_strided_impl(size: Any, stride: Any, **kwargs: Any) -> ComplexTensor:
    dtype, kw = _factory_kwargs(kwargs)
    return _empty_strided(size, stride, dtype, kw)


def _empty_strided(size: Any, stride: Any, part: torch.dtype, kw: dict[str, Any]) -> ComplexTensor:
    return ComplexTensor(
        torch.empty_strided(size, stride, dtype=part, **kw), torch.empty_strided(size, stride, dtype=part, **kw)
    )


@register(aten.empty_permuted)
def empty_permuted_impl(size: Any, physical_layout: Any, **kwargs: Any) -> ComplexTensor:
    dtype, kw = _factory_kwargs(kwargs)
    return ComplexTensor(
        torch.empty_permuted(size, physical_layout, dtype=dtype, **kw),
        torch.empty_permuted(size, physical_layout, dtype=dtype, **kw),
    )


def _like(x: Tensor, kwargs: dict[str, Any]) -> tuple[torch.dtype, dict[str, Any]]:
    kw = dict(kwargs)
    dtype = kw.pop("dtype", None)
    kw.pop("layout", None)
    kw.pop("pin_memory", None)
    kw.setdefault("device", x.device)
    memory_format = kw.pop("memory_format", None)
    if memory_format is not None and memory_format != torch.preserve_format:
        kw["memory_format"] = memory_format
    return _part_dtype(dtype, x), kw


def _real_like(op: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor | None:
    """``op`` (a ``*_like`` factory) asked for a real dtype: the real factory on ``re``'s layout."""
    dtype = kwargs.get("dtype")
    if dtype is None or dtype.is_complex:
        return None
    return op(x.re if isinstance(x, ComplexTensor) else x, *args, **kwargs)


@register(aten.empty_like, aten.zeros_like)
def zeros_like_impl(x: Tensor, **kwargs: Any) -> Tensor:
    real = _real_like(aten.zeros_like.default, x, **kwargs)
    if real is not None:
        return real
    dtype, kw = _like(x, kwargs)
    kw.pop("device")
    like = x.re if isinstance(x, ComplexTensor) else x
    re = torch.zeros_like(like, dtype=dtype, **kw)
    return ComplexTensor(re, torch.zeros_like(re))


@register(aten.ones_like)
def ones_like_impl(x: Tensor, **kwargs: Any) -> Tensor:
    return full_like_impl(x, 1, **kwargs)


@register(aten.full_like)
def full_like_impl(x: Tensor, fill_value: Any, **kwargs: Any) -> Tensor:
    real = _real_like(aten.full_like.default, x, fill_value, **kwargs)
    if real is not None:
        return real
    dtype, kw = _like(x, kwargs)
    kw.pop("device")
    like = x.re if isinstance(x, ComplexTensor) else x
    fr, fi = _split_fill(fill_value)
    return ComplexTensor(torch.full_like(like, fr, dtype=dtype, **kw), torch.full_like(like, fi, dtype=dtype, **kw))


@register(aten.new_empty, aten.new_zeros)
def new_zeros_impl(x: Tensor, size: Any, **kwargs: Any) -> Tensor:
    return _new(x, size, 0, kwargs)


@register(aten.new_ones)
def new_ones_impl(x: Tensor, size: Any, **kwargs: Any) -> Tensor:
    return _new(x, size, 1, kwargs)


@register(aten.new_full)
def new_full_impl(x: Tensor, size: Any, fill_value: Any, **kwargs: Any) -> Tensor:
    return _new(x, size, fill_value, kwargs)


@register(aten.new_empty_strided)
def new_empty_strided_impl(x: Tensor, size: Any, stride: Any, **kwargs: Any) -> Tensor:
    kw = {k: v for k, v in kwargs.items() if v is not None}
    kw.setdefault("device", x.device)
    dtype = kw.pop("dtype", None)
    if dtype is not None and not dtype.is_complex:
        return torch.empty_strided(size, stride, dtype=dtype, **kw)
    return _empty_strided(size, stride, _part_dtype(dtype, x), kw)


def _new(x: Tensor, size: Any, fill: Any, kwargs: dict[str, Any]) -> Tensor:
    dtype = kwargs.get("dtype")
    device = kwargs.get("device") or x.device
    if dtype is not None and not dtype.is_complex:
        return torch.full(size, fill, dtype=dtype, device=device)
    part = _part_dtype(dtype, x)
    fr, fi = _split_fill(fill)
    return ComplexTensor(
        torch.full(size, fr, dtype=part, device=device), torch.full(size, fi, dtype=part, device=device)
    )


@register(aten.randn.default)
def randn_impl(size: Any, **kwargs: Any) -> ComplexTensor:
    # torch's complex randn: each part is N(0, 1/2), so that E|z|^2 = 1.
    dtype, kw = _factory_kwargs(kwargs)
    return _randn(size, dtype, kw)


def _randn(size: Any, part: torch.dtype, kw: dict[str, Any]) -> ComplexTensor:
    # (takes the part dtype: bfloat16 parts have no complex dtype of their own to pass to randn)
    kw = dict(kw)
    if kw.get("generator") is None:
        # (``randn.generator`` with None traces as itself, which Inductor's random-number
        # pass does not replace and its lowering rejects; ``randn.default`` it replaces)
        kw.pop("generator", None)
    scale = 0.5**0.5
    re = torch.randn(size, dtype=part, **kw) * scale
    im = torch.randn(size, dtype=part, **kw) * scale
    return ComplexTensor(re, im)


@register(aten.randn_like)
def randn_like_impl(x: Tensor, **kwargs: Any) -> Tensor:
    real = _real_like(aten.randn_like.default, x, **kwargs)
    if real is not None:
        return real
    part, kw = _like(x, kwargs)
    kw.pop("memory_format", None)
    return _randn(x.shape, part, kw)


@register(aten.rand_like)
def rand_like_impl(x: Tensor, **kwargs: Any) -> Tensor:
    real = _real_like(aten.rand_like.default, x, **kwargs)
    if real is not None:
        return real
    dtype, kw = _like(x, kwargs)
    kw.pop("memory_format", None)
    return ComplexTensor(torch.rand(x.shape, dtype=dtype, **kw), torch.rand(x.shape, dtype=dtype, **kw))


@register(aten.normal_)
def normal__impl(x: ComplexTensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> ComplexTensor:
    # Complex normal with E|z - mean|^2 = std^2: each part has std / sqrt(2).
    s = std * 0.5**0.5
    x.re.normal_(mean, s, generator=generator)
    x.im.normal_(0.0, s, generator=generator)
    return x


@register(aten.uniform_)
def uniform__impl(x: ComplexTensor, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> ComplexTensor:
    x.re.uniform_(from_, to, generator=generator)
    x.im.uniform_(from_, to, generator=generator)
    return x


# -- complex values from real ones ---------------------------------------------------------

REAL_TO_COMPLEX_OPS.update((aten.complex, aten.polar))


@register(aten.complex)
def complex_impl(real: Tensor, imag: Tensor) -> ComplexTensor:
    # A new tensor, as torch.complex's: the broadcast parts are copied, never aliased.
    real, imag = torch.broadcast_tensors(real, imag)
    return ComplexTensor(
        real.clone(memory_format=torch.contiguous_format), imag.clone(memory_format=torch.contiguous_format)
    )


@register(aten.polar)
def polar_impl(abs: Tensor, angle: Tensor) -> ComplexTensor:  # noqa: A002  (torch's argument name)
    # abs * (cos(angle) + i sin(angle)), as eager's at::polar computes it.
    abs, angle = torch.broadcast_tensors(abs, angle)
    return ComplexTensor(abs * torch.cos(angle), abs * torch.sin(angle))


# -- conversion and copies ---------------------------------------------------------------

partwise(aten.fill_, aten.fill, aten.zero_, aten.zero, aten.lift_fresh_copy)


@register(aten.clone.default)
def clone_impl(x: ComplexTensor, *, memory_format: torch.memory_format | None = None) -> ComplexTensor:
    """New planar buffers, laid out as the native clone's (and, for a value in words, the
    same clone of its words: Note [Packed form]).

    ``preserve_format`` keeps the strides of a non-overlapping, dense tensor.
    The parts of an interleaved tensor are neither (stride 2), so the layout
    comes from the wrapper's strides (complex elements): clone in the order
    of decreasing stride, then permute back.
    """

    def copy(t: Tensor) -> Tensor:
        return t.clone(memory_format=memory_format)

    if memory_format in (None, torch.preserve_format):
        if x.is_contiguous():
            memory_format = torch.contiguous_format
        elif is_non_overlapping_and_dense_or_false(x):
            order = sorted(range(x.dim()), key=lambda d: -x.stride()[d])
            inverse = [order.index(d) for d in range(x.dim())]

            def copy(t: Tensor) -> Tensor:
                return t.permute(order).clone(memory_format=torch.contiguous_format).permute(inverse)

        else:
            memory_format = torch.contiguous_format
    out = ComplexTensor(copy(x.re), copy(x.im))
    _layout.remember_words(x, out, copy)
    return out


@register(
    aten._to_sparse, aten.to_sparse, aten._to_sparse_csr, aten._to_sparse_csc, aten._to_sparse_bsr, aten._to_sparse_bsc
)
def to_sparse_impl(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    raise NotImplementedError(
        "torchcx: sparse layouts are not supported for ComplexTensor (a sparse tensor has no planar "
        "form); call .to_interleaved() first for a native complex tensor to make sparse"
    )


@register(aten._to_copy)
def to_copy_impl(x: Tensor, **kwargs: Any) -> Tensor:
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("layout", None)
    kwargs.pop("pin_memory", None)
    if not isinstance(x, ComplexTensor):
        # a real tensor converted to a complex dtype (under the lowering's dispatch)
        part = component_dtype_of(dtype)
        re = x.to(dtype=part, copy=True, **kwargs)
        return ComplexTensor(re, torch.zeros_like(re))
    if dtype is not None and not dtype.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        return x.re.to(dtype=dtype, copy=True, **kwargs)
    part = x.component_dtype if dtype is None or dtype == x.dtype else component_dtype_of(dtype)
    return ComplexTensor(x.re.to(dtype=part, copy=True, **kwargs), x.im.to(dtype=part, copy=True, **kwargs))


@register(torch.ops.prims.convert_element_type)
def convert_element_type_impl(x: Tensor, dtype: torch.dtype) -> Tensor:
    # The prim decompositions use for dtype conversions (float_power, type promotion).
    return to_copy_impl(x, dtype=dtype)


def to_component_dtype(x: ComplexTensor, dtype: torch.dtype) -> ComplexTensor:
    """``x`` with parts converted to ``dtype``, differentiably (see ComplexTensor.with_component_dtype)."""
    return _ToComponentDtype.apply(x, dtype)


class _ToComponentDtype(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: ComplexTensor, dtype: torch.dtype) -> ComplexTensor:
        ctx.part = x.component_dtype
        return ComplexTensor(x.re.to(dtype), x.im.to(dtype))

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        g = grad if isinstance(grad, ComplexTensor) else ComplexTensor.from_interleaved(grad)
        return ComplexTensor(g.re.to(ctx.part), g.im.to(ctx.part)), None


@register(aten.copy_)
def copy__impl(dst: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    if isinstance(dst, ComplexTensor):
        sr, si = parts(src, dst.component_dtype) if isinstance(src, Tensor) else _split_fill(src)
        # Read both source parts before writing: src may alias dst (x.copy_(x.conj())).
        if isinstance(sr, Tensor) and isinstance(si, Tensor) and _overlaps(dst, sr, si):
            sr, si = sr.clone(), si.clone()
        dst.re.copy_(sr, non_blocking)
        if isinstance(si, Tensor):
            dst.im.copy_(si, non_blocking)
        else:
            dst.im.fill_(si)
        return dst
    # complex source into a real destination: torch keeps the real part and warns.
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
    src_re = src.materialize()[..., 0] if isinstance(src, RealView) else src.re
    dst.copy_(src_re, non_blocking)
    return dst


@register(aten.copy.default)
def copy_impl(dst: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    # the result has dst's dtype and layout and src's values (a real dst keeps src's real part)
    return copy__impl(dst.clone(), src, non_blocking)


def _overlaps(dst: ComplexTensor, *srcs: Tensor) -> bool:
    from torch.multiprocessing.reductions import StorageWeakRef

    mine = {StorageWeakRef(dst.re.untyped_storage()), StorageWeakRef(dst.im.untyped_storage())}
    return any(StorageWeakRef(s.untyped_storage()) in mine for s in srcs)


@register(aten._local_scalar_dense)
def local_scalar_dense_impl(x: ComplexTensor) -> complex:
    return complex(x.re.item(), x.im.item())


@register(aten.is_same_size)
def is_same_size_impl(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape
