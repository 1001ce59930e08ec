"""Reductions and scans: sum, mean, prod, cumsum, cumprod, logsumexp, logcumsumexp, var/std.

(``linalg_vector_norm``, which the norms reduce to, is in linalg.py.)

Sums (sum, mean, cumsum) act on each part. Products and log-sum-exps are not
partwise: ``prod`` multiplies in a pairwise tree and the scans (``cumprod``,
``logcumsumexp``) are parallel prefix scans, both of depth log n, so that a
compiled graph stays a short chain of wide fused kernels rather than a loop.

float16/bfloat16 parts accumulate in float32 (as torch does for real tensors)
and the result is rounded once. A ``dtype=`` argument converts the input first,
as torch does (a real dtype keeps the real part, with torch's warning).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..tensor import ComplexTensor, component_dtype_of
from ._common import CType, ctype_of, opmath, register, size_hint, to_complex
from ._parts import Parts, mul, rounded

aten = torch.ops.aten

# -- helpers -------------------------------------------------------------------------------


def _cast(x: Tensor, dtype: torch.dtype | None) -> Tensor:
    """``x`` converted to a reduction's ``dtype=`` argument, before reducing."""
    if dtype is None or (isinstance(x, ComplexTensor) and dtype == x.dtype):
        return x
    if dtype.is_complex:
        return to_complex(x, CType(component_dtype_of(dtype), True))
    return x.to(dtype)  # complex -> real keeps the real part (and warns), as torch


def _upcast(x: ComplexTensor) -> Parts:
    """The parts in the dtype arithmetic on them accumulates in."""
    acc = opmath(x.component_dtype)
    return x.re.to(acc), x.im.to(acc)


def _each_part(x: ComplexTensor, fn: Callable[[Tensor], Tensor]) -> ComplexTensor:
    """A reduction that acts on each part: sum(re + i im) = sum(re) + i sum(im)."""
    re, im = _upcast(x)
    return rounded(fn(re), fn(im), ctype_of(x))


def _reduce_dims(dim: Sequence[int] | int | None, ndim: int) -> list[int]:
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return list(range(ndim))
    return sorted({d % max(ndim, 1) for d in dims})


# -- sums ----------------------------------------------------------------------------------


