"""The FFT family: the vendor FFT as an extern kernel, and an FFT in real arithmetic.

Note [FFT paths]
----------------
``torch.fft.*``, ``stft`` and ``istft`` are CompositeImplicit: what reaches
torchcx is their padding and truncation (``constant_pad_nd``, ``slice``,
``roll`` for ``fftshift``: ops of other families) and three primitives, each
a transform over a list of dims with a normalization mode:

* ``_fft_c2c(x, dim, normalization, forward)``: complex to complex;
* ``_fft_r2c(x, dim, normalization, onesided)``: real to complex, the
  half-spectrum when ``onesided``. Its input is real, so outside a compiled
  graph it reaches torchcx only under ``ComplexMode`` (listed in
  ``REAL_TO_COMPLEX_OPS``);
* ``_fft_c2r(x, dim, normalization, last_dim_size)``: half-spectrum to real.

Gradients need nothing here: autograd (eager, or AOTAutograd before the
lowering) differentiates the primitives with PyTorch's own formulas, which
are again these primitives plus padding and slicing.

Each primitive runs on one of two paths, the entries of the table ``FFT_PATHS``
(a function per primitive each):

* **vendor**: the vendor FFT (pocketfft or MKL on CPU, cuFFT on GPU) through
  the extern kernel (Note [Extern kernels]) on interleaved data. In a
  compiled graph the producer's kernel writes the interleaved words and the
  consumer's kernel reads them (Note [Interleaved layouts]), so the FFT costs
  the vendor call alone; a graph input or output crosses without any copy
  (Note [Packed form]). Float16/bfloat16 parts are computed in complex64.
* **real**: the FFT in real arithmetic on the planar parts (``fft_real``,
  Note [FFT in real arithmetic]): real GEMMs and pointwise ops that Inductor
  fuses with the neighbouring code, and the only path that computes
  bfloat16 parts with bfloat16 GEMM units.

A path's function gets the primitive's arguments and returns what the vendor
FFT would, strides included (``_like_vendor``).

Note [FFT path selection]
-------------------------
``torchcx.config.fft_path`` chooses: ``"vendor"``, ``"real"``, or ``"auto"``
(the default), which applies ``prefer_real``; the setting is read when a graph
is compiled. The rule is read off benchmarks/fft_paths.py (committed results:
benchmarks/results/fft_paths_cpu.json, 1 thread; docs/fft.md has the tables):

* The vendor call has a fixed cost (~0.1 ms on CPU: the extern call, and
  the vendor FFT's own per-call setup), the real path a cost per point that
  is several times the vendor FFT's (GEMM stages do O(n * stage) work, not
  O(n log n)). So the real path wins on small work and loses on large work:
  on CPU it is taken while batch x length is at most ``_CPU_REAL_POINTS[part]``
  (8192 points for float32, 4096 for float64, 65536 for bfloat16/float16,
  whose vendor path also converts to complex64 and back), and for a single
  power-of-two transform (batch 1) up to ``_CPU_REAL_SINGLE[part]`` points,
  where the vendor FFT's per-call setup dominates (measured: eager's batch-1
  time per point is several times its batch-16 time there).
* At 16384 float32 points the two paths tie on a lone transform (0.98x and 1.05x
  at batch 256 x 64 and 16 x 1024), and in a pipeline the real path loses: its
  last stage is pointwise, so Inductor inlines it into each consumer, and a
  consumer that gathers (the frames a phase vocoder interpolates between) computes
  it again per gathered element. The STFT -> time stretch -> iSTFT pipeline of
  benchmarks/fft_pipelines.py at 1 x 4000 samples (32 frames of 512) took 1.6x
  the vendor path's time on the real path. So float32 takes the real path below
  the tie, up to 8192 points.
* Lengths the real path computes by Bluestein count as the two transforms of
  the convolution length L >= 2n - 1 they cost; bfloat16/float16 Bluestein
  runs float32 GEMMs, so it takes float32's threshold.
* Other devices: the vendor FFT for every part dtype until a run of the
  benchmark there is committed (unmeasured; the vendor path is also the more
  accurate one at bfloat16, where it rounds once).
* A symbolic transform length takes the vendor path (``path_for``); a
  symbolic batch is read by its hint, without a guard.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.fx.experimental.symbolic_shapes import is_concrete_int

from .. import config
from ..tensor import ComplexTensor, RealView
from . import fft_real
from ._common import opmath, size_hint, to_complex
from ._registry import REAL_TO_COMPLEX_OPS, register
from .extern import call_extern, hands_over_layout

aten = torch.ops.aten

#: The FFT primitives torch.fft, stft and istft reach under dispatch.
FFT_PRIMITIVES = (aten._fft_c2c.default, aten._fft_r2c.default, aten._fft_c2r.default)

REAL_TO_COMPLEX_OPS.add(aten._fft_r2c)


def vendor_fft(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """One of ``FFT_PRIMITIVES`` by the vendor FFT (the extern kernel), on ComplexTensors."""
    return call_extern(op, args, kwargs)


# -- choosing the path -------------------------------------------------------------------------


#: Note [FFT path selection], read off benchmarks/results/fft_paths_cpu.json: the most
#: points (batch x transform length) at which the real path is taken on CPU ...
_CPU_REAL_POINTS = {torch.float32: 1 << 13, torch.float64: 1 << 12, torch.bfloat16: 1 << 16, torch.float16: 1 << 16}
#: ... and the longest single (batch 1) power-of-two transform it takes.
_CPU_REAL_SINGLE = {torch.float32: 1 << 16, torch.float64: 1 << 14, torch.bfloat16: 1 << 16, torch.float16: 1 << 16}


def _real_path_points(n: int, part: torch.dtype) -> tuple[int, bool]:
    """(what a length-n transform costs on the real path, in points; whether by Bluestein)."""
    if n <= 1 or fft_real.is_factorable(n, fft_real.plan_for(part, torch.device("cpu")).max_direct):
        return n, False
    return 2 * fft_real.bluestein_length(n), True


def prefer_real(device: torch.device, part: torch.dtype, sizes: list[int], batch: Any) -> bool:
    """Whether the real-arithmetic FFT is faster (Note [FFT path selection]).

    ``sizes`` are the transform's lengths, ``batch`` the number of transforms.
    """
    if device.type != "cpu" or part not in _CPU_REAL_POINTS:
        return False
    costs = [_real_path_points(n, part) for n in sizes]
    bluestein = any(b for _, b in costs)
    threshold = part if not bluestein or part == torch.float64 else torch.float32
    points = size_hint(batch) * math.prod(c for c, _ in costs)
    if points <= _CPU_REAL_POINTS[threshold]:
        return True
    single = size_hint(batch) == 1 and all(n & (n - 1) == 0 for n in sizes)
    return single and points <= _CPU_REAL_SINGLE[part]


def path_for(device: torch.device, part: torch.dtype, sizes: list[Any], batch: Any) -> str:
    """The path (a key of ``FFT_PATHS``) ``config.fft_path`` selects for one transform.

    A transform length that is symbolic (a graph compiled with dynamic shapes)
    takes the vendor path whatever the setting: the real path's constants and
    factorization are built for one length. Symbolic batch sizes are fine.
    """
    setting = config.fft_path
    if setting not in PATHS:
        raise ValueError(f"torchcx.config.fft_path must be one of {PATHS}, got {setting!r}")
    if not all(is_concrete_int(s) for s in sizes):
        return "vendor"
    if setting != "auto":
        return setting
    return "real" if prefer_real(device, part, [int(s) for s in sizes], batch) else "vendor"


def _dims(x: Tensor, dim: list[int]) -> list[int]:
    return [d % x.dim() for d in dim] if x.dim() else []


def _batch(shape: torch.Size, dims: list[int]) -> int:
    return math.prod(s for i, s in enumerate(shape) if i not in dims)


# -- the strides of the result --------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _eager_strides(
    op: torch._ops.OpOverload,
    shape: tuple[int, ...],
    stride: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
    args: tuple[Any, ...],
) -> tuple[int, ...]:
    """The strides of the vendor FFT's result (its meta kernel, on a fake input like ours).

    The real path's parts must have them: the graph AOTAutograd traced took
    them from the same meta kernel and may ``view`` the result accordingly
    (stft's backward views its (1, 51, 10) spectrum as (1, 510)), and in eager
    mode a user may too.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), FakeTensorMode():
        return tuple(op(torch.empty_strided(shape, stride, dtype=dtype, device=device), *args).stride())


