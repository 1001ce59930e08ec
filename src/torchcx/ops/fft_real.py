"""An FFT in real arithmetic on planar parts: real GEMMs and pointwise ops that Inductor fuses.

Note [FFT in real arithmetic]
-----------------------------
A transform of length n along the last axis of (re, im), built from three
pieces, each a handful of real ops that trace into an Inductor graph:

* **Direct DFT as one real GEMM** (n <= ``max_direct``). With
  W[j, k] = exp(s 2 pi i jk / n) (s = -1 forward, +1 inverse), the complex
  product X = x W is one real product of the concatenated parts with a block
  matrix, which ``_dft_matrix`` builds in float64 and rounds once::

      [xr | xi] @ [[ Wr, Wi],  =  [xr Wr - xi Wi | xr Wi + xi Wr]  =  [Xr | Xi]
                   [-Wi, Wr]]

  One GEMM launch per stage rather than four, and the concatenation is a
  pointwise kernel Inductor fuses into the producer. A real input (r2c) drops
  the lower half of the block (``[xr] @ [Wr, Wi]``), a real output (c2r) the
  right half. Normalization is folded into the matrix.
* **Four-step (Bailey) decomposition** of a composite n = n1 n2, with
  j = j1 n2 + j2 and k = k1 + n1 k2::

      X[k1 + n1 k2] = sum_j2 W_n2^(j2 k2) * [W_n^(j2 k1) * sum_j1 W_n1^(j1 k1) x[j1 n2 + j2]]

  a direct length-n1 DFT over the rows x[., j2] (a transposed read), a
  pointwise twiddle multiply by W_n^(j2 k1), and a length-n2 transform
  (recursively four-step) over the rows of the transposed result; the output
  is read back transposed. The transposes and the twiddle multiply fuse into
  one pointwise kernel between the GEMMs, and the last transpose into the
  consumer. n1 is the divisor of n that balances the stages
  (``_first_factor``), so a length-4096 transform is two GEMM stages of
  length 64.
* **Bluestein** for any other length (primes, and lengths with a prime factor
  above ``max_direct``). jk = (j^2 + k^2 - (k - j)^2) / 2 turns the DFT into a
  convolution with the chirp c[m] = exp(s i pi m^2 / n)::

      X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j])

  computed as a circular convolution of a smooth length L >= 2n - 1 by the
  four-step transform: forward transform, multiply by the (precomputed,
  1/L-scaled) transform of the chirp, inverse transform.

Hazards and numerics. Every constant (DFT matrices, twiddles, chirps, the
chirp's spectrum) is computed in float64 and rounded once to the computation
dtype. The angle 2 pi jk / n is reduced exactly in integers (jk mod n, and
m^2 mod 2n for the chirp) before the float64 trigonometry: the naive angle
loses all accuracy for large jk. A GEMM DFT accumulates n terms per output,
an FFT log n; with the stages kept at or below 64 points the relative L2
error stays within a small factor of pocketfft's at float32 (docs/fft.md has
the table). Float16 and bfloat16 parts are computed in float32 (the twiddle
multiplies); the GEMM operands are the part dtype for bfloat16
(``Plan.gemm``: it is what bfloat16 GEMM units take, and bfloat16 has
float32's range), rounded once per stage. The stage buffers between the GEMMs
then hold bfloat16 (the GEMM's operand and its output), so a compiled
bfloat16 transform needs about half the memory of a complex64 one; float16
stages stay float32 (see ``plan_for``).

Constants inside a traced graph are lifted (``lift_fresh_copy``) so that the
real graph holds them as graph constants; in eager mode they are used as they
are. All constants are cached per (length, sign, dtype, device).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import _disable_current_modes

from .. import _lowering
from ._parts import Parts, mul

#: The longest transform computed as one GEMM, per part dtype; longer ones are
#: decomposed. A GEMM DFT's rounding error grows like sqrt(n) (an FFT's like
#: sqrt(log n)): 32 keeps float32 within 2x of pocketfft's error (docs/fft.md);
#: bfloat16's own rounding dominates, so its stages are as long as is fastest.
MAX_DIRECT: dict[torch.dtype, int] = {torch.bfloat16: 64}
DEFAULT_MAX_DIRECT = 32

#: Smallest primes; Bluestein's convolution length is a product of these.
_SMOOTH_PRIMES = (2, 3, 5, 7)


@dataclass(frozen=True)
class Plan:
    """How one transform is computed: the dtype of the arithmetic and of the GEMM operands."""

    compute: torch.dtype  # pointwise arithmetic and stage outputs
    gemm: torch.dtype  # operands of the DFT GEMMs
    max_direct: int = DEFAULT_MAX_DIRECT


def plan_for(part: torch.dtype, device: torch.device) -> Plan:
    """The plan for parts of dtype ``part`` (see Note [FFT in real arithmetic])."""
    max_direct = MAX_DIRECT.get(part, DEFAULT_MAX_DIRECT)
    if part in (torch.float16, torch.bfloat16):
        # bfloat16 has float32's range: its GEMM units (AMX, tensor cores) take it
        # as it is. float16 stage outputs could overflow (|X| grows up to n |x|),
        # so its GEMMs run in float32, except on CUDA, whose half GEMMs
        # accumulate in float32 and which has no fast float32 GEMM of the same kind.
        gemm = part if part == torch.bfloat16 or device.type == "cuda" else torch.float32
        return Plan(torch.float32, gemm, max_direct)
    return Plan(part, part, max_direct)


# -- constants ---------------------------------------------------------------------------------


def _lifted(t: Tensor, like: Tensor) -> Tensor:
    """``t`` as a constant of the graph being traced, if one is (Note [Traced or computed])."""
    if _lowering.tracing():
        return torch.ops.aten.lift_fresh.default(t)
    return t


def _constant(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Cache a constant builder, and build outside any tracing or fake mode.

    A constant first needed while a graph is traced must still be a real tensor
    (a cached fake or traced value would leak into later calls); the graph then
    lifts it (``_lifted``).
    """
    cached = functools.lru_cache(maxsize=512)(fn)

    @functools.wraps(fn)
    def build(*args: Any) -> Any:
        with _disable_current_modes(), _lowering.computing(), torch._C._DisableFuncTorch(), torch.no_grad():
            return cached(*args)

    build.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return build