@register(aten.sum.dim_IntList, aten.sum.default)
def sum_impl(x: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Tensor:
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return aten.sum.dim_IntList(x, dim, keepdim)
    return _each_part(x, lambda p: aten.sum.dim_IntList(p, dim, keepdim))


@register(aten.mean.dim, aten.mean.default)
def mean_impl(x: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Tensor:
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return aten.mean.dim(x, dim, keepdim)
    # Eager (and NumPy) scale the complex sum by 1/N as a complex number, (a + ib)(1/N + 0i):
    # its zero imaginary part is _times_one's. Eager's sums start from +0 (the mean of -0 is
    # +0); Inductor reduces a dim of size 1 without that start, so add it.
    re, im = _upcast(x)
    m_re, m_im = aten.mean.dim(re, dim, keepdim) + 0.0, aten.mean.dim(im, dim, keepdim) + 0.0
    return rounded(*_times_one(m_re, m_im), ctype_of(x))


@register(aten.cumsum.default)
def cumsum_impl(x: Tensor, dim: int, *, dtype: torch.dtype | None = None) -> Tensor:
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return aten.cumsum(x, dim)
    return _each_part(x, lambda p: aten.cumsum(p, dim))


# -- products ------------------------------------------------------------------------------


def _tree_prod(re: Tensor, im: Tensor) -> Parts:
    """Product over the last dim, keeping it (size 1): multiply neighbours pairwise until one is left.

    Depth log n, and each factor meets O(log n) roundings instead of n.
    """
    n = re.shape[-1]
    if n == 0:
        shape = (*re.shape[:-1], 1)
        return torch.ones(shape, dtype=re.dtype, device=re.device), torch.zeros(shape, dtype=im.dtype, device=im.device)
    # the first factor times the start value, as eager and NumPy multiply (_times_one)
    first_re, first_im = _times_one(re[..., :1], im[..., :1])
    if n == 1:
        return first_re, first_im
    re, im = torch.cat([first_re, re[..., 1:]], -1), torch.cat([first_im, im[..., 1:]], -1)
    if isinstance(n, torch.SymInt):
        return _padded_tree_prod(re, im, n)
    while n > 1:
        even = n - n % 2
        pr, pi = mul(re[..., 0:even:2], im[..., 0:even:2], re[..., 1:even:2], im[..., 1:even:2])
        if n % 2:  # the odd one out joins the next round as it is
            pr, pi = torch.cat([pr, re[..., -1:]], -1), torch.cat([pi, im[..., -1:]], -1)
        re, im = pr, pi
        n = re.shape[-1]
    return re, im


def _padded_tree_prod(re: Tensor, im: Tensor, n: torch.SymInt) -> Parts:
    """``_tree_prod``'s rounds for a symbolic length ``n``, on a static width.

    The rounds' lengths (n+1)//2, ((n+1)//2+1)//2, ... nest floor divisions, and comparing
    each with 1 had sympy expand them for minutes (a dynamic ``x.prod(-1)`` never finished
    compiling). Here the factors are padded to the next power of two (one guard, n <= width:
    a new graph per power of two) and every round halves a static length. Position q of round
    r holds the product of factors q*2^r ... (q+1)*2^r - 1, present iff q*2^r < n: a pair
    whose right member is absent keeps its left one as it is, so each product is the one the
    static rounds make, in the same order (pads are never multiplied: 1+0j would turn an
    infinite part into nan).
    """
    width = 1 << (size_hint(n) - 1).bit_length()
    torch._check(n <= width)
    re = torch.nn.functional.pad(re, (0, width - n))
    im = torch.nn.functional.pad(im, (0, width - n))
    span = 1
    while width > 1:
        present = torch.arange(1, width, 2, device=re.device) * span < n
        pr, pi = mul(re[..., 0::2], im[..., 0::2], re[..., 1::2], im[..., 1::2])
        re, im = torch.where(present, pr, re[..., 0::2]), torch.where(present, pi, im[..., 0::2])
        width, span = width // 2, span * 2
    return re, im


def _times_one(re: Tensor, im: Tensor) -> Parts:
    """(re + i im) * (1 + 0i) as a complex product. Eager and NumPy multiply by a real number
    as a complex one (a product's start value 1, a mean's 1/N): an infinite part meets the
    zero imaginary part and makes the other part nan (prod([-inf+infj]) is nan+nanj,
    mean([-inf+0j]) is -inf+nanj, in both). On finite values it changes nothing."""
    return re - im * 0, im + re * 0


@register(aten.prod.default, aten.prod.dim_int)
def prod_impl(x: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Tensor:
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return aten.prod(x) if dim is None else aten.prod(x, dim, keepdim)
    re, im = _upcast(x)
    if re.dtype == torch.float32:
        # Eager's and NumPy's complex64 products do not overflow in the middle of a product
        # whose result fits ((3e38-3e38j)(1.5-0.5j) is 3e38-infj, not inf-infj): each part's
        # two terms are formed in a wider range. Products in float64, rounded once.
        re, im = re.double(), im.double()
    if dim is None:
        pr, pi = _tree_prod(re.reshape(1, -1), im.reshape(1, -1))
        return rounded(pr.reshape(()), pi.reshape(()), ctype_of(x))
    d = dim % max(x.dim(), 1)
    if x.dim() == 0:
        return rounded(*_times_one(re, im), ctype_of(x))
    pr, pi = _tree_prod(re.movedim(d, -1), im.movedim(d, -1))
    pr, pi = pr.movedim(-1, d), pi.movedim(-1, d)
    if not keepdim:
        pr, pi = pr.squeeze(d), pi.squeeze(d)
    return rounded(pr, pi, ctype_of(x))


# -- scans ---------------------------------------------------------------------------------


def _prefix_scan(re: Tensor, im: Tensor, dim: int, combine: Callable[[Tensor, Tensor, Tensor, Tensor], Parts]) -> Parts:
    """Inclusive scan of an associative ``combine(earlier, later)`` along ``dim``.

    Hillis-Steele: in round k every element combines with the one 2^k before
    it; after ceil(log2 n) rounds element i holds combine(x_0, ..., x_i).
    Every round is one elementwise op over the whole tensor (no loop over n).
    """
    if re.dim() == 0:
        return re.clone(), im.clone()
    n = re.shape[dim]
    if n <= 1:
        return re.clone(), im.clone()
    step = 1
    while step < n:
        cr, ci = combine(
            re.narrow(dim, 0, n - step),
            im.narrow(dim, 0, n - step),
            re.narrow(dim, step, n - step),
            im.narrow(dim, step, n - step),
        )
        re = torch.cat([re.narrow(dim, 0, step), cr], dim)
        im = torch.cat([im.narrow(dim, 0, step), ci], dim)
        step *= 2
    return re, im


@register(aten.cumprod.default)
def cumprod_impl(x: Tensor, dim: int, *, dtype: torch.dtype | None = None) -> Tensor:
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return aten.cumprod(x, dim)
    re, im = _prefix_scan(*_upcast(x), dim, mul)
    return rounded(re, im, ctype_of(x))


def _log_add_exp(ar: Tensor, ai: Tensor, br: Tensor, bi: Tensor) -> Parts:
    """log(exp(a) + exp(b)) for complex a, b, with eager's special cases (LogAddExp.h).

    Shifted by the operand of larger real part, M: log(e^m + e^M) = M +
    log1p(e^(m - M)), where |e^(m - M)| <= 1 cannot overflow. Any nan gives
    nan + nan i; two infinite real parts of the same sign give -inf (the
    smaller operand: its angle is meaningless) or +inf with the angle of the sum.
    ``a`` is the earlier operand (eager's accumulator), ``b`` the later one.
    """
    a_smaller = ar <= br  # ties: a, the accumulator, counts as the smaller one, as eager's
    mr, mi = torch.where(a_smaller, ar, br), torch.where(a_smaller, ai, bi)  # min by real part
    xr, xi = torch.where(a_smaller, br, ar), torch.where(a_smaller, bi, ai)  # max by real part
    # log1p(w), w = exp(m - M): |1 + w|^2 = 1 + (2 wr + wr^2 + wi^2), the bracket
    # small when w is, so log1p keeps its digits; arg(1 + w) = atan2(wi, 1 + wr).
    scale = torch.exp(mr - xr)
    dphase = mi - xi
    # e^(-inf + iy) = 0 for any y, even an infinite one (C99)
    wr = torch.where(scale == 0, 0.0, scale * torch.cos(dphase))
    wi = torch.where(scale == 0, 0.0, scale * torch.sin(dphase))
    lr = 0.5 * torch.log1p(wr * (2 + wr) + wi * wi)
    li = torch.atan2(wi, 1 + wr)
    out_r, out_i = xr + lr, xi + li
    # both real parts -inf: exp of either is 0; eager returns the smaller operand
    both_inf = torch.isinf(mr) & (mr == xr)
    out_r = torch.where(both_inf, mr, out_r)
    out_i = torch.where(both_inf & (mr < 0), mi, out_i)
    # both +inf: eager computes log(e^m + e^M) as it stands, e^(inf + iy) being
    # inf cis(y) (and inf + 0i for y = 0), which may well give nans
    er = math.inf * torch.cos(mi) + math.inf * torch.cos(xi)
    ei = torch.where(mi == 0, 0.0, math.inf * torch.sin(mi)) + torch.where(xi == 0, 0.0, math.inf * torch.sin(xi))
    plus_inf = both_inf & (mr > 0)
    out_r = torch.where(plus_inf, torch.log(torch.hypot(er, ei)), out_r)
    out_i = torch.where(plus_inf, torch.atan2(ei, er), out_i)
    nan = torch.isnan(ar) | torch.isnan(ai) | torch.isnan(br) | torch.isnan(bi)
    return torch.where(nan, torch.nan, out_r), torch.where(nan, torch.nan, out_i)


@register(aten.logcumsumexp.default)
def logcumsumexp_impl(x: ComplexTensor, dim: int) -> ComplexTensor:
    """log(cumsum(exp(z))), by a prefix scan of log-add-exp, with eager's branch of the angle.

    The imaginary part is an angle, defined up to 2 pi, and eager's sequential
    kernel picks a branch by its order of operations: acc_k =
    logaddexp(z_k, acc_{k-1}) takes the angle of the operand with the larger
    real part (z_k on ties) and adds a principal increment (|.| <= pi/2). So
    the angle restarts from imag(z_j) at each j where z_j's real part reaches
    acc_{j-1}'s, and between restarts adds the principal increments of
    arg(S_k), S_k = sum_{i<=k} exp(z_i). The scan gives log|S_k| and arg(S_k)
    in some branch; the branch is then rebuilt with a segmented cumsum.
    Matches eager for any real parts (inf and nan included); with an infinite
    imaginary part eager's result depends on its order of operations (nan or
    not), which a scan cannot follow.
    """
    re, im = _upcast(x)
    if x.dim() == 0:
        return rounded(re.clone(), im.clone(), ctype_of(x))  # eager returns the element itself
    minus_inf = torch.full_like(re, -math.inf)
    dim = dim % x.dim()
    n = x.shape[dim]
    if n == 0:
        return rounded(re.clone(), im.clone(), ctype_of(x))
    # eager's accumulator starts at -inf + 0i: z_0 = -inf + iy gives -inf + 0i
    r0, i0 = _log_add_exp(
        minus_inf.narrow(dim, 0, 1), torch.zeros_like(im.narrow(dim, 0, 1)), re.narrow(dim, 0, 1), im.narrow(dim, 0, 1)
    )
    lr, li = _prefix_scan(
        torch.cat([r0, re.narrow(dim, 1, n - 1)], dim),
        torch.cat([i0, im.narrow(dim, 1, n - 1)], dim),
        dim,
        _log_add_exp,
    )
    if n == 1:
        return rounded(lr, li, ctype_of(x))
    theta = _principal(li)
    first = lr.narrow(dim, 0, 1)
    # restart where z_k's real part reaches log|S_{k-1}| (always at k = 0)
    restart = torch.cat(
        [torch.ones_like(first, dtype=torch.bool), re.narrow(dim, 1, n - 1) >= lr.narrow(dim, 0, n - 1)], dim
    )
    anchor = im + _principal(theta - im)
    step = torch.cat(
        [torch.zeros_like(first), _principal(theta.narrow(dim, 1, n - 1) - theta.narrow(dim, 0, n - 1))], dim
    )
    total = torch.cumsum(step, dim)
    shape = [1] * x.dim()
    shape[dim] = n
    index = torch.arange(n, device=x.device).reshape(shape).expand(x.shape)
    last_restart = torch.cummax(torch.where(restart, index, 0), dim).values
    angle = torch.gather(anchor - total, dim, last_restart) + total
    # infinite or nan log|S|: eager's special cases, which the scan already follows
    angle = torch.where(torch.isfinite(lr), angle, li)
    return rounded(lr, angle, ctype_of(x))


def _principal(angle: Tensor) -> Tensor:
    """``angle`` reduced to [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


@register(aten.logsumexp.default)
def logsumexp_impl(x: Tensor, dim: Sequence[int], keepdim: bool = False) -> Tensor:
    """log(sum(exp(z))) = M + log(sum(exp(z - M))), M the largest real part (0 if infinite).

    Shifting by a real M scales every exp(z - M) to modulus <= 1: no overflow
    in the sum, and the largest term keeps its digits. The angles are
    unaffected. As eager: the complex exp and log of the pointwise table.
    """
    if not isinstance(x, ComplexTensor):
        return aten.logsumexp(x, dim, keepdim)
    z = ComplexTensor(*_upcast(x))
    if x.numel() == 0:
        out = torch.log(torch.sum(torch.exp(z), dim, keepdim))
        return rounded(out.re, out.im, ctype_of(x))
    dims = _reduce_dims(dim, x.dim())
    shift = torch.amax(z.re, dims, keepdim=True)
    shift = torch.where(torch.isinf(shift), 0.0, shift)
    out = torch.log(torch.sum(torch.exp(z - shift), dims, keepdim)) + (shift if keepdim else shift.squeeze(dims))
    return rounded(out.re, out.im, ctype_of(x))


# -- variance --------------------------------------------------------------------------


def _var(x: ComplexTensor, dim: Any, correction: Any, keepdim: bool) -> Tensor:
    # E|z - E z|^2 = E(re - E re)^2 + E(im - E im)^2: the real variances of the
    # parts add (with the same correction), each computed by torch's two-pass kernel.
    re, im = _upcast(x)
    return aten.var.correction(re, dim, correction=correction, keepdim=keepdim) + aten.var.correction(
        im, dim, correction=correction, keepdim=keepdim
    )


@register(aten.var.correction)
def var_impl(x: ComplexTensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Tensor:
    return _var(x, dim, correction, keepdim).to(x.component_dtype)


@register(aten.std.correction)
def std_impl(x: ComplexTensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Tensor:
    return torch.sqrt(_var(x, dim, correction, keepdim)).to(x.component_dtype)


@register(aten.var_mean.correction)
def var_mean_impl(
    x: ComplexTensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> tuple[Tensor, ComplexTensor]:
    return var_impl(x, dim, correction=correction, keepdim=keepdim), mean_impl(x, dim, keepdim)


@register(aten.std_mean.correction)
def std_mean_impl(
    x: ComplexTensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> tuple[Tensor, ComplexTensor]:
    return std_impl(x, dim, correction=correction, keepdim=keepdim), mean_impl(x, dim, keepdim)


@register(aten.dist.default)
def dist_impl(a: Tensor, b: Tensor, p: float = 2) -> Tensor:
    # ||a - b||_p: the p-norm of the moduli of the difference, a real number.
    return torch.linalg.vector_norm(torch.sub(a, b), p)
