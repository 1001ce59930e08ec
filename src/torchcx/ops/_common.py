"""What every op family shares: type promotion, opmath, and one decorator per
kind of op that turns a formula on real parts into a registered aten
implementation (the way ``torch._refs`` builds elementwise references).

A formula receives parts already converted to the *computation* dtype (float32
for float16/bfloat16 parts, see ``opmath``) and returns new tensors (never an
input part itself: results must not alias inputs). The decorator rounds the
result to the result dtype, broadcasts scalars to the result shape, and wraps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch._ops import OpOverload, OpOverloadPacket

from .. import _layout
from ..tensor import ComplexTensor, RealView, complex_dtype_of, component_dtype_of
from ._parts import CType, Part, parts, wrap
from ._registry import calling_family, register

Scalar = bool | int | float | complex
Op = OpOverload | OpOverloadPacket


# -- type promotion --------------------------------------------------------------------


def ctype_of(x: Any) -> CType:
    if isinstance(x, ComplexTensor):
        return CType(x.component_dtype, True)
    if isinstance(x, Tensor):
        if x.is_complex():
            return CType(component_dtype_of(x.dtype), True)
        return CType(x.dtype, False)
    return _scalar_ctype(x)


def _scalar_ctype(x: Scalar) -> CType:
    # Python numbers promote as torch's "wrapped numbers": the default dtype of their kind.
    if isinstance(x, bool):
        return CType(torch.bool, False)
    if isinstance(x, int):
        return CType(torch.int64, False)
    if isinstance(x, float):
        return CType(torch.get_default_dtype(), False)
    if isinstance(x, complex):
        return CType(torch.get_default_dtype(), True)
    if isinstance(x, torch.SymInt):
        return CType(torch.int64, False)
    if isinstance(x, torch.SymFloat):
        return CType(torch.get_default_dtype(), False)
    if isinstance(x, torch.SymBool):
        return CType(torch.bool, False)
    raise TypeError(f"torchcx: cannot promote {type(x).__name__}")


def _combine(higher: CType | None, lower: CType | None) -> CType | None:
    # ATen's combine_categories: a higher-priority operand keeps its dtype unless
    # the lower one is of a higher category (complex > float > int > bool).
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        if not higher.is_floating:
            return lower
        if higher.real == torch.bfloat16 and lower.real != torch.bfloat16:
            # torch's complex counterpart of bfloat16 is complex64; bfloat16
            # parts only come from an operand that has them already.
            return CType(torch.float32, True)
        return CType(higher.real, True)
    if higher.is_floating:
        return higher
    if higher.real == torch.bool or lower.is_floating:
        return higher.promote(lower)
    return higher


def result_ctype(*operands: Any) -> CType:
    """torch.result_type over tensors, ComplexTensors and scalars, in part space."""
    dim = zero = wrapped = None
    for x in operands:
        if x is None:
            continue
        ct = ctype_of(x)
        if isinstance(x, Tensor):
            if x.dim() > 0:
                dim = ct.promote(dim) if dim else ct
            else:
                zero = ct.promote(zero) if zero else ct
        else:
            wrapped = ct.promote(wrapped) if wrapped else ct
    result = _combine(dim, _combine(zero, wrapped))
    if result is None:
        raise TypeError("torchcx: no operands to promote")
    return result


def opmath(dtype: torch.dtype) -> torch.dtype:
    """The dtype arithmetic on parts of ``dtype`` is computed in (as torch's opmath)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# -- operands --------------------------------------------------------------------------
# (splitting operands into parts and wrapping results: ``_parts``)


def common_shape(*xs: Any) -> torch.Size:
    return torch.broadcast_shapes(*(x.shape for x in xs if isinstance(x, Tensor)))


def common_device(*xs: Any) -> torch.device:
    devices = [x.device for x in xs if isinstance(x, Tensor) and x.dim() > 0]
    devices += [x.device for x in xs if isinstance(x, Tensor)]
    return devices[0] if devices else torch.device("cpu")


def to_complex(x: Any, ctype: CType | None = None) -> ComplexTensor:
    """``x`` as a ComplexTensor (with part dtype ``ctype.real`` if given)."""
    if isinstance(x, ComplexTensor):
        if ctype is None or x.component_dtype == ctype.real:
            return x
        return ComplexTensor(x.re.to(ctype.real), x.im.to(ctype.real))
    dtype = ctype.real if ctype is not None else ctype_of(x).real
    if not isinstance(x, Tensor):
        re, im = parts(x, dtype)
        return ComplexTensor(torch.tensor(re, dtype=dtype), torch.tensor(im, dtype=dtype))
    re = x.to(dtype)
    return ComplexTensor(re, torch.zeros_like(re))


def complex_dtype(ctype: CType) -> torch.dtype:
    return complex_dtype_of(ctype.real) if ctype.is_complex else ctype.real


def size_hint(n: int | torch.SymInt) -> int:
    """A size as an int; a symbolic one by its hint, without adding a guard (for speed choices
    only: Note [FFT path selection], Note [GEMM strategy rule]); 65536 when it has no hint."""
    if isinstance(n, torch.SymInt):
        hint = n.node.hint
        return int(hint) if hint is not None else 1 << 16
    return int(n)


# -- family decorators -------------------------------------------------------------------


def _named(fn: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(impl, fn)
    return impl


def unary(*ops: Op) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(re, im, *args) -> (re, im)``: a complex-to-complex pointwise op."""

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        def impl(x: Any, *args: Any, **kwargs: Any) -> ComplexTensor:
            x = to_complex(x)
            dtype = x.component_dtype
            re, im = fn(*parts(x, opmath(dtype)), *args, **kwargs)
            return wrap(re, im, dtype, x.shape, x.device)

        register(*ops, kind="formula")(_named(fn, impl))
        return fn

    return decorator


def unary_to_real(*ops: Op) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(re, im, *args) -> Tensor``: a complex-to-real pointwise op.

    A floating result is rounded to the part dtype; a boolean one is kept.
    """

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        def impl(x: Any, *args: Any, **kwargs: Any) -> Tensor:
            x = to_complex(x)
            dtype = x.component_dtype
            out = fn(*parts(x, opmath(dtype)), *args, **kwargs)
            if out.dtype.is_floating_point:
                out = out.to(dtype)
            return out

        register(*ops, kind="formula")(_named(fn, impl))
        return fn

    return decorator


def binary(*ops: Op, to_real: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(ar, ai, br, bi, **kwargs)``: a pointwise op of two operands.

    Operands are promoted as torch promotes them; a real operand gets a zero
    imaginary part. ``fn`` returns ``(re, im)``, or a real tensor when
    ``to_real`` (comparisons).
    """

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        def impl(a: Any, b: Any, **kwargs: Any) -> Tensor:
            ctype = result_ctype(a, b)
            compute = opmath(ctype.real)
            out = fn(*parts(a, compute), *parts(b, compute), **kwargs)
            if to_real:
                return out
            return wrap(*out, ctype.real, common_shape(a, b), common_device(a, b))

        register(*ops, kind="formula")(_named(fn, impl))
        return fn

    return decorator


def where(cond: Tensor | bool, x: Part, y: Part) -> Part:
    """torch.where that also takes a Python bool (a condition on scalar parts)."""
    if isinstance(cond, Tensor):
        return torch.where(cond, x, y)
    return x if cond else y


# -- partwise ops ------------------------------------------------------------------------

#: Tensor arguments that are indices, masks or conditions: both parts use them as they are.
STRUCTURAL_TENSOR_ARGS = frozenset(
    {"index", "indices", "mask", "condition", "repeats", "offsets", "sorter", "boundaries", "lengths"}
)
#: Scalar arguments that are values of the result (split into parts); other
#: Scalars (``alpha``, ...) are multipliers and must be real for a partwise op.
VALUE_SCALAR_ARGS = frozenset({"value", "fill_value"})


def _split_value_tensor(x: Any) -> tuple[Any, Any]:
    if isinstance(x, ComplexTensor):
        return x.re, x.im
    if isinstance(x, RealView):
        m = x.materialize()
        return m, torch.zeros_like(m)
    if isinstance(x, Tensor):
        return x, torch.zeros_like(x)
    return x, x  # None


def _split_argument(
    op: OpOverload, arg: torch.Argument, value: Any, values: frozenset[str] = VALUE_SCALAR_ARGS
) -> tuple[Any, Any]:
    kind = arg.type
    text = str(kind)
    if "Tensor" in text and arg.name not in STRUCTURAL_TENSOR_ARGS:
        if isinstance(value, (list, tuple)):
            pairs = [_split_value_tensor(v) for v in value]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        return _split_value_tensor(value)
    if text in ("number", "Optional[number]"):  # a Scalar (the schema's type prints as "number")
        if arg.name in values:
            if isinstance(value, complex):
                return value.real, value.imag
            return value, (0 if isinstance(value, (bool, int)) else 0.0) if value is not None else None
        if isinstance(value, complex):
            raise NotImplementedError(f"torchcx: {op} with complex {arg.name}={value!r}")
    if isinstance(value, torch.dtype) and value.is_complex:  # a ScalarType (prints as "int")
        value = component_dtype_of(value)
    return value, value


def _bind(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[torch.Argument, Any, bool]]:
    """(schema argument, value, passed-as-keyword) for every argument given."""
    bound = []
    for i, arg in enumerate(op._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            bound.append((arg, args[i], False))
        elif arg.name in kwargs:
            bound.append((arg, kwargs[arg.name], True))
    return bound


def make_partwise(op: OpOverload, values: Sequence[str] = ()) -> Callable[..., Any]:
    """The implementation of an op that acts on re and im independently.

    f(re + i im) = f(re) + i f(im) holds for view, movement, indexing, fill and
    pad ops: apply ``op`` to each part. Complex values among the arguments are
    split (tensors, and Scalars named ``value``/``fill_value`` or in ``values``); dims, indices,
    masks and multipliers go to both parts; a complex dtype argument becomes
    the part dtype. Tensor results are paired up into ComplexTensors, so a view
    op gives a ComplexTensor of views and an in-place op mutates both parts.
    """

    value_names = VALUE_SCALAR_ARGS | frozenset(values)
    returns = op._schema.returns
    is_view = bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write

    def impl(*args: Any, **kwargs: Any) -> Any:
        re_args: list[Any] = []
        im_args: list[Any] = []
        re_kwargs: dict[str, Any] = {}
        im_kwargs: dict[str, Any] = {}
        for arg, value, as_kw in _bind(op, args, kwargs):
            r, i = _split_argument(op, arg, value, value_names)
            if as_kw:
                re_kwargs[arg.name], im_kwargs[arg.name] = r, i
            else:
                re_args.append(r)
                im_args.append(i)
        out = pair_results(op(*re_args, **re_kwargs), op(*im_args, **im_kwargs))
        if is_view and args and isinstance(args[0], ComplexTensor):
            _layout.remember_words(args[0], out, lambda w: op(w, *args[1:], **kwargs))  # Note [Packed form]
        return out

    name = op.overloadpacket.__name__.lstrip("_") + "_impl"
    impl.__name__ = impl.__qualname__ = name
    return impl


def pair_results(re_out: Any, im_out: Any) -> Any:
    """Zip per-part results into ComplexTensors (tensors, or lists/tuples of them)."""
    if isinstance(re_out, Tensor):
        return ComplexTensor(re_out, im_out)
    if isinstance(re_out, (list, tuple)):
        return type(re_out)(pair_results(r, i) for r, i in zip(re_out, im_out))
    return re_out


def overloads_of(*ops: Op) -> list[OpOverload]:
    result = []
    for op in ops:
        if isinstance(op, OpOverloadPacket):
            result += [getattr(op, name) for name in op.overloads()]
        else:
            result.append(op)
    return result


def partwise(*ops: Op, values: Sequence[str] = ()) -> None:
    """Register every overload of ``ops`` as a partwise op (see ``make_partwise``), in the
    family of the module that calls it.

    ``values`` names further Scalar arguments that are values of the result
    (``where``'s ``self``/``other``), split into parts like ``value``.
    """
    family = calling_family()
    for overload in overloads_of(*ops):
        register(overload, kind="partwise", family=family)(make_partwise(overload, values))
