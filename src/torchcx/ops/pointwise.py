"""Pointwise ops: arithmetic and elementary functions on (re, im) parts.

Each formula states the identity it computes and the hazard it avoids. The
reference semantics are NumPy's complex128 functions (C99 Annex G special
values), which eager PyTorch follows nearly everywhere (its CPU kernels call
glibc's ``cexp``, ``casin``, ...): branch cuts, signed zeros, infinities and
nans come out as theirs, and no intermediate overflows or underflows where the
result does not. Binary ops promote a real operand to complex (zero imaginary
part) before applying the complex formula, exactly as both do, so ``inf * 0``
and signed zeros come out the same.

Formulas run on parts in the computation dtype (float32 for float16/bfloat16
parts); every threshold comes from :func:`_limits` of that dtype. They are
functional and branch-free (``torch.where``), so the same code is traced into
real-only graphs by ``torchcx.compile``.

Note [Exact products]
---------------------
Where a result is a small difference of large terms (``x^2 + y^2 - 1`` in
``log`` near the unit circle, ``2x + x^2 + y^2`` in ``log1p``), the squares are
computed exactly as a sum of two floats (Dekker's product with Veltkamp's
split) and summed with Knuth's two-sum, so the difference is accurate to about
``eps^2`` relative to the terms instead of ``eps``.
"""

from __future__ import annotations

import cmath
import functools
import math
import struct
from typing import Any, NamedTuple

import torch
from torch import Tensor

from ..tensor import ComplexTensor
from ._common import (
    CType,
    binary,
    common_device,
    common_shape,
    opmath,
    overloads_of,
    partwise,
    register,
    result_ctype,
    to_complex,
    unary,
    unary_to_real,
    where,
)
from ._parts import Part, mul, number_parts, parts, wrap
from ._registry import c10_type_name, scalar_type_name

aten = torch.ops.aten

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi
_HALF_PI = math.pi / 2
_QUARTER_PI = math.pi / 4


class _Limits(NamedTuple):
    """Floating-point constants of one computation dtype."""

    eps: float  # spacing of 1
    tiny: float  # smallest normal number
    max: float
    digits: int  # significand bits
    exp_cut: float  # e^x * m, |m| <= 1, is reduced by e^exp_cut above this x (overflow-free)
    exp_of_cut: float  # e^exp_cut, a finite number
    splitter: float  # Veltkamp's constant 2^ceil(digits / 2) + 1


