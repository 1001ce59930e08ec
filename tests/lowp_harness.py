"""Low-precision complex values for tests: rounding complex64 data to bfloat16/float16 parts, and errors in ulps.

Shared by the OpInfo suite for float16/bfloat16 parts (test_opinfo_lowp.py)
and the tests beyond it (test_lowp.py). The reference of a low-precision
result is the complex64 result on the same rounded inputs, rounded once to the
part dtype (Note [dtype of a ComplexTensor]: computed in float32, rounded once).
"""

from __future__ import annotations

import math

import torch

from torchcx import ComplexTensor, RealView

#: Unit roundoff of each part dtype: half the spacing of the numbers in [1, 2).
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def rounded(t: torch.Tensor, part: torch.dtype) -> torch.Tensor:
    """``t`` (complex64 or float32) with its values rounded to ``part``, in its own dtype."""
    if t.layout != torch.strided:
        return t  # (sparse: ``lowered`` refuses it)
    if t.dtype == torch.complex64:
        pair = torch.view_as_real(t.resolve_conj()).to(part).to(torch.float32)
        return torch.view_as_complex(pair.contiguous())
    if t.dtype == torch.float32:
        return t.to(part).to(torch.float32)
    return t


def lowered(t: torch.Tensor, part: torch.dtype) -> torch.Tensor:
    """``t`` (complex64 or float32) as a tensor of the part dtype: a ComplexTensor for complex values.

    The parts interleave in one buffer, as a native complex tensor's do, so
    the ComplexTensor has the sample's strides (ops on strides see the same).
    """
    if t.layout != torch.strided and t.dtype in (torch.complex64, torch.float32):
        raise NotImplementedError(f"a {t.layout} tensor has no low-precision planar form")
    if t.dtype == torch.complex64:
        pair = torch.view_as_real(t.resolve_conj()).to(part)
        return ComplexTensor(pair[..., 0], pair[..., 1])
    if t.dtype == torch.float32:
        return t.to(part)
    return t


def high(t: torch.Tensor) -> torch.Tensor:
    """A low-precision result as an ordinary tensor that holds its values exactly."""
    if isinstance(t, ComplexTensor):
        t = t.detach()
        return t.to_interleaved(torch.complex128 if t.component_dtype == torch.float64 else torch.complex64)
    if isinstance(t, RealView):
        t = t.materialize().detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.float()
    return t


def pairs(t: torch.Tensor) -> torch.Tensor:
    """Real values as (..., 1), complex ones as (..., 2): the parts to compare."""
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t.unsqueeze(-1)


def error_in_ulps(
    a: torch.Tensor, e: torch.Tensor, part: torch.dtype, normwise: bool, unrounded: torch.Tensor | None = None
) -> float:
    """The largest error of ``a`` against the rounded reference ``e``, in units of u times the scale.

    The scale of an element is its modulus (a complex element's |z|, as
    torch.testing compares complex values), or with ``normwise`` the largest
    modulus of the tensor. Non-finite parts must agree exactly (nan with nan,
    inf with inf of the same sign), or the error is infinite; but where the
    ``unrounded`` complex64 value overflows the part dtype, any non-finite
    result will do (a chain of ops overflows in an intermediate, and then
    inf - inf is nan, in both parts). Values below the part dtype's smallest
    normal number are compared absolutely (their spacing is fixed), and a
    float32 ulp of the scale is allowed beyond u: the reference itself is a
    float32 computation.
    """
    a, e = pairs(a.to(e.dtype)).double(), pairs(e).double()
    if unrounded is not None:
        overflows = (pairs(unrounded).isfinite() & ~e.isfinite()).any(-1, keepdim=True)
        a = torch.where(overflows & ~a.isfinite(), e, a)
    same = (a == e) | (a.isnan() & e.isnan())
    if (~same & (~e.isfinite() | ~a.isfinite())).any():
        return math.inf
    if e.numel() == 0:
        return 0.0
    # the modulus over finite parts: an infinite part does not excuse the other one
    scale = torch.where(e.isfinite(), e, 0.0).pow(2).sum(-1, keepdim=True).sqrt()
    if normwise:
        scale = scale.amax()
    slack = torch.finfo(torch.float32).eps * scale
    error = torch.where(same, 0.0, ((a - e).abs() - slack).clamp_min(0.0))
    return (error / (UNIT_ROUNDOFF[part] * scale.clamp_min(torch.finfo(part).tiny))).max().item()