def _like_vendor(
    op: torch._ops.OpOverload, x: Tensor, dtype: torch.dtype, args: tuple[Any, ...], *parts: Tensor
) -> Any:
    """``parts`` with the strides of the vendor FFT's result (dense: a permutation of contiguous)."""
    sizes = (*x.shape, *x.stride())
    if not all(is_concrete_int(v) for v in sizes):
        strides = None  # symbolic batch sizes: contiguous
    else:
        shape, stride = tuple(int(v) for v in x.shape), tuple(int(v) for v in x.stride())
        # (the layout does not depend on the dtype: avoid complex32's "experimental" warning)
        dtype = torch.complex64 if dtype == torch.complex32 else opmath(dtype)
        strides = _eager_strides(op, shape, stride, dtype, x.device, tuple(args))
    out = []
    for t in parts:
        if strides is None:
            t = t.contiguous()
        elif t.stride() != strides:
            # outermost dim first; a permutation of the dims makes them contiguous
            t = _in_order(t, sorted(range(t.dim()), key=lambda d: (-strides[d], d)))
        out.append(t)
    return out if len(out) > 1 else out[0]


def _in_order(t: Tensor, order: list[int]) -> Tensor:
    """``t`` in memory whose dims run ``order``, outermost first (a copy unless it is already)."""
    return t.permute(order).contiguous().permute([order.index(d) for d in range(t.dim())])