@functools.cache
def _limits(dtype: torch.dtype) -> _Limits:
    fi = torch.finfo(dtype)
    digits = round(-math.log2(fi.eps)) + 1
    max_exp = math.frexp(fi.max)[1]
    cut = float(int((max_exp - 1) * _LN2))  # glibc's t: 88 for float32, 709 for float64
    return _Limits(
        eps=fi.eps,
        tiny=fi.tiny,
        max=fi.max,
        digits=digits,
        exp_cut=cut,
        exp_of_cut=math.exp(cut),
        splitter=float(2 ** ((digits + 1) // 2) + 1),
    )


# -- exact arithmetic helpers (Note [Exact products]) ---------------------------------------


def _two_sum(a: Tensor, b: Tensor | float) -> tuple[Tensor, Tensor]:
    # a + b = s + e exactly (Knuth), whatever the magnitudes.
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _square(a: Tensor) -> tuple[Tensor, Tensor]:
    # a^2 = p + e exactly (Dekker): split a into halves whose products are exact.
    p = a * a
    c = a * _limits(a.dtype).splitter
    hi = c - (c - a)
    lo = a - hi
    return p, ((hi * hi - p) + 2 * hi * lo) + lo * lo


def _x2y2m1(a: Tensor, b: Tensor) -> Tensor:
    """a^2 + b^2 - 1 without cancellation, for |a|, |b| < 2 (no overflow in the split)."""
    a2, a2e = _square(a)
    b2, b2e = _square(b)
    s, e1 = _two_sum(a2, -1.0)
    s, e2 = _two_sum(s, b2)
    return s + ((e1 + e2) + (a2e + b2e))


def _log_abs(re: Tensor, im: Tensor) -> Tensor:
    """log|re + i im|: no overflow near the largest float, no lost bits in subnormals,
    and accurate near |z| = 1, where log(hypot) would keep only the rounding error."""
    lim = _limits(re.dtype)
    ax, ay = torch.abs(re), torch.abs(im)
    hi = torch.maximum(ax, ay)
    lo = torch.minimum(ax, ay)
    # Near the unit circle: log|z| = log1p(x^2 + y^2 - 1) / 2, the argument exact.
    near = (hi >= 0.5) & (hi < 2)
    d = _x2y2m1(torch.where(near, hi, 0.0), torch.where(near, lo, 0.0))
    # Elsewhere hypot, rescaled by a power of two when it would overflow or be subnormal.
    huge = hi > lim.max / 2
    small = hi < lim.tiny
    up = 2.0**lim.digits
    scale = torch.where(huge, 0.5, _pick(small, up, 1.0, hi))
    log_scale = torch.where(huge, -_LN2, _pick(small, lim.digits * _LN2, 0.0, hi))
    far = torch.log(torch.hypot(ax * scale, ay * scale)) - log_scale
    return torch.where(near, torch.log1p(d) * 0.5, far)


def _pick(cond: Tensor, a: float, b: float, like: Tensor) -> Tensor:
    """torch.where of two constants in ``like``'s dtype (a bare where would make them float32)."""
    return torch.where(cond, torch.full_like(like, a), b)


def _exp_reduced(x: Tensor) -> tuple[Tensor, Tensor]:
    """(e, k) with e^x = e * k and e finite wherever e^x * m can be finite for |m| <= 1.

    Multiplying e by m before k avoids the spurious overflow of e^x * m when e^x
    overflows but the product does not (x slightly above log(max)).
    """
    lim = _limits(x.dtype)
    big = x > lim.exp_cut
    e = torch.exp(torch.where(big, x - lim.exp_cut, x))  # the subtraction is exact (Sterbenz)
    return e, _pick(big, lim.exp_of_cut, 1.0, x)


# -- arithmetic ------------------------------------------------------------------------


def _add_product(a: Part, x: Part, y: Part) -> Part:
    # a + x y with the sign of zero of a fused multiply-add (eager's kernels are
    # compiled with FMA contraction): for a = 0 and a product that underflows
    # to zero the result keeps the product's sign instead of becoming +0.
    p = x * y
    # A number operand (a divisor's r, a reciprocal's 1 + 0i) decides its term here.
    if (not isinstance(a, Tensor) and a != 0) or any(not isinstance(v, Tensor) and v == 0 for v in (x, y)):
        return a + p  # (a is not zero, or a factor is: nothing underflows into a)
    underflow = p == 0
    for v, term in ((a, a == 0), (x, x != 0), (y, y != 0)):
        if isinstance(v, Tensor):
            underflow = underflow & term
    return where(underflow, p, a + p)


def _div(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    # Smith's algorithm, as NumPy and c10::complex: with p the one of c, d larger in
    # magnitude and q the other, r = q/p and (a + ib)/(c + id) = n / (p + q r), so that
    # c^2 + d^2, which overflows or underflows, is never formed. We divide by p + q r
    # where c10::complex multiplies by its reciprocal: 1/(p + q r) overflows for a
    # subnormal divisor (1e-40j / 1e-40 gave nan; the quotient is 1j), and a division
    # rounds once.
    if not isinstance(br, Tensor) and not isinstance(bi, Tensor):
        if isinstance(ar, Tensor) and isinstance(ai, Tensor) and ar.dtype in _ROUNDED:
            return _div_by_number(ar, ai, br, bi)
        # A number divisor is computed in the dtype of the dividend, as eager's
        # wrapped scalar (and 1/0 is then inf, not a Python ZeroDivisionError).
        like = ar if isinstance(ar, Tensor) else ai
        br, bi = (torch.as_tensor(v, dtype=like.dtype, device=like.device) for v in (br, bi))
    elif not isinstance(bi, Tensor) and isinstance(ar, Tensor) and isinstance(ai, Tensor) and _is_plus_zero(bi):
        return _div_by_real(ar, ai, br)
    abs_br, abs_bi = abs(br), abs(bi)
    re_dominant = abs_br >= abs_bi
    p, q = where(re_dominant, br, bi), where(re_dominant, bi, br)
    rat = q / p
    den = p + q * rat
    # |c| >= |d|: n = (a + b r) + i(b - a r);  |d| > |c|: n = (a r + b) + i(b r - a)
    re = where(re_dominant, _add_product(ar, ai, rat), _add_product(ai, ar, rat)) / den
    im = where(re_dominant, _add_product(ai, -ar, rat), _add_product(-ar, ai, rat)) / den
    # c = d = 0: a/0 and b/0 give the infinities (or nans) of a real division.
    both_zero = (abs_br == 0) & (abs_bi == 0) if isinstance(abs_br, Tensor) else (abs_br == 0 and abs_bi == 0)
    return where(both_zero, ar / abs_br, re), where(both_zero, ai / abs_br, im)


def _float32(v: float) -> float:
    """``v`` rounded to float32 (to nearest, ties to even), as a Python float."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:  # (struct refuses what rounds to infinity)
        return math.copysign(math.inf, v)


#: Rounding of a Python float to each dtype whose arithmetic _div_by_number repeats in Python.
_ROUNDED = {torch.float64: float, torch.float32: _float32}


def _div_by_number(ar: Tensor, ai: Tensor, c: float, d: float) -> tuple[Tensor, Tensor]:
    """_div for a number divisor c + id (``x / 2``, ``x / n``, gradients of both).

    The divisor's steps of Smith's algorithm (which of c, d dominates, r, p + q r, c = d = 0)
    are decided here, in the dividend's dtype, instead of traced as tensor ops on constants:
    they were most of the 79 real nodes a ``x / 2`` lowered to, and Inductor lowers,
    schedules and generates code for every one (issue #14). Each step rounds as the traced
    op did: a float32 sum, product or quotient is the double one rounded to float32 (a
    double carries more than twice float32's digits, so rounding twice is exact), and a
    product with r is the same float32 product whether r is a 0-dim tensor or a number.
    """
    rounded = _ROUNDED[ar.dtype]
    c, d = rounded(float(c)), rounded(float(d))
    if c == 0 and d == 0:
        return ar / 0.0, ai / 0.0  # the infinities (or nans) of a real division
    re_dominant = abs(c) >= abs(d)  # (False for a nan c: as the traced where)
    p, q = (c, d) if re_dominant else (d, c)
    rat = rounded(q / p) if p != 0 else math.nan  # (p = 0 only for c = nan, d = 0: nan / 0)
    den = rounded(p + rounded(q * rat))
    if re_dominant:  # n = (a + b r) + i(b - a r)
        return _add_product(ar, ai, rat) / den, _add_product(ai, -ar, rat) / den
    return _add_product(ai, ar, rat) / den, _add_product(-ar, ai, rat) / den  # n = (a r + b) + i(b r - a)


def _is_plus_zero(v: float) -> bool:
    return v == 0 and math.copysign(1.0, v) > 0


def _div_by_real(ar: Tensor, ai: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """_div for a real tensor divisor c (its imaginary part the +0 of torch's promotion):
    ``z / z.abs()``, ``x / norm``. Smith's steps with d = +0 known: c dominates unless it
    is nan, r = +0/c (a zero with the sign of c, nan for c = 0 or nan), p + q r = c, and
    no product with r underflows; the same values as the general formula, from two
    fifths of its nodes (30 of 76 for ``x / r``)."""
    rat = c.new_zeros(()) / c
    re, im = (ar + ai * rat) / c, (ai - ar * rat) / c
    zero = c == 0  # a/0 and b/0 give the infinities (or nans) of a real division
    return where(zero, ar / abs(c), re), where(zero, ai / abs(c), im)


def _times_alpha(alpha: complex | float, br: Part, bi: Part) -> tuple[Part, Part]:
    """alpha * (br + i bi) with alpha promoted to complex, as eager's add/sub (inf * 0 = nan
    included: unlike ``_parts.scale``, a real alpha multiplies as alpha + 0i)."""
    return mul(*number_parts(alpha), br, bi)  # type: ignore[return-value]


@binary(aten.add.Tensor, aten.add.Scalar)
def add_impl(ar: Part, ai: Part, br: Part, bi: Part, *, alpha: complex | float = 1) -> tuple[Part, Part]:
    # a + alpha*b; with alpha = 1 the plain sum (NumPy's; eager multiplies by 1 + 0i first).
    if alpha != 1:
        br, bi = _times_alpha(alpha, br, bi)
    return ar + br, ai + bi


def _sub(ar: Part, ai: Part, br: Part, bi: Part, alpha: complex | float) -> tuple[Part, Part]:
    if alpha != 1:
        br, bi = _times_alpha(alpha, br, bi)
    return ar - br, ai - bi


def _refuse_bool(a: Any, b: Any) -> None:
    # Eager's sub_check: subtracting a bool (tensor or number) is an error, not a - 0/1.
    if any(isinstance(x, bool) or (isinstance(x, Tensor) and x.dtype == torch.bool) for x in (a, b)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _subtract(a: Any, b: Any, alpha: complex | float) -> Tensor:
    """a - alpha b for operands of any kind, promoted as torch promotes them."""
    _refuse_bool(a, b)
    ctype = result_ctype(a, b)
    compute = opmath(ctype.real)
    re, im = _sub(*parts(a, compute), *parts(b, compute), alpha)
    return wrap(re, im, ctype.real, common_shape(a, b), common_device(a, b))


@register(aten.sub.Tensor, aten.sub.Scalar)
def sub_impl(a: Any, b: Any, *, alpha: complex | float = 1) -> Tensor:
    return _subtract(a, b, alpha)


@register(aten.rsub.Tensor, aten.rsub.Scalar)
def rsub_impl(a: Any, b: Any, *, alpha: complex | float = 1) -> Tensor:
    # rsub(a, b) = b - alpha * a
    return _subtract(b, a, alpha)


@binary(aten.mul.Tensor, aten.mul.Scalar)
def mul_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    return mul(ar, ai, br, bi)


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


@unary(aten.conj_physical, aten._conj_physical)
def conj_physical_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return re.clone(), -im


@unary(aten.reciprocal)
def reciprocal_impl(re: Tensor, im: Tensor) -> tuple[Part, Part]:
    # 1 / z by Smith's division of (1 + 0i), as eager's c10::complex(1) / z.
    return _div(1.0, 0.0, re, im)


@unary(aten.square)
def square_impl(re: Tensor, im: Tensor) -> tuple[Part, Part]:
    # z * z with the textbook product, as eager's pow(z, 2) fast path and NumPy.
    return mul(re, im, re, im)


# -- absolute value and phase ------------------------------------------------------------


@unary_to_real(aten.abs)
def abs_impl(re: Tensor, im: Tensor) -> Tensor:
    # |z| = hypot(re, im): no overflow of re^2 + im^2 at 1e30, inf if either is inf.
    return torch.hypot(re, im)


@unary_to_real(aten.angle)
def angle_impl(re: Tensor, im: Tensor) -> Tensor:
    # arg z = atan2(im, re): +-pi on the negative real axis by the sign of im's zero.
    return torch.atan2(im, re)


@unary(aten.sgn)
def sgn_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # z / |z| part by part (eager divides by the real |z|), and 0 at 0.
    r = torch.hypot(re, im)
    zero = r == 0
    return torch.where(zero, 0.0, re / r), torch.where(zero, 0.0, im / r)


# -- exponential and logarithm -----------------------------------------------------------


def _exp(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # exp(x + iy) = e^x (cos y + i sin y), with e^x reduced so that e^x cos y
    # does not overflow when only e^x would (x just above log(max)).
    e, k = _exp_reduced(re)
    cos, sin = torch.cos(im), torch.sin(im)
    out_re = e * cos * k
    # y = 0 keeps an exact, signed zero (e^x * sin 0 is nan for x = inf).
    out_im = torch.where(im == 0, im, e * sin * k)
    # C99: exp(+-inf + iy) for y = inf or nan is (+-inf, nan), or (+0, +-0) for -inf.
    y_bad = ~torch.isfinite(im)
    neg_inf = (re == -math.inf) & y_bad
    pos_inf = (re == math.inf) & y_bad
    out_re = torch.where(neg_inf, 0.0, torch.where(pos_inf, math.inf, out_re))
    out_im = torch.where(neg_inf, torch.copysign(torch.zeros_like(im), im), torch.where(pos_inf, math.nan, out_im))
    return out_re, out_im


@unary(aten.exp)
def exp_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _exp(re, im)


@unary(aten.exp2)
def exp2_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # 2^z = exp(z ln 2), as eager (ln 2 * z scales both parts) and NumPy.
    return _exp(re * _LN2, im * _LN2)


@unary(aten.expm1)
def expm1_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # exp(z) - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y: no cancellation
    # of e^x cos y against 1 for small |z| (eager's and NumPy's formula, so also
    # their special values). e^x is reduced as in exp, where expm1(x) = e^x.
    lim = _limits(re.dtype)
    e, k = _exp_reduced(re)
    cos = torch.cos(im)
    s = torch.sin(im * 0.5)
    em1_cos = torch.where(re > lim.exp_cut, e * cos * k, torch.expm1(re) * cos)
    return em1_cos - 2 * s * s, e * torch.sin(im) * k


def _log(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # log z = log|z| + i atan2(y, x); log|z| by _log_abs (no overflow, accurate
    # near |z| = 1); atan2 puts the branch cut on the negative real axis with
    # the sign of im's zero choosing +-pi, and gives log(+-0 +- 0i) = -inf + i(0 or +-pi).
    return _log_abs(re, im), torch.atan2(im, re)


@unary(aten.log)
def log_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _log(re, im)


@unary(aten.log2)
def log2_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    lr, li = _log(re, im)
    return lr / _LN2, li / _LN2


@unary(aten.log10)
def log10_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    lr, li = _log(re, im)
    return lr / _LN10, li / _LN10


@unary(aten.log1p)
def log1p_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # log(1 + z) = log1p(2x + x^2 + y^2) / 2 + i atan2(y, 1 + x). Where
    # |1 + z|^2 lies in [1/2, 2) the sum is formed exactly (Note [Exact
    # products]): no loss for tiny |z| (1 + z rounds to 1) or near the circle
    # |1 + z| = 1. Elsewhere log|1 + z|, whose 1 + x rounds harmlessly.
    xp1 = re + 1
    ax, ay = torch.abs(re), torch.abs(im)
    bounded = (ax < 2) & (ay < 2)
    x = torch.where(bounded, re, 0.0)
    y = torch.where(bounded, im, 0.0)
    x2, x2e = _square(x)
    y2, y2e = _square(y)
    s, e1 = _two_sum(2 * x, x2)
    s, e2 = _two_sum(s, y2)
    d = s + ((e1 + e2) + (x2e + y2e))
    near = bounded & (d >= -0.5) & (d < 1)
    out_re = torch.where(near, torch.log1p(d) * 0.5, _log_abs(xp1, im))
    return out_re, torch.atan2(im, xp1)


# -- square root and powers ----------------------------------------------------------------


def _sqrt(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # Kahan's csqrt: t = sqrt((|x| + |z|) / 2) is the larger part of the root,
    # the other is y / 2t (no cancellation). For x > 0 the root is (t, y/2t),
    # else (|y|/2t, copysign(t, y)): the branch cut lies on the negative real
    # axis, sqrt(-4 -+ 0i) = -+2i. Inputs near the largest float are scaled by
    # 1/4 (|z| + |x| would overflow), tiny ones by 2^2k (subnormals lose bits).
    lim = _limits(re.dtype)
    m = torch.maximum(torch.abs(re), torch.abs(im))
    k = (lim.digits + 1) // 2
    huge = m > lim.max / 4
    small = m < 2 * lim.tiny
    s_in = torch.where(huge, 0.25, _pick(small, 2.0 ** (2 * k), 1.0, m))
    s_out = torch.where(huge, 2.0, _pick(small, 2.0**-k, 1.0, m))
    xs, ys = re * s_in, im * s_in
    t = torch.sqrt((torch.hypot(xs, ys) + torch.abs(xs)) * 0.5)
    u = ys / t * (0.5 * s_out)  # y / 2t, scaled back in one rounding
    t = t * s_out
    pos = re > 0
    out_re = torch.where(pos, t, torch.abs(u))
    out_im = torch.where(pos, u, torch.copysign(t, im))
    # sqrt(+-0 +- 0i) = +0 +- 0i; sqrt(x +- inf i) = inf +- inf i, even for x = nan.
    zero = (re == 0) & (im == 0)
    y_inf = torch.isinf(im)
    out_re = torch.where(zero, 0.0, torch.where(y_inf, math.inf, out_re))
    out_im = torch.where(zero | y_inf, im, out_im)
    return out_re, out_im


@unary(aten.sqrt)
def sqrt_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _sqrt(re, im)


@unary(aten.rsqrt)
def rsqrt_impl(re: Tensor, im: Tensor) -> tuple[Part, Part]:
    # 1 / sqrt(z), as eager (Smith's division of 1 by the root).
    return _div(1.0, 0.0, *_sqrt(re, im))


def _inf_unit(v: Tensor) -> Tensor:
    """copysign(isinf(v) ? 1 : 0, v): C99's "box" of an infinite operand."""
    return torch.copysign(torch.isinf(v).to(v.dtype), v)


def _nan_to_zero(v: Tensor, cond: Tensor) -> Tensor:
    """copysign(0, v) where ``cond`` holds and v is nan."""
    return torch.where(cond & torch.isnan(v), torch.copysign(torch.zeros_like(v), v), v)


def _mul_c99(a: Tensor, b: Tensor, c: Part, d: Part) -> tuple[Tensor, Tensor]:
    """(a + ib)(c + id) as C99 Annex G defines it (GCC's __muldc3): the textbook
    product, recomputed when both parts come out nan but an operand is infinite
    (or a partial product overflowed), so that inf * finite is an infinity.
    c + id may be a finite number (a power's constant log): nothing is done to it."""
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    any_inf = ab_inf = torch.isinf(a) | torch.isinf(b)
    a = torch.where(ab_inf, _inf_unit(a), a)
    b = torch.where(ab_inf, _inf_unit(b), b)
    number = not isinstance(c, Tensor)
    if not number:
        cd_inf = torch.isinf(c) | torch.isinf(d)
        c, d = _nan_to_zero(c, ab_inf), _nan_to_zero(d, ab_inf)
        c = torch.where(cd_inf, _inf_unit(c), c)
        d = torch.where(cd_inf, _inf_unit(d), d)
        a, b = _nan_to_zero(a, cd_inf), _nan_to_zero(b, cd_inf)
        any_inf = ab_inf | cd_inf
    big = ~any_inf & (torch.isinf(ac) | torch.isinf(bd) | torch.isinf(ad) | torch.isinf(bc))
    a, b = _nan_to_zero(a, big), _nan_to_zero(b, big)
    if not number:
        c, d = _nan_to_zero(c, big), _nan_to_zero(d, big)
    redo = torch.isnan(x) & torch.isnan(y) & (any_inf | big)
    return (
        torch.where(redo, math.inf * (a * c - b * d), x),
        torch.where(redo, math.inf * (a * d + b * c), y),
    )


def _cpow(ar: Tensor, ai: Tensor, br: Tensor, bi: Tensor) -> tuple[Tensor, Tensor]:
    # z^w = exp(w log z): glibc's cpow, which eager calls, with its C99 product
    # (so (inf + nan i)^w is inf + nan i, not nan). log is accurate near |z| = 1
    # and exp reduced, so z^w overflows only when it does. (float32's log in float64:
    # _exp_of_product.)
    if ar.dtype == torch.float32:
        ar, ai = ar.double(), ai.double()
    return _exp_of_product(br, bi, *_log(ar, ai))


def _exp_of_product(br: Tensor, bi: Tensor, lr: Part, li: Part) -> tuple[Tensor, Tensor]:
    """exp(w L) with C99's product, L = log z (tensors, or numbers for a number z; float64
    for a float32 w)."""
    if br.dtype != torch.float32:
        return _exp(*_mul_c99(br, bi, lr, li))
    # exp multiplies the error of w log z by |w log z|, up to 1e30 on the grid, where
    # eager's cpowf rounds log z and the product to float32:
    # - The angle Im(w log z) is float32's, from a correctly rounded log z, as eager's:
    #   where it is huge its rounding alone decides the signs of the result, and where
    #   it is pi (0 - 1e20i)^-2 has eager's zero sign. (Sleef's vectorized atan2f, in
    #   Inductor's kernels, is 1 ulp off at arg(1 + 1i): it turned the signs of
    #   (1e30 + 1e30i)^1e30.)
    # - The modulus exp(Re(w log z)) is float64's: in float32 the rounding of log|z|
    #   alone is 17 ulps of (1e30 + 1e30i)^(0.5 + 0.5i), eager's 16-ulp bound.
    # exp and sin/cos in float64, rounded once.
    lr32, li32 = (v.float() if isinstance(v, Tensor) else _float32(v) for v in (lr, li))
    mr32, mi = _mul_c99(br, bi, lr32, li32)
    # (Where the float32 product is finite, C99's product is the textbook one.)
    mr = torch.where(torch.isfinite(mr32), br.double() * lr - bi.double() * li, mr32.double())
    out_re, out_im = _exp(mr, mi.double())
    return out_re.float(), out_im.float()


def _cpow_of_number(a: float, b: float, br: Tensor, bi: Tensor) -> tuple[Tensor, Tensor] | None:
    """_cpow for a number base a + ib (``2 ** z``, ldexp's power of 2) with a finite, nonzero
    log: log z is a constant, computed here (glibc's clog, which eager's cpow calls, and
    CPython's cmath.log are both accurate to an ulp) instead of traced as the log of a
    tensor filled with z, most of the 233 real nodes of ``2 ** z`` (issue #14). The base is
    first rounded to the exponent's dtype, as eager wraps it. None where log z is not finite
    (z = 0, infinite or nan): the general formula's special values decide."""
    rounded = _ROUNDED.get(br.dtype)
    if rounded is None:
        return None
    a, b = rounded(float(a)), rounded(float(b))
    if not (math.isfinite(a) and math.isfinite(b)) or (a == 0 and b == 0):
        return None
    log_z = cmath.log(complex(a, b))  # (atan2's branch: the sign of a zero b chooses +-pi)
    return _exp_of_product(br, bi, log_z.real, log_z.imag)


def _tensors(*xs: Part) -> list[Tensor]:
    """Parts as tensors of one shape, numbers in the dtype of the tensors among them."""
    like = next(x for x in xs if isinstance(x, Tensor))
    return torch.broadcast_tensors(*(x if isinstance(x, Tensor) else torch.full_like(like, x) for x in xs))


def _is_number(x: Part) -> bool:
    return not isinstance(x, Tensor)


@binary(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar)
def pow_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Part, Part]:
    if _is_number(br) and _is_number(bi) and bi == 0:
        # A number exponent: eager's fast paths (pow_tensor_scalar_optimized_kernel),
        # which are exact where exp(w log z) would round: (1 + 1i)^2 = 2i.
        n = float(br)
        ar, ai = _tensors(ar, ai)
        if n == 0:
            return torch.ones_like(ar), torch.zeros_like(ai)
        if n == 1:
            return ar.clone(), ai.clone()
        if n == 0.5:
            return _sqrt(ar, ai)
        if n == -0.5:
            return _div(1.0, 0.0, *_sqrt(ar, ai))
        if n == -1:
            return _div(1.0, 0.0, ar, ai)
        if n in (2, 3, -2):
            sr, si = mul(ar, ai, ar, ai)
            if n == 3:
                return mul(sr, si, ar, ai)
            if n == -2:
                return _div(1.0, 0.0, sr, si)
            return sr, si
    if _is_number(ar) and _is_number(ai) and ar == 1 and ai == 0:
        # 1^w = 1 for every w (eager fills), even where exp(w log 1) is nan.
        br, bi = _tensors(br, bi)
        return torch.ones_like(br), torch.zeros_like(bi)
    if _is_number(ar) and _is_number(ai):
        # (_tensors: an exponent with a number part, a real tensor's +0, is filled out)
        power = _cpow_of_number(ar, ai, *_tensors(br, bi))
        if power is not None:
            return power
    return _cpow(*_tensors(ar, ai, br, bi))


# -- trigonometric and hyperbolic functions ---------------------------------------------------


def _sinh_cosh_times(x: Tensor, c: Tensor, s: Tensor) -> tuple[Tensor, Tensor]:
    # (sinh x * c, cosh x * s) for |c|, |s| <= 1. For |x| > exp_cut, sinh x and
    # cosh x are +-e^|x| / 2, reduced as in exp: the products overflow only
    # when they do, not when e^|x| alone would.
    lim = _limits(x.dtype)
    ax = torch.abs(x)
    big = ax > lim.exp_cut
    e = torch.exp(torch.where(big, ax - lim.exp_cut, 0.0))
    half_k = lim.exp_of_cut / 2
    sign = _pick(x < 0, -1.0, 1.0, x)
    return (
        torch.where(big, (sign * c * half_k) * e, torch.sinh(x) * c),
        torch.where(big, (s * half_k) * e, torch.cosh(x) * s),
    )


def _sinh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # sinh(x + iy) = sinh x cos y + i cosh x sin y.
    out_re, out_im = _sinh_cosh_times(x, torch.cos(y), torch.sin(y))
    # y = 0 keeps its signed zero (cosh x * 0 is nan for x = inf, nan).
    out_im = torch.where(y == 0, y, out_im)
    # C99: sinh(+-0 + i(inf or nan)) = (+-0, nan); sinh(+-inf + i(inf or nan)) = (inf, nan).
    y_bad = ~torch.isfinite(y)
    out_re = torch.where(y_bad & (x == 0), x, torch.where(y_bad & torch.isinf(x), math.inf, out_re))
    return out_re, out_im


def _cosh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # cosh(x + iy) = cosh x cos y + i sinh x sin y.
    out_im, out_re = _sinh_cosh_times(x, torch.sin(y), torch.cos(y))
    # y = 0: the imaginary part is a zero signed as x * y (as y for x = nan).
    x_nan = torch.isnan(x)
    out_im = torch.where(y == 0, torch.where(x_nan, y, torch.copysign(torch.ones_like(x), x) * y), out_im)
    # C99: cosh(+-0 + i(inf or nan)) = (nan, +0); cosh(+-inf + i(inf or nan)) = (inf, nan).
    y_bad = ~torch.isfinite(y)
    out_im = torch.where(y_bad & (x == 0), 0.0, out_im)
    out_re = torch.where(y_bad & torch.isinf(x), math.inf, out_re)
    return out_re, out_im


@unary(aten.sinh)
def sinh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _sinh(re, im)


@unary(aten.cosh)
def cosh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _cosh(re, im)


@unary(aten.sin)
def sin_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # sin z = -i sinh(iz), iz = -y + ix (C99's definition); glibc's csin makes
    # the imaginary part +inf, not -inf, for y = +-inf and x infinite or nan.
    a, b = _sinh(-im, re)
    return b, torch.where(torch.isinf(im) & ~torch.isfinite(re), math.inf, -a)


@unary(aten.cos)
def cos_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # cos z = cosh(iz), iz = -y + ix.
    return _cosh(-im, re)


def _tanh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y):
    # no cancellation, unlike (sinh 2x + i sin 2y) / (cosh 2x + cos 2y). For
    # |x| > exp_cut/2 the squares would overflow: tanh is then +-1 + i 4 sin y
    # cos y e^(-2|x|), the exponential split in two so it underflows gradually.
    lim = _limits(x.dtype)
    cut = float(int(lim.exp_cut / 2))
    ax = torch.abs(x)
    big = ax > cut
    cos, sin = torch.cos(y), torch.sin(y)
    xs = torch.where(big, 0.0, x)
    sh, ch = torch.sinh(xs), torch.cosh(xs)
    den = sh * sh + cos * cos
    sc = sin * cos
    big_im = (4 * sc) / math.exp(2 * cut) / torch.exp(2 * torch.clamp_max(ax - cut, cut))
    one = torch.copysign(torch.ones_like(x), x)
    out_re = torch.where(big, one, sh * ch / den)
    out_im = torch.where(big, big_im, sc / den)
    # C99: tanh(+-inf + iy) = +-1 + i0 signed as sin 2y (as y for |y| <= 1 or non-finite y);
    # tanh(x + i(inf or nan)) = (x or nan, nan) for x = 0 or not; tanh(nan +- 0i) = nan +- 0i.
    x_inf = torch.isinf(x)
    y_bad = ~torch.isfinite(y)
    zero_im = torch.copysign(torch.zeros_like(y), torch.where(y_bad | (torch.abs(y) <= 1), y, sc))
    out_im = torch.where(x_inf, zero_im, torch.where(torch.isnan(x) & (y == 0), y, out_im))
    out_re = torch.where(~x_inf & y_bad, torch.where(x == 0, x, math.nan), out_re)
    out_im = torch.where(~x_inf & y_bad, math.nan, out_im)
    return out_re, out_im


@unary(aten.tanh)
def tanh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _tanh(re, im)


@unary(aten.tan)
def tan_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # tan z = -i tanh(iz), iz = -y + ix.
    a, b = _tanh(-im, re)
    return b, -a


# -- inverse trigonometric and hyperbolic functions -----------------------------------------


def _asin_kernel(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Hull, Fairgrieve and Tang's complex arcsine, for finite x, y >= 0.

    Returns (Re asin z, Re acos z, |Im asin z|) = (asin B, acos B,
    log(A + sqrt(A^2 - 1))) with A = (|z + 1| + |z - 1|) / 2, B = x / A, each
    evaluated in the form without cancellation for its region ("Implementing
    the complex arcsine and arccosine functions using exception handling",
    ACM TOMS 23(3), 1997). Every region is computed and the right one selected.
    """
    lim = _limits(x.dtype)
    eps = lim.eps
    safe_max = math.sqrt(lim.max) / 8
    safe_min = math.sqrt(lim.tiny) * 4
    xm1 = x - 1
    # -- the safe region: no overflow or underflow in the squares below.
    safe = (x < safe_max) & (x > safe_min) & (y < safe_max) & (y > safe_min)
    xs = torch.where(safe, x, 1.0)
    ys = torch.where(safe, y, 1.0)
    sxp1, sxm1 = xs + 1, xs - 1
    yy = ys * ys
    r = torch.hypot(sxp1, ys)  # |z + 1|
    s = torch.hypot(sxm1, ys)  # |z - 1|
    a = 0.5 * (r + s)
    b = xs / a
    apx = a + xs
    le1 = xs <= 1
    # B close to 1: asin B and acos B lose accuracy; use atan of a cancellation-free ratio.
    q = torch.where(
        le1,
        torch.sqrt(0.5 * apx * (yy / (r + sxp1) + (s - sxm1))),
        ys * torch.sqrt(0.5 * (apx / (r + sxp1) + apx / (s + sxm1))),
    )
    b_small = b <= 0.6417
    asin_re = torch.where(b_small, torch.asin(b), torch.atan2(xs, q))
    acos_re = torch.where(b_small, torch.acos(b), torch.atan2(q, xs))
    # A close to 1: log(A + sqrt(A^2 - 1)) = log1p(Am1 + sqrt(Am1 (A + 1))), Am1 = A - 1 exactly-ish.
    am1 = 0.5 * (yy / (r + sxp1) + torch.where(xs < 1, yy / (s - sxm1), s + sxm1))
    im_safe = torch.where(
        a <= 1.5,
        torch.log1p(am1 + torch.sqrt(am1 * (a + 1))),
        torch.log(a + torch.sqrt((a - 1) * (a + 1))),
    )
    # -- outside it (Hull et al.'s exception handling), in their order of tests:
    # 1. close to the real axis, y <= eps |x - 1|
    on_axis = y <= eps * torch.abs(xm1)
    inside = x < 1
    xa = torch.where(inside, x, 0.0)
    xb = torch.where(inside, 1.0, x)
    xb_m1 = xb - 1
    no_overflow = xb_m1 < lim.max / (xb + 1)
    im1 = torch.where(
        inside,
        y / torch.sqrt((1 + xa) * (1 - xa)),
        torch.where(
            no_overflow,
            torch.log1p(xb_m1 + torch.sqrt(torch.where(no_overflow, (xb + 1) * xb_m1, 0.0))),
            _LN2 + torch.log(xb),
        ),
    )
    asin1 = torch.where(inside, torch.asin(xa), _HALF_PI)
    # Re acos for x >= 1 is y / sqrt(x^2 - 1) (~ y / x when that overflows), not 0.
    acos_out = torch.where(no_overflow, torch.sqrt(torch.where(no_overflow, (xb + 1) * xb_m1, 1.0)), xb)
    acos1 = torch.where(inside, torch.acos(xa), torch.where(y == 0, 0.0, y / acos_out))
    # 2. tiny y (then x = 1): asin = pi/2 - sqrt(y) + i sqrt(y)
    tiny_y = y <= safe_min
    sy = torch.sqrt(y)
    # 3. y much larger than x: asin ~ x/y + i log(2y)
    y_huge = eps * y - 1 >= x
    log2y = _LN2 + torch.log(y)
    # 4. x > 1 (and large): asin = atan(x/y) + i (log 2y + log1p((x/y)^2)/2)
    xoy = x / y
    im4 = log2y + 0.5 * torch.log1p(xoy * xoy)
    # 5. otherwise (x <= 1, y moderate or x tiny): asin = x/sqrt(1 + y^2) + i asinh y
    y5 = torch.where(y_huge, 1.0, y)
    a5 = torch.sqrt(1 + y5 * y5)
    im5 = 0.5 * torch.log1p(2 * y5 * (y5 + a5))
    big_x = x > 1
    asin_u = torch.where(
        on_axis,
        asin1,
        torch.where(
            tiny_y,
            _HALF_PI - sy,
            torch.where(y_huge, xoy, torch.where(big_x, torch.atan2(x, y), x / a5)),
        ),
    )
    acos_u = torch.where(
        on_axis,
        acos1,
        torch.where(tiny_y, sy, torch.where(y_huge, _HALF_PI, torch.where(big_x, torch.atan2(y, x), _HALF_PI))),
    )
    im_u = torch.where(on_axis, im1, torch.where(tiny_y, sy, torch.where(y_huge, log2y, torch.where(big_x, im4, im5))))
    return (
        torch.where(safe, asin_re, asin_u),
        torch.where(safe, acos_re, acos_u),
        torch.where(safe, im_safe, im_u),
    )


def _kernel_parts(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(finite, |x|, |y|) with non-finite elements zeroed (the kernel never sees them)."""
    finite = torch.isfinite(x) & torch.isfinite(y)
    return finite, torch.where(finite, torch.abs(x), 0.0), torch.where(finite, torch.abs(y), 0.0)


def _asinh_nonfinite(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # C99 special values (glibc's casinh), where x or y is inf or nan: y = +-inf:
    # (+-inf, +-pi/2, or +-pi/4 for infinite x, nan for nan x); else x = +-inf or
    # nan: (x, +-0 for infinite x and non-nan y or nan x and zero y, else nan);
    # else (y nan): (nan, nan).
    x_inf, y_inf = torch.isinf(x), torch.isinf(y)
    x_nan, y_nan = torch.isnan(x), torch.isnan(y)
    x_bad = x_inf | x_nan
    re_inf_y = torch.copysign(torch.full_like(x, math.inf), x)
    im_inf_y = torch.where(x_nan, math.nan, torch.copysign(_pick(x_inf, _QUARTER_PI, _HALF_PI, y), y))
    im_bad_x = torch.where((x_inf & ~y_nan) | (x_nan & (y == 0)), torch.copysign(torch.zeros_like(y), y), math.nan)
    out_re = torch.where(y_inf, re_inf_y, torch.where(x_bad, x, math.nan))
    out_im = torch.where(y_inf, im_inf_y, torch.where(x_bad, im_bad_x, math.nan))
    return out_re, out_im


def _asin_nonfinite(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # asin z = -i asinh(iz), iz = -y + ix; glibc's casin, except that a nan part
    # gives (x, nan) for x = 0 and (nan, +-inf) when the other part is infinite.
    a, b = _asinh_nonfinite(-y, x)
    any_nan = torch.isnan(x) | torch.isnan(y)
    any_inf = torch.isinf(x) | torch.isinf(y)
    nan_re = torch.where(x == 0, x, math.nan)
    nan_im = torch.where(x == 0, y, torch.where(any_inf, torch.copysign(torch.full_like(y, math.inf), y), math.nan))
    return torch.where(any_nan, nan_re, b), torch.where(any_nan, nan_im, -a)


def _asinh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # asinh z = i asin(-i z): in the first quadrant asinh(x + iy) =
    # Im asin(y + ix) + i Re asin(y + ix). Odd in x and in y (C99).
    finite, kx, ky = _kernel_parts(x, y)
    asin_re, _, asin_im = _asin_kernel(ky, kx)
    sr, si = _asinh_nonfinite(x, y)
    return torch.where(finite, torch.copysign(asin_im, x), sr), torch.where(finite, torch.copysign(asin_re, y), si)


@unary(aten.asinh)
def asinh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _asinh(re, im)


@unary(aten.asin)
def asin_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # Odd in x and in y (C99): the first-quadrant kernel with the signs of z.
    finite, kx, ky = _kernel_parts(re, im)
    asin_re, _, asin_im = _asin_kernel(kx, ky)
    sr, si = _asin_nonfinite(re, im)
    return torch.where(finite, torch.copysign(asin_re, re), sr), torch.where(finite, torch.copysign(asin_im, im), si)


def _acos(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # acos z = pi/2 - asin z, computed directly by the arcsine kernel for finite
    # z: Re acos z = acos B (or its atan form) on the right half-plane, pi minus
    # that on the left; Im acos z = -Im asin z. Conjugate-symmetric (C99).
    finite, kx, ky = _kernel_parts(x, y)
    _, acos_re, asin_im = _asin_kernel(kx, ky)
    out_re = torch.where(x < 0, _PI - acos_re, acos_re)
    out_im = -torch.copysign(asin_im, y)
    # Non-finite z (glibc's cacos): pi/2 - asin z, with a +0 real part for a zero.
    ar, ai = _asin_nonfinite(x, y)
    sr = _HALF_PI - ar
    sr = torch.where(sr == 0, 0.0, sr)
    return torch.where(finite, out_re, sr), torch.where(finite, out_im, -ai)


@unary(aten.acos)
def acos_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _acos(re, im)


@unary(aten.acosh)
def acosh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # acosh z = +-i acos z, the sign making Re acosh z >= 0: (|Im acos z|, copysign(Re acos z, y)).
    ar, ai = _acos(re, im)
    out_re = torch.abs(ai)
    out_im = torch.copysign(ar, im)
    # C99 special values (glibc's cacosh) where acos z has a nan part.
    x_inf, y_inf = torch.isinf(re), torch.isinf(im)
    x_nan, y_nan = torch.isnan(re), torch.isnan(im)
    out_re = torch.where(y_inf | x_inf, math.inf, torch.where(x_nan | y_nan, math.nan, out_re))
    im_y_inf = torch.where(
        x_nan,
        math.nan,
        torch.copysign(torch.where(x_inf, _pick(re < 0, 3 * _QUARTER_PI, _QUARTER_PI, re), _HALF_PI), im),
    )
    im_x_inf = torch.where(y_nan, math.nan, torch.copysign(_pick(re < 0, _PI, 0.0, re), im))
    im_nan = _pick(re == 0, _HALF_PI, math.nan, re)
    out_im = torch.where(y_inf, im_y_inf, torch.where(x_inf, im_x_inf, torch.where(x_nan | y_nan, im_nan, out_im)))
    return out_re, out_im


def _atanh(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    # atanh z = log((1 + z) / (1 - z)) / 2, in parts (glibc's catanh):
    #   Re = log(((1 + x)^2 + y^2) / ((1 - x)^2 + y^2)) / 4, as log1p(4x / den) / 4
    #        where the ratio is near 1 (no cancellation in log);
    #   Im = atan2(2y, (1 - x)(1 + x) - y^2) / 2, the denominator formed exactly
    #        near the unit circle (Note [Exact products]).
    # Far from the origin (|z| >= 16/eps) Re ~ x/|z|^2, Im ~ +-pi/2, formed
    # without squaring |z|.
    lim = _limits(x.dtype)
    eps = lim.eps
    ax, ay = torch.abs(x), torch.abs(y)
    far = (ax >= 16 / eps) | (ay >= 16 / eps)
    h = torch.hypot(x * 0.5, y * 0.5)
    far_re = torch.where(ay <= 1, 1 / x, torch.where(ax <= 1, x / y / y, x / h / h / 4))
    far_im = torch.copysign(torch.full_like(y, _HALF_PI), y)
    xn = torch.where(far, 0.0, x)
    yn = torch.where(far, 0.0, y)
    axn, ayn = torch.abs(xn), torch.abs(yn)
    i2 = yn * yn
    num = (1 + xn) * (1 + xn) + i2
    den = (1 - xn) * (1 - xn) + i2
    f = num / den
    re_log = torch.where(f < 0.5, 0.25 * torch.log(f), 0.25 * torch.log1p(4 * xn / den))
    # x = +-1 with y below eps^2: den = y^2 may underflow; Re = (ln 2 - log|y|) / 2.
    at_one = (axn == 1) & (ayn < eps * eps)
    re_one = torch.copysign(torch.full_like(x, 0.5), xn) * (_LN2 - torch.log(ayn))
    near_re = torch.where(at_one, re_one, re_log)
    hi = torch.maximum(axn, ayn)
    lo = torch.minimum(axn, ayn)
    one_m = (1 - hi) * (1 + hi)
    plain = one_m - lo * lo
    circle = (hi < 1) & ((hi >= 0.75) | (lo >= 0.5))
    exact = -_x2y2m1(torch.where(circle, hi, 0.0), torch.where(circle, lo, 0.0))
    dd = torch.where(lo < eps / 2, one_m, torch.where(circle, exact, plain))
    near_im = 0.5 * torch.atan2(2 * yn, dd)
    out_re = torch.where(far, far_re, near_re)
    out_im = torch.where(far, far_im, near_im)
    # Special values (C99 / glibc): y = +-inf: (+-0, +-pi/2); x = +-inf or 0 with
    # the other part non-finite or x infinite: (+-0, +-pi/2 or nan); atanh(+-0 +- 0i) = z;
    # any other nan: (nan, nan).
    x_inf, y_inf = torch.isinf(x), torch.isinf(y)
    y_nan = torch.isnan(y)
    bad = ~(torch.isfinite(x) & torch.isfinite(y))
    signed_zero = torch.copysign(torch.zeros_like(x), x)
    zero_x = (x_inf | (x == 0)) & ~y_inf
    out_re = torch.where(bad, torch.where(y_inf | zero_x, signed_zero, math.nan), out_re)
    bad_im = torch.where(y_inf | (zero_x & ~y_nan), far_im, math.nan)
    out_im = torch.where(bad, bad_im, out_im)
    both_zero = (x == 0) & (y == 0)
    return torch.where(both_zero, x, out_re), torch.where(both_zero, y, out_im)


@unary(aten.atanh)
def atanh_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _atanh(re, im)


@unary(aten.atan)
def atan_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # atan z = -i atanh(iz), iz = -y + ix.
    a, b = _atanh(-im, re)
    return b, -a


# -- composite functions -------------------------------------------------------------------


def _overflows_neg_exp(re: Tensor, im: Tensor) -> Tensor:
    # e^-z = inf (cos y - i sin y) has two infinite parts, and 1 / (1 + e^-z) is
    # inf / inf = nan: Re z below -exp_cut and Im z nonzero (on the real axis
    # exp keeps the zero, and eager's formula gives the signed zeros we want).
    return (re < -_limits(re.dtype).exp_cut) & (im != 0)


def _sigmoid(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # 1 / (1 + e^-z), eager's formula, unless e^-z overflows: there
    # e^z / (1 + e^z), so a large negative Re z gives ~e^z, not nan.
    pos = ~_overflows_neg_exp(re, im)
    er, ei = _exp(torch.where(pos, -re, re), torch.where(pos, -im, im))
    nr = torch.where(pos, 1.0, er)
    ni = torch.where(pos, 0.0, ei)
    return _div(nr, ni, 1 + er, ei)


@unary(aten.sigmoid)
def sigmoid_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    return _sigmoid(re, im)


@unary(aten.silu)
def silu_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # z / (1 + e^-z), eager's formula; where e^-z overflows, z (e^z / (1 + e^z)).
    pos = ~_overflows_neg_exp(re, im)
    er, ei = _exp(torch.where(pos, -re, re), torch.where(pos, -im, im))
    qr, qi = _div(torch.where(pos, re, er), torch.where(pos, im, ei), 1 + er, ei)
    nr, ni = mul(re, im, qr, qi)
    return torch.where(pos, qr, nr), torch.where(pos, qi, ni)


@unary(aten.sinc)
def sinc_impl(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    # sin(pi z) / (pi z), and 1 at z = 0 (eager's formula; pi z is the complex
    # product (pi + 0i) z, whose signed zeros and inf * 0 = nan eager shares).
    zr, zi = mul(_PI, 0.0, re, im)
    sr, si = sin_impl(zr, zi)
    qr, qi = _div(sr, si, zr, zi)
    zero = (re == 0) & (im == 0)
    return torch.where(zero, 1.0, qr), torch.where(zero, 0.0, qi)


@binary(aten.logaddexp.default)
def logaddexp_impl(ar: Part, ai: Part, br: Part, bi: Part) -> tuple[Tensor, Tensor]:
    # log(e^a + e^b) = max + log1p(e^(min - max)), min/max by real part (ties:
    # min is b, as eager): the exponential never overflows. Eager's special
    # cases: a nan in the smaller operand gives nan; real parts both -inf give
    # the smaller operand, both +inf log(e^a + e^b) (min - max would be nan).
    ar, ai, br, bi = _tensors(ar, ai, br, bi)
    a_min = ar < br
    mr, mi = torch.where(a_min, ar, br), torch.where(a_min, ai, bi)
    xr, xi = torch.where(a_min, br, ar), torch.where(a_min, bi, ai)
    lr, li = log1p_impl(*_exp(mr - xr, mi - xi))
    inf_same = torch.isinf(mr) & (mr == xr)
    e1r, e1i = _exp(mr, mi)
    e2r, e2i = _exp(xr, xi)
    sr, si = _log(e1r + e2r, e1i + e2i)
    out_re = torch.where(inf_same, torch.where(mr < 0, mr, sr), lr + xr)
    out_im = torch.where(inf_same, torch.where(mr < 0, mi, si), li + xi)
    nan = torch.isnan(mr) | torch.isnan(mi)
    return torch.where(nan, math.nan, out_re), torch.where(nan, math.nan, out_im)


@register(aten.lerp.Scalar, aten.lerp.Tensor)
def lerp_impl(start: Any, end: Any, weight: Any) -> Tensor:
    # start + w (end - start) for |w| < 1/2, else end + (w - 1)(end - start):
    # eager's (vectorized) form, exact at both ends (w = 0 and w = 1); w - 1
    # is the complex (wr - 1) + (wi - 0)i, so signed zeros come out the same.
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x.dtype != start.dtype:  # eager's check: no promotion
            raise RuntimeError(
                f"expected dtype {c10_type_name(start.dtype)} for `{name}` but got dtype {c10_type_name(x.dtype)}"
            )
    ctype = result_ctype(start, end)
    compute = opmath(ctype.real)
    sr, si = parts(start, compute)
    er, ei = parts(end, compute)
    wr, wi = parts(weight, compute)
    dr, di = er - sr, ei - si
    ar, ai = mul(wr, wi, dr, di)
    br, bi = mul(wr - 1, wi - 0.0, dr, di)
    if isinstance(wr, Tensor):
        small = torch.hypot(wr, torch.as_tensor(wi, dtype=wr.dtype)) < 0.5
        out_re = torch.where(small, sr + ar, er + br)
        out_im = torch.where(small, si + ai, ei + bi)
    elif abs(complex(wr, wi)) < 0.5:
        out_re, out_im = sr + ar, si + ai
    else:
        out_re, out_im = er + br, ei + bi
    shape = common_shape(start, end, weight)
    return wrap(out_re, out_im, ctype.real, shape, common_device(start, end, weight))


@register(aten.ldexp.Tensor)
def ldexp_impl(x: Any, e: Any) -> Tensor:
    # x * 2^e, as eager computes it (a complex power of 2, then the product).
    return torch.mul(x, torch.pow(2.0, to_complex(e) if isinstance(e, Tensor) and e.is_complex() else e))


@register(aten.float_power.Tensor_Tensor, aten.float_power.Tensor_Scalar, aten.float_power.Scalar)
def float_power_impl(a: Any, b: Any) -> Tensor:
    # pow in double precision: with a complex operand both become complex128
    # (eager's float_power), here as ComplexTensors with float64 parts.
    double = CType(torch.float64, True)
    a, b = (to_complex(x, double) if isinstance(x, Tensor) else complex(x) for x in (a, b))
    return torch.pow(a, b)


# nan_to_num replaces nan and infinities in each part (eager's complex kernel).
partwise(aten.nan_to_num)


@register(aten.abs_.default)
def abs__impl(x: Any) -> Tensor:
    raise RuntimeError("In-place abs is not supported for complex tensors.")


def _refuse_complex(kernel: str, *ops: Any) -> None:
    """Ops eager has no complex kernel for, which a decomposition would compute
    anyway (a wrong answer): raise eager's error instead."""

    def impl(*args: Any, **kwargs: Any) -> Any:
        x = next((x for x in args if isinstance(x, ComplexTensor)), None)
        name = scalar_type_name(x) if x is not None else "ComplexFloat"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")

    for op in overloads_of(*ops):
        if not any(a.is_out for a in op._schema.arguments):
            register(op, kind="refused")(impl)


_refuse_complex("xlogy_cpu", aten.xlogy)
_refuse_complex("xlog1py_cpu", aten.special_xlog1py)
_refuse_complex("hardshrink_cpu", aten.hardshrink)
