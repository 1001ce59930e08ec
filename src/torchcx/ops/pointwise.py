"""Pointwise ops: arithmetic and elementary functions on (re, im) parts.

Each formula states the identity it computes and the hazard it avoids. The
reference semantics are NumPy's complex128 functions (C99 Annex G special
values), which eager PyTorch follows nearly everywhere; binary ops promote a
real operand to complex (zero imaginary part) before applying the complex
formula, exactly as both do, so ``inf * 0`` and signed zeros come out the same.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import (
    Part,
    binary,
    register,
    unary,
    unary_to_real,
    where,
)

aten = torch.ops.aten


# -- arithmetic ------------------------------------------------------------------------


def _mul(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    # (a + ib)(c + id) = (ac - bd) + i(ad + bc): the textbook product, as NumPy
    # and c10::complex compute it (no Annex G inf recovery).
    return ar * br - ai * bi, ar * bi + ai * br


def _div(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    # Smith's algorithm, as NumPy and c10::complex: divide through by the larger
    # of |c|, |d| so that c^2 + d^2 never overflows or underflows.
    abs_br, abs_bi = abs(br), abs(bi)
    re_dominant = abs_br >= abs_bi
    # |c| >= |d|: r = d/c, (a + ib)/(c + id) = ((a + br) + i(b - ar)) / (c + dr)
    rat1 = bi / br
    scl1 = 1.0 / (br + bi * rat1)
    re1, im1 = (ar + ai * rat1) * scl1, (ai - ar * rat1) * scl1
    # |d| > |c|: r = c/d, quotient = ((ar + b) + i(br - a)) / (d + cr)
    rat2 = br / bi
    scl2 = 1.0 / (bi + br * rat2)
    re2, im2 = (ar * rat2 + ai) * scl2, (ai * rat2 - ar) * scl2
    # c = d = 0: a/0 and b/0 give the infinities (or nans) of a real division.
    both_zero = (abs_br == 0) & (abs_bi == 0) if isinstance(abs_br, Tensor) else (abs_br == 0 and abs_bi == 0)
    re0, im0 = ar / abs_br, ai / abs_br
    re = where(both_zero, re0, where(re_dominant, re1, re2))
    im = where(both_zero, im0, where(re_dominant, im1, im2))
    return re, im


def _scale(alpha: complex | float, br: Part, bi: Part) -> tuple[Part, Part]:
    """alpha * (br + i bi) with alpha promoted to complex, as eager's add/sub."""
    if isinstance(alpha, complex):
        return _mul(alpha.real, alpha.imag, br, bi)
    return _mul(alpha, 0.0, br, bi)


@binary(aten.add.Tensor, aten.add.Scalar)
def add_impl(ar: Part, ai: Part, br: Part, bi: Part, *, alpha: complex | float = 1) -> tuple[Part, Part]:
    # a + alpha*b; with alpha = 1 the plain sum (NumPy's; eager multiplies by 1 + 0i first).
    if alpha != 1:
        br, bi = _scale(alpha, br, bi)
    return ar + br, ai + bi


@binary(aten.sub.Tensor, aten.sub.Scalar)
def sub_impl(ar: Part, ai: Part, br: Part, bi: Part, *, alpha: complex | float = 1) -> tuple[Part, Part]:
    if alpha != 1:
        br, bi = _scale(alpha, br, bi)
    return ar - br, ai - bi


@binary(aten.rsub.Tensor, aten.rsub.Scalar)
def rsub_impl(ar: Part, ai: Part, br: Part, bi: Part, *, alpha: complex | float = 1) -> tuple[Part, Part]:
    # rsub(a, b) = b - alpha * a
    if alpha != 1:
        ar, ai = _scale(alpha, ar, ai)
    return br - ar, bi - ai


@binary(aten.mul.Tensor, aten.mul.Scalar)
def mul_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    return _mul(ar, ai, br, bi)


@binary(aten.div.Tensor, aten.div.Scalar)
def div_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    return _div(ar, ai, br, bi)


