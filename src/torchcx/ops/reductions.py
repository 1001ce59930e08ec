"""Reductions and scans: sum, mean, prod, cumsum, cumprod, logsumexp, logcumsumexp, var/std.

(``linalg_vector_norm``, which the norms reduce to, is in linalg.py.)

Sums (sum, mean) act on each part. Products and log-sum-exps are not
partwise: ``prod`` multiplies in a pairwise tree, so that a compiled graph
stays a short chain of wide fused kernels rather than a loop. The scans
``cumsum``, ``cumprod`` and ``logcumsumexp`` run as the native kernel (Note
[Scans run as the native kernel]).

float16/bfloat16 parts accumulate in float32 (as torch does for real tensors)
and the result is rounded once. A ``dtype=`` argument converts the input first,
as torch does (a real dtype keeps the real part, with torch's warning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch._ops import OpOverload

from ..tensor import ComplexTensor, component_dtype_of
from ._common import CType, ctype_of, opmath, register, size_hint, to_complex
from ._parts import Parts, mul, rounded
from .extern import call_extern, register_extern

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

# Note [Scans run as the native kernel]
# -------------------------------------
# cumsum, cumprod and logcumsumexp run as the native complex kernel (Note [Extern
# kernels]). Until 2026-12-06 cumprod and logcumsumexp were Hillis-Steele prefix
# scans on the parts: ceil(log2 n) rounds of a complex product (or a log-add-exp
# with eager's special values), each round one elementwise op over the whole
# tensor, and cumsum was ATen's real cumsum of each part. Measured against eager's
# sequential kernel (one thread, complex64, compiled / eager, 2026-12-06):
#
#   shape        cumsum               cumprod              logcumsumexp
#   (64,)        29.7 us / 1.4 us     85.8 us / 2.9 us     62.6 us / 5.7 us
#   (8, 256)     37.8 us / 3.3 us     144 us / 7.3 us      314 us / 128 us
#   (64, 1024)   198 us / 64 us       242 us / 145 us      8.6 ms / 4.4 ms
#   (16, 16384)  730 us / 252 us      1.04 ms / 0.59 ms    43.8 ms / 17.7 ms
#
# A scan's log n rounds each touch every element, where the sequential kernel
# touches each once, and Inductor cannot fuse the rounds (each reads its
# neighbours' results). ATen's cumsum costs about 1 ns per element step whatever
# the element (it accumulates sequentially): a complex element step costs what a
# real one does, so the two parts' cumsums cost twice the complex one, before the
# copies that split and join the parts. The scans were also the slowest ops to
# compile (forward and backward, cold: logcumsumexp 7-10 s, cumprod 4-6 s: 360 + 490
# real nodes for logcumsumexp), and logcumsumexp could not follow eager's angle
# where an imaginary part is infinite. The native kernel is eager's result by
# construction. Their gradients are eager's formulas, whose own scans run as this
# kernel again.
register_extern(aten.logcumsumexp.default)


def _scan_with_dtype(op: OpOverload, x: Tensor, dim: int, dtype: torch.dtype | None) -> Tensor:
    # dtype= converts first, as torch does; the native kernel would round its result
    # to bfloat16/float16 parts even when dtype= asks for wider ones
    x = _cast(x, dtype)
    if not isinstance(x, ComplexTensor):
        return op(x, dim)
    return call_extern(op, (x, dim), {})


@register(aten.cumsum.default, kind="extern")
def cumsum_impl(x: Tensor, dim: int, *, dtype: torch.dtype | None = None) -> Tensor:
    return _scan_with_dtype(aten.cumsum.default, x, dim, dtype)


@register(aten.cumprod.default, kind="extern")
def cumprod_impl(x: Tensor, dim: int, *, dtype: torch.dtype | None = None) -> Tensor:
    return _scan_with_dtype(aten.cumprod.default, x, dim, dtype)


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
