"""View ops: a view of a ComplexTensor is a ComplexTensor of views of its parts.

Also the views that change what the elements are: ``view_as_real`` (see
Note [view_as_real of a planar tensor] in tensor.py), ``view_as_complex``,
``_conj`` (a lazily negated imaginary part) and ``view(dtype)``; the in-place
view ops that change a tensor's own metadata (``t_``, ``as_strided_``,
``resize_``, ...); and the dispatcher of :class:`~torchcx.tensor.RealView`.

``as_strided`` sizes, strides and offsets count complex elements, as the
wrapper reports them (Note [Planar representation] in tensor.py).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_map

from ..tensor import ComplexTensor, RealView, _interleaved_pair, element_unit
from ._common import partwise
from ._registry import REAL_VIEW_OPS, dispatch, register

aten = torch.ops.aten

partwise(
    aten.view.default,
    aten._unsafe_view,
    aten._reshape_alias,
    aten.reshape,
    aten.expand,
    aten.permute,
    aten.transpose.int,
    aten.t,
    aten.squeeze,
    aten.unsqueeze,
    aten.select.int,
    aten.slice.Tensor,
    aten.narrow,
    aten.diagonal,
    aten.unfold,
    aten.split,
    aten.split_with_sizes,
    aten.unsafe_split,
    aten.unsafe_split_with_sizes,
    aten.unbind.int,
    aten.chunk,
    aten.alias,
    aten.detach,
    aten.lift_fresh,
    aten.movedim,
    aten.view_copy.default,
    aten.expand_copy,
    aten.permute_copy,
    aten.transpose_copy.int,
    aten.t_copy,
    aten.squeeze_copy,
    aten.unsqueeze_copy,
    aten.select_copy.int,
    aten.slice_copy.Tensor,
    aten.diagonal_copy,
    aten.unfold_copy,
    aten.split_copy,
    aten.split_with_sizes_copy,
    aten.unbind_copy.int,
    aten.alias_copy,
    aten.detach_copy,
    aten.narrow_copy,
)


@register(aten.as_strided.default)
def as_strided_impl(x: ComplexTensor, size: Any, stride: Any, storage_offset: Any = None) -> ComplexTensor:
    # size, stride and offset count complex elements (Note [Planar representation]):
    # scale them to part elements; im sits at its own offset from re.
    unit = element_unit(x.re, x.im)
    offset = x.storage_offset() if storage_offset is None else storage_offset
    part_stride = [unit * s for s in stride]
    shift = x.im.storage_offset() - x.re.storage_offset()
    return ComplexTensor(
        x.re.as_strided(size, part_stride, unit * offset),
        x.im.as_strided(size, part_stride, unit * offset + shift),
    )


@register(aten.as_strided_copy.default)
def as_strided_copy_impl(x: ComplexTensor, size: Any, stride: Any, storage_offset: Any = None) -> ComplexTensor:
    view = as_strided_impl(x, size, stride, storage_offset)
    return ComplexTensor(view.re.clone(), view.im.clone())


# -- in-place view ops: new metadata for the tensor itself ---------------------------------


def _inplace_view(op: OpOverload, functional: OpOverload) -> None:
    """``x.t_()`` and friends: ``x`` becomes the view ``functional(x)``, in place.

    The parts are replaced by the view's parts (not changed in place: another
    ComplexTensor may hold the same part tensors), and the wrapper's own sizes
    and strides are updated by the op's kernel run below Python dispatch, as
    FunctionalTensor does for its wrapper.
    """

    def impl(x: ComplexTensor, *args: Any, **kwargs: Any) -> ComplexTensor:
        view = dispatch(functional, (x, *args), kwargs)
        x.re, x.im = view.re, view.im
        with no_dispatch():
            op(x, *args, **kwargs)
        return x

    impl.__name__ = impl.__qualname__ = op.overloadpacket.__name__ + "impl"
    register(op)(impl)


for _op, _functional in [
    (aten.t_.default, aten.t.default),
    (aten.transpose_.default, aten.transpose.int),
    (aten.unsqueeze_.default, aten.unsqueeze.default),
    (aten.squeeze_.default, aten.squeeze.default),
    (aten.squeeze_.dim, aten.squeeze.dim),
    (aten.squeeze_.dims, aten.squeeze.dims),
    (aten.as_strided_.default, aten.as_strided.default),
]:
    _inplace_view(_op, _functional)


@register(aten.resize_.default)
def resize__impl(x: ComplexTensor, size: Any, *, memory_format: Any = None) -> ComplexTensor:
    """Resize as a native complex tensor would: same storage, grown if needed, contiguous strides."""
    size = tuple(size)
    if size == tuple(x.shape) and memory_format is None:
        return x  # torch keeps the strides when the size does not change
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        raise NotImplementedError(f"torchcx: resize_ of a ComplexTensor with memory_format={memory_format}")
    unit = element_unit(x.re, x.im)
    if unit == 1:
        # separate buffers: resize each part (each grows its own storage)
        re, im = x.re, x.im
        if re.untyped_storage().data_ptr() == im.untyped_storage().data_ptr():
            raise NotImplementedError("torchcx: resize_ of a ComplexTensor whose parts share a buffer")
        x.re, x.im = aten.alias(re).resize_(size), aten.alias(im).resize_(size)
    else:
        # one interleaved buffer: grow it as the native complex tensor's, re and im stay interleaved
        storage = x.re.untyped_storage()
        item = x.re.element_size()
        numel = math.prod(size)
        needed = (2 * (x.storage_offset() + numel)) * item
        if numel and storage.nbytes() < needed:
            storage.resize_(needed)
        stride = [2 * s for s in _contiguous_strides(size)]
        offset = 2 * x.storage_offset()
        x.re, x.im = (
            _keep_neg(part, part.new_empty(0).set_(storage, offset + k, size, stride))
            for k, part in enumerate((x.re, x.im))
        )
    with no_dispatch():
        aten.resize_.default(x, size)
    return x


@register(aten.resize_as_.default)
def resize_as__impl(x: ComplexTensor, template: Tensor, *, memory_format: Any = None) -> ComplexTensor:
    return resize__impl(x, template.shape, memory_format=memory_format)


def _keep_neg(old: Tensor, new: Tensor) -> Tensor:
    # a conjugate's imaginary part is a lazily negated view: so is its replacement
    return new._neg_view() if old.is_neg() else new


def _contiguous_strides(size: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


@register(aten._conj)
def conj_impl(x: ComplexTensor) -> ComplexTensor:
    # conj() is a view in torch: negate im lazily (a neg-bit view), so writes to
    # x stay visible through the conjugate and vice versa.
    return ComplexTensor(aten.alias(x.re), x.im._neg_view())


@register(aten._neg_view)
def neg_view_impl(x: ComplexTensor) -> ComplexTensor:
    return ComplexTensor(x.re._neg_view(), x.im._neg_view())


@register(aten.view_as_real)
def view_as_real_impl(x: ComplexTensor) -> Tensor:
    pair = _interleaved_pair(x.re, x.im)
    if pair is not None:
        return pair
    return RealView(x.re, x.im)


@register(aten.view_as_complex)
def view_as_complex_impl(x: Tensor) -> ComplexTensor:
    if isinstance(x, RealView):
        return ComplexTensor(aten.alias(x.re), aten.alias(x.im))
    if x.shape[-1:] != (2,):
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return ComplexTensor(x.select(-1, 0), x.select(-1, 1))


@register(aten.view.dtype)
def view_dtype_impl(x: ComplexTensor, dtype: torch.dtype) -> Tensor:
    if dtype == x.dtype:
        return ComplexTensor(aten.alias(x.re), aten.alias(x.im))
    pair = _interleaved_pair(x.re, x.im)
    if pair is None or dtype.is_complex:
        raise NotImplementedError(
            f"torchcx: view(dtype={dtype}) of a ComplexTensor needs its parts in one interleaved "
            "buffer (from_interleaved); use torch.view_as_real for a real view"
        )
    return torch.view_as_complex(pair).view(dtype)


# -- RealView ----------------------------------------------------------------------------

_LEADING_DIM_VIEWS = {
    aten.slice.Tensor,
    aten.select.int,
    aten.unsqueeze.default,
    aten.alias.default,
    aten.detach.default,
    aten.transpose.int,
}


def dispatch_real_view(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``func`` where some arguments are RealViews (Note [view_as_real of a planar tensor])."""
    if func in REAL_VIEW_OPS:
        return REAL_VIEW_OPS[func](*args, **kwargs)
    view = args[0] if args and isinstance(args[0], RealView) else None
    if view is not None and not kwargs:
        last = view.dim() - 1
        if func is aten.view_as_complex.default:
            return ComplexTensor(aten.alias(view.re), aten.alias(view.im))
        if func is aten.select.int and args[1] % view.dim() == last:
            part = view.re if args[2] % 2 == 0 else view.im
            return aten.alias(part)
        if func is aten.unbind.int and args[1] % view.dim() == last:
            return aten.alias(view.re), aten.alias(view.im)
        dims = _dims_of(func, args, view.dim())
        # a view that touches the pair dim (a slice of it: view_as_real(z)[..., :1], which an
        # FFT truncated to n=1 takes; fuzzing run J, seed 22010) has no counterpart on the
        # parts; unsqueeze may insert just before it
        limit = last if func is aten.unsqueeze.default else last - 1
        if func in _LEADING_DIM_VIEWS and all(d <= limit for d in dims):
            # the dims as positions: a negative dim counts from the pair dim, not the parts' last
            rest = (*dims, *args[1 + len(dims) :]) if dims else args[1:]
            return RealView(func(view.re, *rest), func(view.im, *rest))
    if func._schema.is_mutable:
        return _mutate_through(func, args, kwargs)
    return func(*tree_map(_materialize, args), **tree_map(_materialize, kwargs))