def _cis(num: Tensor, den: int, sign: int) -> tuple[Tensor, Tensor]:
    """cos and sin of s 2 pi num / den in float64, for integers ``num``.

    ``num`` is reduced modulo ``den`` in integers first, which keeps the angle accurate for
    large products j k. Multiples of pi/2 give exact values: sin(pi) is 1.2e-16 in floating
    point, which left ~1e-16 in the imaginary parts of bins that are real by symmetry (DC
    and Nyquist of a real signal's spectrum, where eager's FFT and NumPy give exact zeros).
    """
    r = torch.remainder(num, den)
    theta = sign * 2 * math.pi * r.to(torch.float64) / den
    quarter = (4 * r) % den == 0
    q = torch.div(4 * r, den, rounding_mode="floor")  # in 0..3 where quarter
    exact_cos = torch.tensor([1.0, 0.0, -1.0, 0.0], dtype=torch.float64)[q]
    exact_sin = sign * torch.tensor([0.0, 1.0, 0.0, -1.0], dtype=torch.float64)[q]
    return torch.where(quarter, exact_cos, torch.cos(theta)), torch.where(quarter, exact_sin, torch.sin(theta))


@_constant
def _dft_matrix(
    n: int,
    sign: int,
    scale: float,
    real_in: bool,
    real_out: bool,
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor:
    """The real matrix B with [xr | xi] @ B = [Xr | Xi] for X = scale * DFT_n(x) (Note [FFT in real arithmetic])."""
    idx = torch.arange(n, dtype=torch.int64)
    cos, sin = _cis(idx[:, None] * idx[None, :], n, sign)
    wr, wi = scale * cos, scale * sin
    if real_in and real_out:
        m = wr
    elif real_in:
        m = torch.cat([wr, wi], 1)
    elif real_out:
        m = torch.cat([wr, -wi], 0)
    else:
        m = torch.cat([torch.cat([wr, wi], 1), torch.cat([-wi, wr], 1)], 0)
    return m.to(dtype=dtype, device=device)


@_constant
def _c2r_matrix(h: int, n: int, scale: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """B with [xr | xi] @ B = y, the inverse real DFT of length n of a half spectrum of h points.

    y[j] = sum_k c_k (xr[k] cos(2 pi jk/n) - xi[k] sin(2 pi jk/n)), with c_k = 2 for
    the bins whose mirror image is implied, 1 for bin 0 and (n even) bin n/2. The
    sine vanishes at those two bins, so their imaginary parts are ignored, as
    every c2r library ignores them.
    """
    k = torch.arange(h, dtype=torch.int64)
    j = torch.arange(n, dtype=torch.int64)
    cos, sin = _cis(k[:, None] * j[None, :], n, 1)
    weight = torch.full((h, 1), 2.0, dtype=torch.float64)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[n // 2] = 1.0
    m = torch.cat([weight * cos, -weight * sin], 0) * scale
    return m.to(dtype=dtype, device=device)


@_constant
def _twiddles(n1: int, n2: int, sign: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """W_n^(j2 k1) for n = n1 n2, as (re, im) of shape (n2, n1)."""
    cos, sin = _cis(torch.arange(n2)[:, None] * torch.arange(n1)[None, :], n1 * n2, sign)
    return cos.to(dtype=dtype, device=device), sin.to(dtype=dtype, device=device)


@_constant
def _chirp(n: int, sign: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """c[m] = exp(s i pi m^2 / n) for m < n, with m^2 reduced modulo 2n before the float64 angle."""
    m = torch.arange(n, dtype=torch.int64)
    cos, sin = _cis(m * m, 2 * n, sign)  # pi m^2 / n = 2 pi m^2 / (2n)
    return cos.to(dtype=dtype, device=device), sin.to(dtype=dtype, device=device)


@_constant
def _chirp_spectrum(n: int, length: int, sign: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """DFT_L of conj(c) wrapped circularly to length L, divided by L (the inverse's normalization)."""
    cr, ci = _chirp(n, sign, torch.float64, torch.device("cpu"))
    g = torch.zeros(length, dtype=torch.complex128)
    g[:n] = torch.complex(cr, -ci)
    g[length - n + 1 :] = torch.complex(cr[1:], -ci[1:]).flip(0)
    spectrum = torch.fft.fft(g) / length
    return spectrum.real.to(dtype=dtype, device=device), spectrum.imag.to(dtype=dtype, device=device)


# -- factorization -----------------------------------------------------------------------------


@functools.cache
def _first_factor(n: int, max_direct: int) -> int:
    """n1 of a four-step split n = n1 n2 (n1 <= max_direct), or 1 when n has no such factor.

    Balanced stages: the smallest divisor at least n^(1/stages), for the fewest
    stages of at most ``max_direct`` points; a GEMM stage costs flops in
    proportion to its length, so uneven splits are slower.
    """
    divisors = [d for d in range(2, min(n - 1, max_direct) + 1) if n % d == 0]
    if not divisors:
        return 1
    stages = max(2, math.ceil(math.log(n) / math.log(max_direct) - 1e-9))
    target = n ** (1 / stages)
    above = [d for d in divisors if d >= target - 1e-9]
    return min(above) if above else max(divisors)


@functools.cache
def _smooth_at_least(n: int) -> int:
    """The smallest integer >= n whose prime factors are all in ``_SMOOTH_PRIMES``."""
    best = 1 << max(0, (n - 1).bit_length())
    stack = [1]
    seen = {1}
    while stack:
        v = stack.pop()
        if v >= n:
            best = min(best, v)
            continue
        for p in _SMOOTH_PRIMES:
            w = v * p
            if w < best and w not in seen:
                seen.add(w)
                stack.append(w)
    return best


def is_factorable(n: int, max_direct: int) -> bool:
    """Whether ``transform`` computes length n by direct and four-step stages alone (no Bluestein)."""
    while n > max_direct:
        n1 = _first_factor(n, max_direct)
        if n1 == 1:
            return False
        n //= n1
    return True


def bluestein_length(n: int) -> int:
    """The length of the circular convolution Bluestein computes a length-n transform by."""
    return _smooth_at_least(2 * n - 1)


# -- the transforms ----------------------------------------------------------------------------


def _gemm(parts: list[Tensor], b: Tensor, plan: Plan) -> Tensor:
    """[p0 | p1 | ...] @ b over the last axis as one 2-D GEMM, result in the computation dtype."""
    # Each part is rounded to the GEMM dtype *before* the concatenation: Inductor
    # materializes a cat, and a float32 cat of bfloat16 stages would hold twice the
    # memory the bfloat16 operand needs (the stage buffers are what set the peak).
    a = torch.cat([p.to(plan.gemm) for p in parts], -1) if len(parts) > 1 else parts[0].to(plan.gemm)
    lead = a.shape[:-1]
    out = torch.mm(a.reshape(-1, a.shape[-1]), b)
    return out.reshape(*lead, b.shape[-1]).to(plan.compute)


def _direct(xr: Tensor, xi: Tensor | None, n: int, sign: int, scale: float, real_out: bool, plan: Plan) -> Parts:
    """DFT_n over the last axis as one real GEMM (``xi`` None: a real input)."""
    b = _lifted(_dft_matrix(n, sign, scale, xi is None, real_out, plan.gemm, xr.device), xr)
    out = _gemm([xr] if xi is None else [xr, xi], b, plan)
    if real_out:
        return out, None
    return out[..., :n], out[..., n:]


def transform(
    xr: Tensor,
    xi: Tensor | None,
    sign: int,
    scale: float,
    plan: Plan,
    *,
    real_out: bool = False,
) -> Parts:
    """scale * sum_j x[j] exp(s 2 pi i jk / n) over the last axis of (xr, xi).

    ``xi`` None is a real input; ``real_out`` computes only the real part of the
    result (returned with None). Parts come and go in ``plan.compute``.
    """
    n = int(xr.shape[-1])  # static (fft.py takes the vendor path for symbolic lengths)
    if n == 1:
        if real_out:
            return xr * scale, None
        return xr * scale, torch.zeros_like(xr) if xi is None else xi * scale
    if n <= plan.max_direct:
        return _direct(xr, xi, n, sign, scale, real_out, plan)
    n1 = _first_factor(n, plan.max_direct)
    if n1 == 1:
        return _bluestein(xr, xi, sign, scale, real_out, plan)
    n2 = n // n1
    lead = xr.shape[:-1]

    def rows(t: Tensor | None) -> Tensor | None:  # x[j1 n2 + j2] as rows x[., j2] of length n1
        return None if t is None else t.reshape(*lead, n1, n2).transpose(-1, -2)

    yr, yi = _direct(rows(xr), rows(xi), n1, sign, scale, False, plan)  # Y[j2, k1]
    tr, ti = _twiddles(n1, n2, sign, plan.compute, xr.device)
    yr, yi = mul(yr, yi, _lifted(tr, xr), _lifted(ti, xr))
    assert yi is not None
    zr, zi = transform(yr.transpose(-1, -2), yi.transpose(-1, -2), sign, 1.0, plan, real_out=real_out)
    # X[k1 + n1 k2] = Z[k1, k2]: read Z transposed
    zr = zr.transpose(-1, -2).reshape(*lead, n)
    return zr, None if zi is None else zi.transpose(-1, -2).reshape(*lead, n)


def _bluestein(xr: Tensor, xi: Tensor | None, sign: int, scale: float, real_out: bool, plan: Plan) -> Parts:
    """The length-n DFT as a circular convolution with a chirp (Note [FFT in real arithmetic])."""
    n = int(xr.shape[-1])
    length = _smooth_at_least(2 * n - 1)
    # Its two transforms of length L >= 2n round more often than a direct transform:
    # with bfloat16 GEMM operands the error grew to 5x the vendor FFT's (docs/fft.md),
    # so they take float32 operands (a length without small factors is rare, and slow anyway).
    plan = Plan(plan.compute, plan.compute, plan.max_direct)
    cr, ci = (_lifted(c, xr) for c in _chirp(n, sign, plan.compute, xr.device))
    ar, ai = mul(xr, xi, cr, ci)
    assert ai is not None
    pad = [0, length - n]
    ar, ai = torch.nn.functional.pad(ar, pad), torch.nn.functional.pad(ai, pad)
    fr, fi = transform(ar, ai, -1, 1.0, plan)
    gr, gi = (_lifted(g, xr) for g in _chirp_spectrum(n, length, sign, plan.compute, xr.device))
    fr, fi = mul(fr, fi, gr, gi)
    assert fi is not None
    vr, vi = transform(fr, fi, 1, 1.0, plan)
    assert vi is not None
    vr, vi = vr[..., :n], vi[..., :n]
    # X[k] = scale c[k] v[k]
    cr, ci = cr * scale, ci * scale
    if real_out:
        return vr * cr - vi * ci, None
    return mul(vr, vi, cr, ci)


def hermitian_to_real(xr: Tensor, xi: Tensor, n: int, scale: float, plan: Plan) -> Tensor:
    """The inverse real DFT of length n over the last axis, from a half spectrum (c2r).

    Short lengths are one GEMM (``_c2r_matrix``). Longer ones extend the half
    spectrum to the full one (X[n - k] = conj(X[k])) and take the real part of
    the complex inverse: exactly what the c2r formula computes, since the
    imaginary parts of bins 0 and n/2 only ever contribute imaginary terms.
    """
    h = n // 2 + 1
    xr, xi = xr[..., :h], xi[..., :h]
    if xr.shape[-1] < h:  # fewer bins than n needs: the rest are zero
        pad = [0, h - xr.shape[-1]]
        xr, xi = torch.nn.functional.pad(xr, pad), torch.nn.functional.pad(xi, pad)
    if n <= plan.max_direct:
        b = _lifted(_c2r_matrix(h, n, scale, plan.gemm, xr.device), xr)
        return _gemm([xr, xi], b, plan)
    mirror = slice(1, n - h + 1)
    fr = torch.cat([xr, xr[..., mirror].flip(-1)], -1)
    fi = torch.cat([xi, -xi[..., mirror].flip(-1)], -1)
    out, _ = transform(fr, fi, 1, scale, plan, real_out=True)
    return out


# -- the aten primitives on planar parts -------------------------------------------------------


def _norm_scale(normalization: int, size: int) -> float:
    """ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n."""
    if normalization == 1:
        return 1 / math.sqrt(size)
    if normalization == 2:
        return 1 / size
    return 1.0


def _along(dim: int, t: Tensor) -> Tensor:
    return t.movedim(dim, -1)


def _back(dim: int, t: Tensor) -> Tensor:
    return t.movedim(-1, dim)


def c2c(
    xr: Tensor, xi: Tensor, dims: list[int], normalization: int, forward: bool, plan: Plan
) -> tuple[Tensor, Tensor]:
    """``aten._fft_c2c`` on planar parts in ``plan.compute``."""
    sign = -1 if forward else 1
    scale = _norm_scale(normalization, math.prod(int(xr.shape[d]) for d in dims))
    for i, d in enumerate(reversed(dims)):  # the last dim first: no transpose for it
        yr, yi = transform(_along(d, xr), _along(d, xi), sign, scale if i == 0 else 1.0, plan)
        assert yi is not None
        xr, xi = _back(d, yr), _back(d, yi)
    return xr, xi


def r2c(x: Tensor, dims: list[int], normalization: int, onesided: bool, plan: Plan) -> tuple[Tensor, Tensor]:
    """``aten._fft_r2c`` on a real tensor in ``plan.compute``: the half spectrum along ``dims[-1]`` if ``onesided``."""
    scale = _norm_scale(normalization, math.prod(int(x.shape[d]) for d in dims))
    last = dims[-1]
    n = int(x.shape[last])
    yr, yi = transform(_along(last, x), None, -1, scale, plan)
    assert yi is not None
    if onesided:
        yr, yi = yr[..., : n // 2 + 1], yi[..., : n // 2 + 1]
    # Bins 0 and n/2 of a real signal are real: exact zeros, as every r2c library writes them
    # (the chirps of Bluestein's algorithm leave rounding there, even with exact twiddles).
    k = torch.arange(yi.shape[-1], device=yi.device)
    yi = torch.where((k == 0) | (2 * k == n), 0.0, yi)
    xr, xi = _back(last, yr), _back(last, yi)
    if len(dims) > 1:
        xr, xi = c2c(xr, xi, list(dims[:-1]), 0, True, plan)
    return xr, xi


def c2r(xr: Tensor, xi: Tensor, dims: list[int], normalization: int, last_dim_size: int, plan: Plan) -> Tensor:
    """``aten._fft_c2r`` on planar parts in ``plan.compute``: a real result of ``last_dim_size`` along ``dims[-1]``."""
    sizes = [int(xr.shape[d]) for d in dims[:-1]]
    last_dim_size = int(last_dim_size)
    scale = _norm_scale(normalization, math.prod(sizes) * last_dim_size)
    if len(dims) > 1:
        xr, xi = c2c(xr, xi, list(dims[:-1]), 0, False, plan)
    last = dims[-1]
    return _back(last, hermitian_to_real(_along(last, xr), _along(last, xi), last_dim_size, scale, plan))