@register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode_impl(a: object, b: object, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is not None:
        raise RuntimeError(f"div with rounding_mode={rounding_mode!r} is not supported for complex inputs")
    return torch.div(a, b)


@unary(aten.neg)
def neg_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return -re, -im


@unary(aten.positive)
def positive_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return re.clone(), im.clone()


@unary(aten.conj_physical)
def conj_physical_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return re.clone(), -im


@unary(aten.reciprocal)
def reciprocal_impl(re: Tensor, im: Tensor) -> tuple[Part, Part]:
    # 1 / z by Smith's division of (1 + 0i), as eager's c10::complex(1) / z.
    return _div(1.0, 0.0, re, im)


# -- absolute value and phase ------------------------------------------------------------


@unary_to_real(aten.abs)
def abs_impl(re: Tensor, im: Tensor) -> Tensor:
    # |z| = hypot(re, im): no overflow of re^2 + im^2 at 1e30, inf if either is inf.
    return torch.hypot(re, im)


@unary_to_real(aten.angle)
def angle_impl(re: Tensor, im: Tensor) -> Tensor:
    return torch.atan2(im, re)


@unary(aten.sgn)
def sgn_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # z / |z|, and 0 at 0 (eager's convention).
    r = torch.hypot(re, im)
    zero = r == 0
    return torch.where(zero, 0.0, re / r), torch.where(zero, 0.0, im / r)


# -- exponential, logarithm, square root -------------------------------------------------


@unary(aten.exp)
def exp_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # exp(x + iy) = e^x (cos y + i sin y), with C99's special values:
    # y = 0 keeps an exact zero imaginary part (e^x * sin 0 would be nan for
    # x = inf); x = -inf gives a signed zero even for infinite/nan y;
    # x = +inf with infinite/nan y gives (+-inf, nan).
    e = torch.exp(re)
    c, s = torch.cos(im), torch.sin(im)
    out_re = e * c
    out_im = torch.where(im == 0, im, e * s)
    neg_inf = re == -math.inf
    y_bad = ~torch.isfinite(im)
    out_re = torch.where(neg_inf & y_bad, 0.0, out_re)
    out_im = torch.where(neg_inf & y_bad, torch.copysign(torch.zeros_like(im), im), out_im)
    pos_inf = re == math.inf
    out_re = torch.where(pos_inf & y_bad, math.inf, out_re)
    out_im = torch.where(pos_inf & y_bad, math.nan, out_im)
    return out_re, out_im


@unary(aten.log)
def log_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # log z = log|z| + i arg z, with log|z| from hypot (no overflow, log(0) = -inf).
    return torch.log(torch.hypot(re, im)), torch.atan2(im, re)


@unary(aten.sqrt)
def sqrt_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # Kahan's csqrt: t = sqrt((|x| + |z|) / 2); for x >= 0 the root is
    # (t, y / 2t), else (|y| / 2t, copysign(t, y)). Halving before the sqrt
    # keeps |x| + |z| from overflowing at 3e38; the branch cut lies along the
    # negative real axis with sqrt(-4 - 0i) = -2i, as eager's.
    a = torch.abs(re)
    r = torch.hypot(re, im)
    big = r > 1e30 if re.dtype == torch.float32 else r > 1e300
    t = torch.where(big, torch.sqrt(a / 2 + r / 2), torch.sqrt((a + r) / 2))
    # tiny inputs: (a + r) / 2 would underflow to a denormal; rescale by 2^100.
    tiny = (r < 1e-30) & (r > 0)
    scale = 2.0**50
    t = torch.where(tiny, torch.sqrt((a * scale * scale + r * scale * scale) / 2) / scale, t)
    half_y_over_t = im / (2 * t)
    out_re = torch.where(re >= 0, t, torch.abs(half_y_over_t))
    out_im = torch.where(re >= 0, half_y_over_t, torch.copysign(t, im))
    # zero: sqrt(+-0 + i y) with y = 0 is (0, y)
    zero = r == 0
    out_re = torch.where(zero, 0.0, out_re)
    out_im = torch.where(zero, im, out_im)
    # infinities and nans (C99): y = +-inf -> (inf, y); x = -inf -> (nan or 0, +-inf); x = +inf -> (inf, +-0 or nan)
    y_inf = torch.isinf(im)
    x_neg_inf = re == -math.inf
    x_pos_inf = re == math.inf
    out_re = torch.where(x_neg_inf, torch.where(torch.isnan(im), math.nan, 0.0), out_re)
    out_im = torch.where(x_neg_inf, torch.copysign(torch.full_like(im, math.inf), im), out_im)
    out_re = torch.where(x_pos_inf, math.inf, out_re)
    out_im = torch.where(
        x_pos_inf, torch.where(torch.isnan(im), math.nan, torch.copysign(torch.zeros_like(im), im)), out_im
    )
    out_re = torch.where(y_inf, math.inf, out_re)
    out_im = torch.where(y_inf, im, out_im)
    return out_re, out_im


@binary(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar)
def pow_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    # z^w = exp(w log z), with 0^w = 0 (eager's value for any w but 0, where 0^0 = 1).
    if (
        not isinstance(br, Tensor)
        and not isinstance(bi, Tensor)
        and bi == 0
        and float(br).is_integer()
        and abs(br) <= 64
    ):
        return _integer_power(ar, ai, int(br))
    ar, ai, br, bi = torch.broadcast_tensors(*map(torch.as_tensor, (ar, ai, br, bi)))
    lr, li = log_impl(ar, ai)
    out_re, out_im = exp_impl(*_mul(br, bi, lr, li))
    base_zero = (ar == 0) & (ai == 0)
    exp_zero = (br == 0) & (bi == 0)
    out_re = torch.where(base_zero, torch.where(exp_zero, 1.0, 0.0), out_re)
    out_im = torch.where(base_zero, 0.0, out_im)
    return out_re, out_im


def _integer_power(re: Part, im: Part, n: int) -> tuple[Part, Part]:
    # Small integer exponents by repeated squaring (NumPy's npy_cpow does the same),
    # exact where exp(n log z) would round: (1 + 1i)^2 = 2i exactly.
    if n == 0:
        return torch.ones_like(re), torch.zeros_like(im)
    k = abs(n)
    acc = None
    pr, pi = re, im
    while k:
        if k & 1:
            acc = (pr, pi) if acc is None else _mul(*acc, pr, pi)
        k >>= 1
        if k:
            pr, pi = _mul(pr, pi, pr, pi)
    assert acc is not None
    if n < 0:
        return _div(1.0, 0.0, *acc)
    return acc[0] * 1.0, acc[1] * 1.0