# -- the paths ---------------------------------------------------------------------------------


class FftPath(NamedTuple):
    """One way to compute the three primitives (Note [FFT paths]): a function per primitive,
    taking its arguments (``x`` a ComplexTensor, a real tensor for r2c)."""

    c2c: Callable[[ComplexTensor, list[int], int, bool], ComplexTensor]
    r2c: Callable[[Tensor, list[int], int, bool], ComplexTensor]
    c2r: Callable[[ComplexTensor, list[int], int, int], Tensor]


def _real_c2c(x: ComplexTensor, dim: list[int], normalization: int, forward: bool) -> ComplexTensor:
    dims, part = _dims(x, dim), x.component_dtype
    plan = fft_real.plan_for(part, x.device)
    re, im = fft_real.c2c(x.re.to(plan.compute), x.im.to(plan.compute), dims, normalization, forward, plan)
    args = (tuple(dims), normalization, forward)
    return ComplexTensor(*_like_vendor(aten._fft_c2c.default, x, x.dtype, args, re.to(part), im.to(part)))


def _real_r2c(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> ComplexTensor:
    dims, part = _dims(x, dim), x.dtype
    plan = fft_real.plan_for(part, x.device)
    re, im = fft_real.r2c(x.to(plan.compute), dims, normalization, onesided, plan)
    args = (tuple(dims), normalization, onesided)
    return ComplexTensor(*_like_vendor(aten._fft_r2c.default, x, part, args, re.to(part), im.to(part)))


def _real_c2r(x: ComplexTensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    dims, part = _dims(x, dim), x.component_dtype
    plan = fft_real.plan_for(part, x.device)
    out = fft_real.c2r(x.re.to(plan.compute), x.im.to(plan.compute), dims, normalization, last_dim_size, plan)
    args = (tuple(dims), normalization, int(last_dim_size))
    return _like_vendor(aten._fft_c2r.default, x, x.dtype, args, out.to(part))


# Note [Transforms laid out for MKL]
# ATen's MKL FFT moves the batch dims first (sorted by stride, outermost first) and the
# transformed dims last, and views the batch dims as one: where they do not collapse into one
# (a transform over dim -2 of a row-major tensor: batch strides (.., 1024, 1) around the
# transformed dim's 16) it copies the whole input with a transpose before the call (0.27-0.48
# ms for the FNO's 2 MiB spectra, three such copies per step). Its result has the transformed
# dims innermost whatever the input's layout. So torchcx hands the transform its input in
# that order where ATen would copy: in a compiled graph the kernel that makes the input writes
# it so (a transposing write where it was a plain one, or Inductor's copy in place of ATen's
# where the input is another extern call's result), and the consumers read the result as
# before. Same MKL calls, same values.
#
# An inverse real FFT over several dims (..., a, b) is, in ATen, a c2c over the leading dims
# and then a c2r over the last, each with that copy: torchcx makes the two calls itself, the
# c2c's input in its order, so the second copy (the c2r's: the c2c's result has the leading
# dims innermost) is the one left (in the suite's FNO step the inverse went from 4.9 to 2.3 ms).


def _mkl_copies(x: Tensor, dims: list[int]) -> bool:
    """Whether ATen's MKL FFT would copy ``x`` to batch a transform over ``dims``."""
    if not all(is_concrete_int(v) for v in (*x.shape, *x.stride())):
        return False  # (unknown until run: left to ATen)
    batch = [d for d in range(x.dim()) if d not in dims and x.shape[d] != 1]
    batch.sort(key=lambda d: -x.stride(d))
    return any(x.stride(a) != x.stride(b) * x.shape[b] for a, b in zip(batch, batch[1:]))


def _mkl_gets_layout(x: Tensor) -> bool:
    """Whether the vendor FFT of ``x`` is ATen's MKL one, called on ``x``'s layout (in a
    compiled graph; eager calls interleave into a new row-major tensor)."""
    return x.device.type == "cpu" and torch.backends.mkl.is_available() and hands_over_layout(x)


def _laid_out_for_mkl(x: Tensor, dims: list[int]) -> Tensor:
    """``x`` laid out as ATen's MKL FFT batches it without copying (Note [Transforms laid
    out for MKL]): its other dims outermost, in their present order, then ``dims``."""
    if not _mkl_gets_layout(x) or not _mkl_copies(x, dims):
        return x
    batch = sorted((d for d in range(x.dim()) if d not in dims), key=lambda d: (-x.stride(d), d))
    return _parts_in_order(x, batch + sorted(dims, key=lambda d: (-x.stride(d), d)))


def _parts_in_order(x: Tensor, order: list[int]) -> Tensor:
    """``_in_order`` of a real tensor, or of each part of a ComplexTensor."""
    if isinstance(x, ComplexTensor):
        return ComplexTensor(_in_order(x.re, order), _in_order(x.im, order))
    return _in_order(x, order)


def _vendor_c2c(x: ComplexTensor, dim: list[int], normalization: int, forward: bool) -> ComplexTensor:
    return vendor_fft(aten._fft_c2c.default, _laid_out_for_mkl(x, _dims(x, dim)), dim, normalization, forward)


def _vendor_r2c(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> ComplexTensor:
    return vendor_fft(aten._fft_r2c.default, _laid_out_for_mkl(x, _dims(x, dim)), dim, normalization, onesided)


def _vendor_c2r(x: ComplexTensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    dims = _dims(x, dim)
    if len(dims) < 2 or not _mkl_gets_layout(x):
        return vendor_fft(aten._fft_c2r.default, _laid_out_for_mkl(x, dims), dim, normalization, last_dim_size)
    leading = dims[:-1]
    laid = _parts_in_order(x, [d for d in range(x.dim()) if d not in leading] + leading)
    spectrum = vendor_fft(aten._fft_c2c.default, laid, leading, normalization, False)
    return vendor_fft(aten._fft_c2r.default, spectrum, [dims[-1]], normalization, last_dim_size)


#: The paths by name, as ``torchcx.config.fft_path`` names them: adding a path is adding an
#: entry here (and to ``prefer_real``'s rule if "auto" should choose it).
FFT_PATHS: dict[str, FftPath] = {
    "vendor": FftPath(_vendor_c2c, _vendor_r2c, _vendor_c2r),
    "real": FftPath(_real_c2c, _real_r2c, _real_c2r),
}
PATHS = ("auto", *FFT_PATHS)


def _path(x: Tensor, dims: list[int], sizes: list[Any]) -> FftPath:
    """The path of a transform of ``x`` over ``dims``, of lengths ``sizes`` (none: the vendor's)."""
    if not dims:
        return FFT_PATHS["vendor"]
    part = x.component_dtype if isinstance(x, ComplexTensor) else x.dtype
    return FFT_PATHS[path_for(x.device, part, sizes, _batch(x.shape, dims))]


# -- the primitives ----------------------------------------------------------------------------


@register(aten._fft_c2c.default, calls_extern=True)  # the vendor path
def fft_c2c_impl(x: Tensor, dim: list[int], normalization: int, forward: bool) -> ComplexTensor:
    x = to_complex(x)
    dims = _dims(x, dim)
    return _path(x, dims, [x.shape[d] for d in dims]).c2c(x, dim, normalization, forward)


@register(aten._fft_r2c.default, calls_extern=True)  # the vendor path
def fft_r2c_impl(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> Tensor:
    if isinstance(x, ComplexTensor):
        raise RuntimeError(f"_fft_r2c expects a real input tensor, but got {x.dtype}")
    if isinstance(x, RealView):
        x = x.materialize()
    dims = _dims(x, dim)
    return _path(x, dims, [x.shape[d] for d in dims]).r2c(x, dim, normalization, onesided)


@register(aten._fft_c2r.default, calls_extern=True)  # the vendor path
def fft_c2r_impl(x: Tensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    x = to_complex(x)
    dims = _dims(x, dim)
    sizes = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
    return _path(x, dims, sizes).c2r(x, dim, normalization, last_dim_size)