def _dims_of(func: Any, args: tuple[Any, ...], ndim: int) -> list[int]:
    """The dims a view op of a RealView with ``ndim`` dims acts on, as non-negative positions;
    it maps onto the parts only if each comes before the pair dim (``ndim - 1``). unsqueeze
    inserts: its position counts one dim more (``unsqueeze(ndim)`` goes after the pair dim)."""
    if func is aten.unsqueeze.default:
        return [args[1] % (ndim + 1)]
    if func in (aten.slice.Tensor, aten.select.int):
        return [(args[1] if len(args) > 1 else 0) % ndim]
    if func is aten.transpose.int:
        return [args[1] % ndim, args[2] % ndim]
    return []


def _materialize(x: Any) -> Any:
    return x.materialize() if isinstance(x, RealView) else x


def _mutate_through(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run a mutating op on materialized copies, then write them back into the parts."""
    copies: list[tuple[RealView, Tensor]] = []

    def materialize(x: Any) -> Any:
        if isinstance(x, RealView):
            m = x.materialize()
            copies.append((x, m))
            return m
        return x

    out = func(*tree_map(materialize, args), **tree_map(materialize, kwargs))
    for view, m in copies:
        view.re.copy_(m[..., 0])
        view.im.copy_(m[..., 1])
    for view, m in copies:
        if out is m:
            return view
    return out


@register(aten._has_same_storage_numel.default)
def has_same_storage_numel_impl(x: Tensor, other: Tensor) -> bool:
    # View replay (``Tensor._view_func``, fake-tensor conversion of a view) asks whether a
    # new base's storage holds as many elements as the old one's: count complex elements of
    # the parts' memory (one part's storage if planar, both halves if interleaved).
    def numel(t: Tensor) -> int:
        z = t if isinstance(t, ComplexTensor) else ComplexTensor.from_interleaved(t)
        return z.re.untyped_storage().nbytes() // (z.re.element_size() * element_unit(z.re, z.im))

    return numel(x) == numel(other)
