"""Arithmetic on the real and imaginary parts of complex values, in one place.

Every op family computes on parts: it splits its operands into parts, multiplies
complex numbers, scales by Python numbers and wraps the resulting parts into a
ComplexTensor. Each of those is written once here (as ``torch._prims_common`` is
the one home of stride predicates), so that a special-value convention is the
same in every family.

A real operand has one of two imaginary parts, each for a reason:

* ``None`` (``split``, the ``Parts`` type): no imaginary part at all, and the
  products skip its terms. Bilinear ops (GEMMs, convolutions) and the FFT in
  real arithmetic compute two real products instead of four.
* ``0.0`` (``parts``, for the pointwise formulas): the zero imaginary part
  torch's promotion to complex gives it, so that a formula treats it exactly
  as eager's complex kernels do (``inf * 0`` is nan, and the sign of zero).

``mul`` takes either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from ..tensor import ComplexTensor, RealView


class CType(NamedTuple):
    """A value type in "part space": the real dtype of the parts, and whether complex.

    (float32, True) is complex64; (bfloat16, True) is complex with bfloat16
    parts, which torch has no dtype for. Promotion in part space is torch's
    promotion applied to the parts, which is what torch does for the complex
    dtypes it has (complex64 x float64 -> complex128, complex32 x float32 ->
    complex64) and extends it to bfloat16 parts.
    """

    real: torch.dtype
    is_complex: bool

    @property
    def is_floating(self) -> bool:
        return self.real.is_floating_point and not self.is_complex

    def promote(self, other: CType | None) -> CType:
        if other is None:
            return self
        return CType(torch.promote_types(self.real, other.real), self.is_complex or other.is_complex)


#: One part: a tensor, or a Python number (a part of a scalar operand).
Part = Tensor | float
#: (re, im) of a complex value; ``im`` None is a real value (see the module docstring).
Parts = tuple[Tensor, Tensor | None]
Number = bool | int | float | complex


# -- splitting -----------------------------------------------------------------------------------


def split(x: Tensor, dtype: torch.dtype) -> Parts:
    """``x`` (ComplexTensor or real tensor) as (re, im) in ``dtype``; a real operand has im None."""
    if isinstance(x, ComplexTensor):
        return x.re.to(dtype), x.im.to(dtype)
    if isinstance(x, RealView):
        return x.materialize().to(dtype), None
    if x.is_complex():
        raise TypeError("torchcx internal error: native complex tensor reached a formula")
    return x.to(dtype), None


def parts(x: Tensor | Number, dtype: torch.dtype) -> tuple[Part, Part]:
    """``x`` (ComplexTensor, real tensor or Python number) as (re, im) in ``dtype`` for a formula.

    A real operand gets a zero imaginary part, as torch's promotion to complex
    does: the formulas then treat it exactly as eager's complex kernels would
    (``inf * 0`` and the sign of zero included). A number stays a number.
    """
    if isinstance(x, Tensor):
        re, im = split(x, dtype)
        return re, 0.0 if im is None else im
    return number_parts(x)


def number_parts(x: Number) -> tuple[float, float]:
    """A Python number as (re, im): a real one with a zero imaginary part (torch's promotion)."""
    if isinstance(x, complex):
        return x.real, x.imag
    return x, 0.0


# -- the complex product and scaling ---------------------------------------------------------------


def mul(ar: Part, ai: Part | None, br: Part, bi: Part | None) -> tuple[Part, Part | None]:
    """(ar + i ai)(br + i bi) = (ar br - ai bi) + i (ar bi + ai br).

    The textbook product, as eager's ``c10::complex`` operator* and NumPy
    compute it, so that inf and nan come out the same (no C99 Annex G
    recovery of infinities: ``pointwise._mul_c99`` has that). An imaginary
    part None is a real operand: its terms are left out, not multiplied by
    zero (pass 0.0 for eager's promotion, where ``inf * 0`` must be nan).
    """
    if ai is None and bi is None:
        return ar * br, None
    if ai is None:
        return ar * br, ar * bi
    if bi is None:
        return ar * br, ai * br
    return ar * br - ai * bi, ar * bi + ai * br


def scale(s: Number, re: Tensor, im: Tensor | None) -> Parts:
    """``s * (re + i im)`` for a Python number ``s`` (the alpha and beta of addmm & co).

    A real ``s`` scales each part (and 1 is no work); a complex one is the
    complex product. (add and sub promote their ``alpha`` to complex first,
    as eager does: ``mul(*number_parts(alpha), br, bi)``.)
    """
    if isinstance(s, complex):
        return mul(re, im, s.real, s.imag)  # type: ignore[return-value]
    if s == 1:
        return re, im
    return re * s, None if im is None else im * s


# -- wrapping ----------------------------------------------------------------------------------------


def full_part(v: Part, shape: Sequence[int], dtype: torch.dtype, device: torch.device) -> Tensor:
    """``v`` as a tensor of exactly ``shape`` and ``dtype`` that owns its memory."""
    if isinstance(v, Tensor):
        if tuple(v.shape) != tuple(shape):
            v = v.expand(shape).clone()
        return v.to(dtype)
    return torch.full(shape, v, dtype=dtype, device=device)


def wrap(re: Part, im: Part, dtype: torch.dtype, shape: Sequence[int], device: torch.device) -> ComplexTensor:
    """A ComplexTensor of part dtype ``dtype`` and ``shape`` from a formula's parts (numbers broadcast)."""
    return ComplexTensor(full_part(re, shape, dtype, device), full_part(im, shape, dtype, device))


def rounded(re: Tensor, im: Tensor | None, ctype: CType) -> Tensor:
    """A result computed in opmath, rounded once to the value type ``ctype``.

    A real result stays real; a complex one with im None (both operands were
    real) gets a zero imaginary part.
    """
    if not ctype.is_complex:
        return re.to(ctype.real)
    if im is None:
        im = torch.zeros_like(re)
    return ComplexTensor(re.to(ctype.real), im.to(ctype.real))
