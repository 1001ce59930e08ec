"""Comparison and predicate ops: eq/ne, isclose/allclose/equal, isnan/isinf/isfinite/isreal,
logical ops, nonzero, any/all (truthiness of a complex number: re != 0 or im != 0).

Operands are promoted as torch promotes them (a real operand gets a zero
imaginary part), so ``eq(z, 2)`` compares ``2 + 0i``. Every result is real
(bool, or an index tensor), computed from the parts directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch._ops import OpOverload

from ..tensor import ComplexTensor
from ._common import binary, overloads_of, register, to_complex, unary_to_real
from ._parts import Part

aten = torch.ops.aten


def _truth(re: Part, im: Part) -> Tensor | bool:
    # A complex number is true unless both parts are zero (-0.0 included).
    return (re != 0) | (im != 0)


def truth(x: Any) -> Tensor:
    """``x != 0`` of a ComplexTensor as a bool tensor (a real tensor as it is)."""
    if isinstance(x, ComplexTensor):
        return _truth(x.re, x.im)
    return x


# -- equality ------------------------------------------------------------------------------


@binary(aten.eq.Tensor, aten.eq.Scalar, to_real=True)
def eq_impl(ar: Part, ai: Part, br: Part, bi: Part) -> Tensor:
    # Both parts equal; nan != nan, -0.0 == +0.0 (IEEE, as eager and NumPy).
    return (ar == br) & (ai == bi)


@binary(aten.ne.Tensor, aten.ne.Scalar, to_real=True)
def ne_impl(ar: Part, ai: Part, br: Part, bi: Part) -> Tensor:
    return (ar != br) | (ai != bi)


@register(aten.equal.default)
def equal_impl(a: Any, b: Any) -> bool:
    # Same shape and every element equal (eager's torch.equal; nan is not equal to itself).
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(torch.all(torch.eq(a, b)))


@register(aten.allclose.default)
def allclose_impl(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(torch.all(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


# -- predicates ------------------------------------------------------------------------------


@unary_to_real(aten.isnan)
def isnan_impl(re: Tensor, im: Tensor) -> Tensor:
    return torch.isnan(re) | torch.isnan(im)


@unary_to_real(aten.isinf)
def isinf_impl(re: Tensor, im: Tensor) -> Tensor:
    return torch.isinf(re) | torch.isinf(im)


@unary_to_real(aten.isfinite)
def isfinite_impl(re: Tensor, im: Tensor) -> Tensor:
    return torch.isfinite(re) & torch.isfinite(im)


@unary_to_real(aten.isreal)
def isreal_impl(re: Tensor, im: Tensor) -> Tensor:
    # Imaginary part zero (a nan imaginary part is not real).
    return im == 0


# -- logical ops -------------------------------------------------------------------------------


@unary_to_real(aten.logical_not)
def logical_not_impl(re: Tensor, im: Tensor) -> Tensor:
    return (re == 0) & (im == 0)


@binary(aten.logical_and, to_real=True)
def logical_and_impl(ar: Part, ai: Part, br: Part, bi: Part) -> Tensor:
    return _truth(ar, ai) & _truth(br, bi)


@binary(aten.logical_or, to_real=True)
def logical_or_impl(ar: Part, ai: Part, br: Part, bi: Part) -> Tensor:
    return _truth(ar, ai) | _truth(br, bi)


@binary(aten.logical_xor, to_real=True)
def logical_xor_impl(ar: Part, ai: Part, br: Part, bi: Part) -> Tensor:
    return _truth(ar, ai) ^ _truth(br, bi)


# -- nonzero and truth reductions -----------------------------------------------------------------


@register(aten.nonzero.default)
def nonzero_impl(x: Any) -> Tensor:
    return torch.nonzero(truth(to_complex(x)))


@register(aten.nonzero_static.default)
def nonzero_static_impl(x: Any, *, size: int, fill_value: int = -1) -> Tensor:
    return torch.nonzero_static(truth(to_complex(x)), size=size, fill_value=fill_value)


def _on_truth(op: OpOverload) -> Callable[..., Any]:
    """``op`` (any, all, count_nonzero) applied to the truth values of a ComplexTensor."""

    def impl(x: Any, *args: Any, **kwargs: Any) -> Any:
        return op(truth(to_complex(x)), *args, **kwargs)

    impl.__name__ = impl.__qualname__ = op.overloadpacket.__name__ + "_impl"
    return impl


for _op in overloads_of(aten.any, aten.all, aten.count_nonzero):
    # Tensor overloads (not any(int[]) and friends); out= overloads are derived.
    args = _op._schema.arguments
    if str(args[0].type) == "Tensor" and not any(a.is_out for a in args):
        register(_op)(_on_truth(_op))
