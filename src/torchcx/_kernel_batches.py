"""Inductor's C++ kernels of one graph built as a few libraries, not one each
(Note [Kernels built together]).

Note [Kernels built together]
-----------------------------
Inductor's CPU backend builds every kernel of a graph as its own shared library:
one g++ run per kernel (``AsyncCompile.cpp_pybinding``), each of which loads the
precompiled ``cpp_prefix.h`` (about 0.4 s), compiles the kernel and links it.
A one-line kernel takes about 0.7 s, almost all of it that fixed cost. torchcx's
real graphs have more, smaller kernels than the stock compile of the same
complex program (a complex op becomes several real ones, with the layout
changes between them): neuraloperator's TFNO forward and backward have 43
distinct kernels where the stock compile has 22, and g++ took 37 s of CPU
time against 17 s (profiled 2026-12-04, one g++ at a time).

While torchcx compiles, the kernels a generated module defines are collected
instead of built one by one; when the module waits for them
(``AsyncCompile.wait``), they start building as one library, or as up to
``compile_threads`` libraries, one more for each ``SOURCE_PER_LIBRARY`` characters of
source, the kernels shared out so that the largest library is as small as it can be
made (largest kernel first, to the library with the least source so far). A g++ run
here costs about 0.6 s plus 0.015 s per 1000 characters of kernel source (16 runs,
7-67 thousand characters, 2026-12-06). Splitting a library in two saves half the
per-character part where the other core is idle (the graph built last), and costs a
second fixed cost where it is not (the forward's libraries while the backward is lowered:
Note [Backward lowered with the forward] in backend.py). A graph of a few small kernels
(a complex ``bmm``, an ``fft2``, forward and backward) compiled in 1.6 s as one library
per graph against 1.9-2.2 s as two; a backward of 50-70 thousand characters built last
(cumprod's, ``linalg.lu``'s) compiled 0.6-1.1 s faster as two libraries than as one
(``benchmarks/compile_versions.py``): a second library from 40 thousand characters.
A training graph's forward is built as one library whatever its size
(``one_library_per_graph``): its backward is lowered next and needs the other compile
thread. Split in two, the forward of ``prod`` (fwd+bwd) kept both threads busy until
after its backward's library was submitted, which then waited 0.65 s for a thread.
Each kernel keeps its source; it is
put in a namespace of its own (``extern "C"`` dropped, its ``#include`` lines
moved to the top: the prefix is included once), and the library exposes one
Python function per kernel, called as Inductor's own binding would be (the
arguments are parsed the same way: tensors to their data pointers, ``int64_t``,
``uintptr_t`` and ``float`` scalars). The libraries are built by Inductor's own
code cache (its flags, vector ISA, precompiled header, file locks and on-disk
cache; a module loaded from the FX graph cache finds its libraries there), so
what runs is the code Inductor generated, compiled the way Inductor compiles it.

The module does not wait for the builds: each kernel stands in the module's globals
until its first call, which waits for its library and puts the library's function in
its place (the generated ``call`` looks its kernels up there each time, so later calls
go straight to it). Meanwhile torchcx lowers the backward (Note [Backward lowered with
the forward] in backend.py) and Dynamo finishes: g++ runs in the compile threads while
Python does that work. Where Inductor compiles in one thread (``compile_threads`` 1),
nothing is submitted, and the first call builds the library. A library that fails to
build is found at that first call, and its kernels are built alone there.

The libraries are linked with the fastest linker installed (mold, lld or gold, which
the compiler is asked for with ``-fuse-ld``; the system's default ``ld.bfd`` otherwise).
Every library links against libtorch, libtorch_cpu and libtorch_python, and reading
their symbol tables is most of a link: on a 2-core AMD EPYC, ``ld.bfd`` took 1.0-1.5 s
per library and gold 0.35-0.45 s, of a 2.5-3.3 s g++ run (2026-12-04). The linker
changes the library's layout, not its code. A linker is used only once a trial link
with it succeeded in this process; ``config.fast_linker = False`` keeps the default.
The libraries are built without line tables (Inductor passes ``-g1`` for profilers'
source lines): generating them took 15-20% of a g++ run (0.98 -> 0.81 s for a small
kernel's library); a profiler still names each kernel function.
``config.kernel_line_tables = True`` keeps them.

Note [64-bit transposes in registers]
-------------------------------------
Inductor's tiled CPU kernels transpose a 16x16 tile through ``transpose_mxn`` from its
prefix, which ATen vectorizes for float, bfloat16 and half elements; 64-bit elements take
the scalar loop of ``vec_base.h``. The complex64 words torchcx's kernels read and write
are 64-bit, so each of their transposes (a weight permuted for a batched product, an FFT's
output read across its rows, a gradient written in its parameter's order: Note
[Gradients in their inputs' layout] in _graph_passes.py) moved its elements one at a
time, with scattered stores. Each library therefore specializes the helper for
``int64_t`` and ``double`` (complex128 pairs): 8x8 blocks in AVX-512 registers, 4x4 in
AVX2 (pairs of rows unpacked, then 128-bit lanes exchanged), the edges element by
element. The same elements move; only how. A 1024x256 transpose of words through 16x16
tiles, on a 2-core AMD EPYC (2026-12-06): 200-250 us with the scalar loop, 130-175 us in
registers. The suite's FNO step (forward and backward, one thread, against eager in the
same process): 1.39-1.46x eager without it, 1.53-1.72x with it, 1.82x with it and Note
[Gradients in their inputs' layout], whose transposed writes it makes cheap (that note
alone: 1.52-1.61x). Kernels built alone (below) keep Inductor's loop.

Note [Sines and cosines of one value]
-------------------------------------
A complex exponential or a polar value computes the sine and the cosine of the same real
value (``exp(1j * theta)``, ``x * exp(1j * abs(x))``, ``polar(r, theta)``), and Inductor
emits them as two calls, ``tmp.sin()`` and ``tmp.cos()``: ATen's vectorized sine and
cosine, Sleef's ``sinf``/``cosf`` of 3.5 ULP for float and ``sin``/``cos`` of 1 ULP for
double, each with its own argument reduction. Where one block of a kernel in a library
computes both of one float or double vector, the library computes them with one call of
Sleef's ``sincosf`` (3.5 ULP) or ``sincos`` (1 ULP), the same bounds (AVX-512 and AVX2; the
last bit may differ from the separate functions': a different evaluation, within the same
bound), and several vectors of them (a complex128 kernel's step of 16 doubles) one call
per vector; float vectors below 125 in magnitude without a call since (Note [Float math in
registers], below). Other types keep the two calls, through the same helper. A lone sine or cosine
is left alone: ``sincosf`` costs more than either (0.52 against 0.32 and 0.34 ms for 2^20
floats in a C++ loop; for 2^19 doubles, sine and cosine 1.37 ms, ``sincos`` 0.85). Only
where ATen's functions are the ones replaced (read from its headers; else nothing changes,
and one warning). Blocks are found by counting braces; were a pairing ever to cross one, the
library would not build, and its kernels would be built alone, unpaired (above).

The suite's elementwise chain at 2^20 elements, its kernel alone in a C++ loop on a 2-core
AMD EPYC (2026-12-06): 2.19-2.29 ms per call with the two calls, 1.91-1.94 ms with one
(fastest of 300 calls, 6 alternating processes each). Whole programs, one thread, both ways
compiled in one process and timed interleaved (``benchmarks/sines_and_cosines.py``): the
elementwise chain 1.11-1.14x faster from 2^16 to 2^20 elements, 1.04x at 2^14 and 2^22,
0.95-1.02x at 2^12 (a few microseconds of math in a 40 us call, within the harness's own
A/A spread); the NLS solver 1.12x; the MLP step, the rotary embedding with its frequencies
in the graph and modReLU layers, whose sines and cosines are of few values or none, within
noise.

Note [Float math in registers]
------------------------------
The suite's elementwise chain (``z = x*y + exp(1j*|x|)``, 2^20 complex64 elements) spends
most of its one kernel in two functions of each float vector: the hypot of Note [Hypot of
floats in double] (_inductor_patches.py: two square roots of 8 doubles per 16 floats) and
the sine and cosine of one Sleef ``sincosf`` call (above). Its kernel alone in a C++ loop
(one thread, a 2-core Intel Xeon VM with AVX-512, 2026-12-07): 1.90-1.98 ms per call;
1.02 ms with neither function (its loads, stores, shuffles and reduction), 1.22 ms without
the sine and cosine, 1.18 ms without the hypot. In libraries, with AVX-512 or AVX2:

* **The hypot of floats corrected in float.** With x = max(|a|, |b|) and y the other,
  h = sqrt(fma(x, x, y*y)) is within about one ULP; h - (h^2 - x^2 - y^2) / 2h (the
  correction C. F. Borges analyzed in "An improved algorithm for hypot(a, b)", 2019) is the
  exact modulus rounded once in every case measured (below), the residual computed exactly
  to its last rounding: h_sq - x_sq is exact (Sterbenz: x^2 <= h^2 <= 2 x^2) and fma gives the
  errors of h^2 and x^2. The division is a reciprocal estimate refined by one Newton step (the
  estimate alone, 2^-14, misrounded 38 of 4 million random pairs). A vector with a lane
  outside 2^-50 <= x <= 2^50 and not 0 (where a square or its error would leave float's normal
  range), or an infinity or a nan, takes the hypot in double. On 2^24 random pairs over the
  whole float range and 2^24 with nearly equal parts, every value was the double formula's,
  the exact modulus rounded once (``python benchmarks/float_math_accuracy.py``). The
  kernel as Inductor emits it keeps the double formula (a kernel built alone, or by
  AOTInductor, has no helpers); each library rewrites it to ``torchcx_hypot::of``.
* **The sine and cosine without a call.** Where every lane of a float vector is below 125
  in magnitude, ``torchcx_sincos::of`` reduces it by pi/2 (Cody-Waite, three parts of pi/2,
  exact products for |q| <= 80) and evaluates two polynomials torchcx fitted (sine of degree 7
  in r, cosine of 8), then swaps and signs them by quadrant; other vectors call Sleef's
  ``sincosf``, as before. Largest error over every float in [0, 125), against float64's
  sine and cosine: 2.07 ULP (sine) and 2.04 (cosine), within the 3.5-ULP bound of ATen's
  vectorized ``sin``/``cos`` that Inductor's kernels use and of ``sincosf`` (measured: up
  to 2.19 and 2.50 ULP on samples); eager's complex ``exp`` is glibc's ``cexpf`` element by
  element (ATen's ``map(std::exp)``), eager's real ``sin`` measured 0.60 ULP. Double vectors
  keep Sleef's ``sincos``.

Lane tests and selections are written per instruction set (``torchcx_lanes``): at::vec's
compares return vectors of all-ones lanes, turned back into masks by its blends, and written
so the same helpers ran 4-5% slower in this kernel (1.73-1.76 against 1.66 ms). The chain's
kernel: 1.90-1.98 ms before, 1.66-1.71 ms with both (1.16-1.21x); whole programs in
``benchmarks/float_math.py``. ``_FLOAT_MATH_IN_REGISTERS = False`` (that benchmark's other
mode) keeps the double hypot and the ``sincosf`` call.

Note [Bfloat16 rounding in one instruction]
-------------------------------------------
A kernel that stores bfloat16 computes in float and rounds each vector of 32 results with
ATen's ``convert<BFloat16, 1, float, 2>``: the rounding written in integer arithmetic
(``bits + 0x7fff + lsb``, then NaNs blended to ``0xffff``), about 17 instructions for 32
values. AVX-512 BF16 (AMD Zen 4, Intel Cooper Lake and Sapphire Rapids on) rounds them in
one, ``vcvtne2ps2bf16``, the same rounding (to nearest even, overflow to infinity) except
on two kinds of input: it flushes subnormal floats to zero, and keeps a NaN's sign and
payload where ATen writes ``0xffff``. Where a library is built with that instruction set
(Inductor adds ``-mavx512bf16`` where the CPU has it), each such conversion tests its two
vectors for NaNs and subnormals (``vfpclassps``, one instruction each) and rounds them in
one instruction if there are none, by ATen's code otherwise: the same bits either way.
The conversions of one vector (``convert<BFloat16, 1, float, 1>``) likewise. Elsewhere
the helper is ATen's conversion itself. Only where ATen's conversion is the integer one
(read from its headers; else nothing changes, and one warning).

The rotary embedding in bfloat16 stores two such conversions per 32 pairs of q and of k
and does little else: of about 130 vector instructions per 32 pairs, 68 were rounding. At
B4 T512 H8 D64 it took 0.39 ms with ATen's rounding and 0.30 ms with the instruction (one
thread, AMD Zen 4, 2026-12-07, ``benchmarks/bfloat16_rounding.py``); 1.14x at 2^16 elements,
1.25x at 2^18; the NLS solver in bfloat16 parts, whose time is its FFTs, 1.01x.

A kernel whose source has a preprocessor directive other than ``#include`` and
``#pragma``, or whose argument types Inductor's binding would not parse, is
built alone by Inductor, as is every kernel of a library that fails to build
(so a kernel that does not compile raises Inductor's own error, naming its
source). ``config.batch_kernels = False`` builds every kernel alone.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._patching import cannot_apply, patched_for_this_thread
from ._streaming_stores import HELPERS as STREAMING_HELPERS
from ._streaming_stores import streamed

log = logging.getLogger(__name__)

_ENTRY = re.compile(r'extern\s+"C"\s+void\s+kernel\s*\(')
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)", re.MULTILINE)
#: The scalar argument types Inductor's Python binding parses (besides pointers).
_SCALARS = ("int64_t", "uintptr_t", "float")
_PENDING = "_torchcx_pending_kernels"  # the attribute each AsyncCompile keeps its kernels in
#: Characters of kernel source worth one more library, and g++ run, than the first (Note
#: [Kernels built together], measured).
SOURCE_PER_LIBRARY = 40_000

#: ``one`` is True while a graph whose libraries should not take both compile threads is lowered.
_ONE_LIBRARY = threading.local()


@contextlib.contextmanager
def one_library_per_graph() -> Iterator[None]:
    """The kernels of the graph lowered meanwhile (by this thread) built as one library
    (Note [Kernels built together]: a training graph's forward, before its backward)."""
    previous = getattr(_ONE_LIBRARY, "one", False)
    _ONE_LIBRARY.one = True
    try:
        yield
    finally:
        _ONE_LIBRARY.one = previous


def batchable(argtypes: Sequence[str], source: str) -> bool:
    """True if the kernel can share a library (Note [Kernels built together])."""
    if len(_ENTRY.findall(source)) != 1:
        return False
    if any(d not in ("include", "pragma") for d in _DIRECTIVE.findall(source)):
        return False
    return all(_parsed_type(t).endswith("*") or _parsed_type(t) in _SCALARS for t in argtypes)


def _parsed_type(argtype: str) -> str:
    return argtype.replace("const ", "").strip()


def library_source(kernels: Sequence[tuple[Sequence[str], str]]) -> str:
    """One translation unit for ``kernels`` ((argtypes, source) each, all ``batchable``): kernel
    ``i`` as ``torchcx_kernel_<i>::kernel``, called by the module's function ``kernel_<i>``."""
    includes: list[str] = []
    bodies: list[str] = []
    for i, (_, source) in enumerate(kernels):
        lines = []
        for line in source.splitlines():
            if re.match(r"^\s*#\s*include\b", line):
                if line.strip() not in includes:
                    includes.append(line.strip())
            else:
                lines.append(line)
        body = _ENTRY.sub("void kernel(", "\n".join(lines), count=1)
        if sines_and_cosines():
            body = sine_and_cosine_once(body)
        if hypots():
            body = hypots_corrected(body)
        if bfloat16_rounding():
            body = bfloat16_rounded_in_one_instruction(body)
        body = streamed(body)
        bodies.append(f"namespace torchcx_kernel_{i} {{\n{body}\n}}  // namespace torchcx_kernel_{i}\n")
    bindings = [_binding(i, argtypes) for i, (argtypes, _) in enumerate(kernels)]
    methods = "".join(f'    {{"kernel_{i}", kernel_{i}_py, METH_VARARGS, ""}},\n' for i in range(len(kernels)))
    return "\n".join(
        [
            *includes,
            transposes_64(),
            float_lanes(),
            sines_and_cosines(),
            hypots(),
            bfloat16_rounding(),
            STREAMING_HELPERS,
            *bodies,
            _BINDING_PREFIX,
            *bindings,
            _BINDING_MODULE.format(methods=methods),
        ]
    )


def _binding(i: int, argtypes: Sequence[str]) -> str:
    args = ", ".join(f"torchcx_bindings::arg<{_parsed_type(t)}>(args, {n})" for n, t in enumerate(argtypes))
    return (
        f"static PyObject* kernel_{i}_py(PyObject*, PyObject* args) {{\n"
        f"    return torchcx_bindings::call(args, {len(argtypes)}, [&] {{ torchcx_kernel_{i}::kernel({args}); }});\n"
        "}\n"
    )


# Note [64-bit transposes in registers]: after the prefix, before the first kernel uses the helper.
_TRANSPOSES_64 = r"""
#if INDUCTOR_USE_VECTOR_TYPES() && (defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2))
#include <immintrin.h>
namespace torchcx_transpose {
#if defined(CPU_CAPABILITY_AVX512)
constexpr int kBlock = 8;
// An 8x8 block of 64-bit elements: rows paired by unpacklo/hi (2x2 blocks), then 128-bit
// lanes exchanged twice (4x4, then 8x8 blocks).
inline void block(const int64_t* src, int64_t ld_src, int64_t* dst, int64_t ld_dst) {
  __m512i r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_si512(src + i * ld_src);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_epi64(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi64(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm512_shuffle_i64x2(t[i], t[i + 2], 0x88);
    r[i + 1] = _mm512_shuffle_i64x2(t[i + 1], t[i + 3], 0x88);
    r[i + 2] = _mm512_shuffle_i64x2(t[i], t[i + 2], 0xdd);
    r[i + 3] = _mm512_shuffle_i64x2(t[i + 1], t[i + 3], 0xdd);
  }
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_i64x2(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_i64x2(r[i], r[i + 4], 0xdd);
  }
  for (int i = 0; i < 8; i++) _mm512_storeu_si512(dst + i * ld_dst, t[i]);
}
#else
constexpr int kBlock = 4;
// A 4x4 block: rows paired by unpacklo/hi, then 128-bit halves exchanged.
inline void block(const int64_t* src, int64_t ld_src, int64_t* dst, int64_t ld_dst) {
  __m256i r[4], t[4];
  for (int i = 0; i < 4; i++) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * ld_src));
  t[0] = _mm256_unpacklo_epi64(r[0], r[1]);
  t[1] = _mm256_unpackhi_epi64(r[0], r[1]);
  t[2] = _mm256_unpacklo_epi64(r[2], r[3]);
  t[3] = _mm256_unpackhi_epi64(r[2], r[3]);
  r[0] = _mm256_permute2x128_si256(t[0], t[2], 0x20);
  r[1] = _mm256_permute2x128_si256(t[1], t[3], 0x20);
  r[2] = _mm256_permute2x128_si256(t[0], t[2], 0x31);
  r[3] = _mm256_permute2x128_si256(t[1], t[3], 0x31);
  for (int i = 0; i < 4; i++) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i * ld_dst), r[i]);
}
#endif
template <typename T>
inline void transpose(const T* src, int64_t ld_src, T* dst, int64_t ld_dst, int M, int N) {
  static_assert(sizeof(T) == sizeof(int64_t));
  const int Mb = M - M % kBlock, Nb = N - N % kBlock;
  for (int i = 0; i < Mb; i += kBlock)
    for (int j = 0; j < Nb; j += kBlock)
      block(reinterpret_cast<const int64_t*>(src + i * ld_src + j), ld_src,
            reinterpret_cast<int64_t*>(dst + j * ld_dst + i), ld_dst);
  for (int i = 0; i < M; i++)  // the edges
    for (int j = i < Mb ? Nb : 0; j < N; j++) dst[j * ld_dst + i] = src[i * ld_src + j];
}
}  // namespace torchcx_transpose
template <>
struct transpose_mxn_helper<int64_t, false> {
  static void call(const int64_t* src, int64_t ld_src, int64_t* dst, int64_t ld_dst, int M, int N) {
    torchcx_transpose::transpose(src, ld_src, dst, ld_dst, M, N);
  }
};
template <>
struct transpose_mxn_helper<double, false> {
  static void call(const double* src, int64_t ld_src, double* dst, int64_t ld_dst, int M, int N) {
    torchcx_transpose::transpose(src, ld_src, dst, ld_dst, M, N);
  }
};
#endif
"""


@functools.cache
def transposes_64() -> str:
    """Note [64-bit transposes in registers]: the specializations, where Inductor's prefix
    declares the helper they specialize (else nothing, and one warning)."""
    import torch

    try:
        from torch._inductor.codecache import _get_cpp_prefix_header
    except ImportError:  # pragma: no cover - Inductor's layout changed
        _get_cpp_prefix_header = None
    header = _get_cpp_prefix_header("cpu") if _get_cpp_prefix_header is not None else None
    path = os.path.join(os.path.dirname(torch.__file__), "include", header or "")
    if not header or not os.path.isfile(path):
        cannot_apply("64-bit transposes in registers", f"Inductor's C++ prefix header {header!r} was not found")
        return ""
    with open(path) as f:
        prefix = f.read()
    if "struct transpose_mxn_helper" not in prefix:
        cannot_apply("64-bit transposes in registers", "cpp_prefix.h declares no transpose_mxn_helper")
        return ""
    return _TRANSPOSES_64


# Note [Float math in registers]: the lane tests and selections its helpers need, per
# instruction set (at::vec's compare-and-blend goes through a vector of all-ones lanes, and
# measured slower in these loops), after the prefix, before the helpers.
_FLOAT_LANES = r"""
#if INDUCTOR_USE_VECTOR_TYPES() && (defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2))
namespace torchcx_lanes {
using F = at::vec::Vectorized<float>;
using I = at::vec::Vectorized<int32_t>;
#if defined(CPU_CAPABILITY_AVX512)
constexpr int kAll = 0xffff;
inline int below(const F& x, float hi) { return _mm512_cmp_ps_mask(x, _mm512_set1_ps(hi), _CMP_LT_OQ); }
inline int zero_or_from(const F& x, float lo) {
  return _mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_GE_OQ) | _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
}
// b where q is odd, else a.
inline F where_odd(const I& q, const F& a, const F& b) {
  return _mm512_mask_blend_ps(_mm512_test_epi32_mask(q, _mm512_set1_epi32(1)), a, b);
}
// x where x is zero (keeping its sign), else a.
inline F where_zero(const F& x, const F& a) {
  return _mm512_mask_mov_ps(a, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), x);
}
inline F reciprocal_estimate(const F& d) { return _mm512_rcp14_ps(d); }  // to 2^-14
#else
constexpr int kAll = 0xff;
inline int below(const F& x, float hi) { return _mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(hi), _CMP_LT_OQ)); }
inline int zero_or_from(const F& x, float lo) {
  __m256 from = _mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_GE_OQ);
  return _mm256_movemask_ps(_mm256_or_ps(from, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ)));
}
inline F where_odd(const I& q, const F& a, const F& b) {
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(q, 31)));  // (by the sign bit)
}
inline F where_zero(const F& x, const F& a) {
  return _mm256_blendv_ps(a, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
}
inline F reciprocal_estimate(const F& d) { return _mm256_rcp_ps(d); }  // to 1.5 * 2^-12
#endif
}  // namespace torchcx_lanes
#endif
"""

# Note [Sines and cosines of one value]: after the prefix and the lanes, before the kernels.
_SINES_AND_COSINES = r"""
namespace torchcx_sincos {
template <typename T>
struct SinCos {
  T sin, cos;
};
template <typename T>
inline SinCos<T> of(const T& x) {
  return {x.sin(), x.cos()};
}
// One Sleef call for a vector of T: both results of sincos.
#define TORCHCX_SINCOS(T, sincos)                                                    \
  inline SinCos<at::vec::Vectorized<T>> sleef(const at::vec::Vectorized<T>& x) { \
    auto r = sincos(x);                                                              \
    return {r.x, r.y};                                                               \
  }
#if INDUCTOR_USE_VECTOR_TYPES() && defined(CPU_CAPABILITY_AVX512)
TORCHCX_SINCOS(float, Sleef_sincosf16_u35)
TORCHCX_SINCOS(double, Sleef_sincosd8_u10)
#elif INDUCTOR_USE_VECTOR_TYPES() && defined(CPU_CAPABILITY_AVX2)
TORCHCX_SINCOS(float, Sleef_sincosf8_u35)
TORCHCX_SINCOS(double, Sleef_sincosd4_u10)
#endif
#undef TORCHCX_SINCOS
#if INDUCTOR_USE_VECTOR_TYPES() && (defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2))
inline SinCos<at::vec::Vectorized<double>> of(const at::vec::Vectorized<double>& x) {
  return sleef(x);
}
// Note [Float math in registers]. x = q pi/2 + r, |r| <= pi/4 (q rounded to nearest): pi/2
// in three parts (16, 16 and 24 bits), so that q * part 1 and q * part 2 are exact for |q|
// <= 80 and each fma removes its part with one rounding; sin r = r + r^3 P(r^2) and
// cos r = 1 + r^2 Q(r^2) (P of degree 2 and Q of 3, least-error fits by torchcx on
// |r| <= pi/4, which add under 0.1 ULP before rounding); then the quadrant q mod 4 swaps
// them and sets their signs. |x| >= 125 (where q * part 2 is no longer exact), an
// infinity or a nan: Sleef's sincosf for the whole vector.
inline SinCos<at::vec::Vectorized<float>> of(const at::vec::Vectorized<float>& x) {
#if TORCHCX_FLOAT_MATH_IN_REGISTERS
  using F = at::vec::Vectorized<float>;
  using I = at::vec::Vectorized<int32_t>;
  if (torchcx_lanes::below(x.abs(), 125.f) != torchcx_lanes::kAll) {
    return sleef(x);
  }
  F q = (x * F(0.636619772f)).round();
  F r = at::vec::fmadd(q, F(-1.570770263671875f), x);
  r = at::vec::fmadd(q, F(-2.6063062250614166e-05f), r);
  r = at::vec::fmadd(q, F(-6.07710062827671e-11f), r);
  F u = r * r;
  F p = at::vec::fmadd(u, F(-1.9587983842939138e-04f), F(8.332748897373676e-03f));
  p = at::vec::fmadd(u, p, F(-0.166666641831398f));
  F s = at::vec::fmadd(r * u, p, r);
  F c = at::vec::fmadd(u, F(2.4463852241751738e-05f), F(-1.388759003020823e-03f));
  c = at::vec::fmadd(u, c, F(4.166664928197861e-02f));
  c = at::vec::fmadd(u, c, F(-0.5f));
  c = at::vec::fmadd(u, c, F(1.f));
  I quadrant = at::vec::convert<int32_t>(q);
  F sin = torchcx_lanes::where_odd(quadrant, s, c);
  F cos = torchcx_lanes::where_odd(quadrant, c, s);
  // The sine is negative in quadrants 2 and 3, the cosine in 1 and 2: bit 1 of q, of q + 1.
  sin = sin ^ at::vec::cast<float>((quadrant & I(2)) << I(30));
  cos = cos ^ at::vec::cast<float>(((quadrant + I(1)) & I(2)) << I(30));
  return {torchcx_lanes::where_zero(x, sin), cos};  // sin(-0) = -0, where r is +0
#else
  return sleef(x);
#endif
}
#endif
#if INDUCTOR_USE_VECTOR_TYPES()
// Several vectors (a complex128 kernel's doubles, 16 to a step): each vector as above.
template <typename T, int N>
inline SinCos<at::vec::VectorizedN<T, N>> of(const at::vec::VectorizedN<T, N>& x) {
  SinCos<at::vec::VectorizedN<T, N>> r;
  for (int i = 0; i < N; i++) {
    auto p = of(x[i]);
    r.sin[i] = p.sin;
    r.cos[i] = p.cos;
  }
  return r;
}
#endif
}  // namespace torchcx_sincos
"""

# Note [Float math in registers]: the hypot of float vectors, as emitted (in double) and as
# corrected in float, after the lanes, before the kernels.
_HYPOTS = r"""
#if INDUCTOR_USE_VECTOR_TYPES()
namespace torchcx_hypot {
inline at::vec::Vectorized<float> in_double(const at::vec::Vectorized<float>& re, const at::vec::Vectorized<float>& im) {
  return HYPOT_IN_DOUBLE;
}
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
// Note [Float math in registers]: h = sqrt(x^2 + y^2) in float (x = max(|a|, |b|), y the
// other), then h - (h^2 - x^2 - y^2) / 2h, the residual exact to its rounding: h_sq - x_sq
// is exact (Sterbenz: x^2 <= h^2 <= 2 x^2), fma gives the exact errors of h^2 and x^2, and
// the reciprocal is an estimate refined by one Newton step (to about 2^-24; its error enters
// at 2^-24 of it). Where every lane has 2^-50 <= x <= 2^50 or x = 0 (the squares and their
// errors normal or zero): else, or for an infinity or a nan, in double.
inline at::vec::Vectorized<float> of(const at::vec::Vectorized<float>& a, const at::vec::Vectorized<float>& b) {
  using F = at::vec::Vectorized<float>;
  F x = at::vec::clamp_min(a.abs(), b.abs()), y = at::vec::clamp_max(a.abs(), b.abs());
  // (|a| + |b|: a nan in either, which the max and min may drop)
  if ((torchcx_lanes::below(a.abs() + b.abs(), 0x1p50f) & torchcx_lanes::zero_or_from(x, 0x1p-50f)) !=
      torchcx_lanes::kAll) {
    return in_double(a, b);
  }
  F h = at::vec::fmadd(x, x, y * y).sqrt();
  F h_sq = h * h, x_sq = x * x;
  F residual = at::vec::fmadd(-y, y, h_sq - x_sq) + (at::vec::fmsub(h, h, h_sq) - at::vec::fmsub(x, x, x_sq));
  F d = at::vec::clamp_min(h + h, F(std::numeric_limits<float>::min()));  // (h = 0: residual 0)
  F inverse = torchcx_lanes::reciprocal_estimate(d);
  inverse = at::vec::fmadd(inverse, at::vec::fmadd(-d, inverse, F(1.f)), inverse);
  return at::vec::fmadd(-residual, inverse, h);
}
#else
inline at::vec::Vectorized<float> of(const at::vec::Vectorized<float>& a, const at::vec::Vectorized<float>& b) {
  return in_double(a, b);
}
#endif
template <int N>
inline at::vec::VectorizedN<float, N> of(const at::vec::VectorizedN<float, N>& a, const at::vec::VectorizedN<float, N>& b) {
  at::vec::VectorizedN<float, N> r;
  for (int i = 0; i < N; i++) r[i] = of(a[i], b[i]);
  return r;
}
}  // namespace torchcx_hypot
#endif
"""

#: ATen's float and double sine and cosine, per vector header: the functions one ``sincos``
#: call replaces must be these (Note [Sines and cosines of one value]).
_ATEN_SIN_COS = {
    "vec512/vec512_float.h": ("Sleef_sinf16_u35(values)", "Sleef_cosf16_u35(values)"),
    "vec256/vec256_float.h": ("Sleef_sinf8_u35(values)", "Sleef_cosf8_u35(values)"),
    "vec512/vec512_double.h": ("Sleef_sind8_u10(values)", "Sleef_cosd8_u10(values)"),
    "vec256/vec256_double.h": ("Sleef_sind4_u10(values)", "Sleef_cosd4_u10(values)"),
}


@functools.cache
def sines_and_cosines() -> str:
    """Note [Sines and cosines of one value]: the helper, where ATen's sines and cosines are
    the Sleef functions it replaces (else nothing, and one warning)."""
    return _SINES_AND_COSINES if _aten_headers_have("Sines and cosines of one value", _ATEN_SIN_COS) else ""


#: Note [Float math in registers]; switched off by a benchmark that compares with the calls.
_FLOAT_MATH_IN_REGISTERS = True


def float_lanes() -> str:
    """Note [Float math in registers]: its switch and lane helpers, for the helpers after them."""
    return f"#define TORCHCX_FLOAT_MATH_IN_REGISTERS {int(_FLOAT_MATH_IN_REGISTERS)}\n{_FLOAT_LANES}"


def hypot_in_double(a: str, b: str, lanes: int) -> str:
    """The vectorized float hypot of ``a`` and ``b`` (``lanes`` vectors each) as Note [Hypot of
    floats in double] (_inductor_patches.py) emits it: ``sqrt(double(a)^2 + double(b)^2)``
    rounded to float, an infinite operand blended in (C99: ``hypot(inf, nan) = inf``)."""
    wide = f"at::vec::convert<double, {2 * lanes}, float, {lanes}>"
    return (
        f"[&] {{ using V = std::decay_t<decltype({a})>; "
        f"auto a = {wide}({a}); auto b = {wide}({b}); "
        f"V r = at::vec::convert<float, {lanes}, double, {2 * lanes}>((a * a + b * b).sqrt()); "
        "V inf(std::numeric_limits<float>::infinity()); "
        f"return V::blendv(r, inf, (V({a}).abs() == inf) | (V({b}).abs() == inf)); }}()"
    )


def _hypot_in_double_pattern() -> re.Pattern[str]:
    a, b, n = "\x00A\x00", "\x00B\x00", 7919  # placeholders, replaced by groups below
    pattern = re.escape(hypot_in_double(a, b, n))
    for placeholder, name in ((a, "a"), (b, "b")):
        escaped = re.escape(placeholder)
        pattern = pattern.replace(escaped, f"(?P<{name}>[\\w:<>, ]+?)", 1).replace(escaped, f"(?P={name})")
    for number in (str(2 * n), str(n)):
        pattern = pattern.replace(number, r"\d+")
    return re.compile(pattern)


_HYPOT_IN_DOUBLE = _hypot_in_double_pattern()


#: The helper's source, its fallback the very formula it replaces (built once).
_HYPOTS_SOURCE = _HYPOTS.replace("HYPOT_IN_DOUBLE", hypot_in_double("re", "im", 1))


def hypots() -> str:
    """Note [Float math in registers]: the hypot helper, where float math in registers is on."""
    return _HYPOTS_SOURCE if _FLOAT_MATH_IN_REGISTERS else ""


def hypots_corrected(body: str) -> str:
    """``body`` with each vectorized float hypot emitted in double computed by
    ``torchcx_hypot::of`` (Note [Float math in registers])."""
    return _HYPOT_IN_DOUBLE.sub(lambda m: f"torchcx_hypot::of({m.group('a')}, {m.group('b')})", body)


def _aten_headers_have(adjustment: str, lines_by_header: dict[str, tuple[str, ...]]) -> bool:
    """Whether each of ATen's vector headers (``ATen/cpu/vec/<header>``) has each of its lines:
    the code an adjustment replaces. Else False, and one warning naming the first missing line."""
    import torch

    root = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "cpu", "vec")
    for header, lines in lines_by_header.items():
        path = Path(root, header)
        text = path.read_text() if path.is_file() else ""
        missing = [line for line in lines if line not in text]
        if missing:
            cannot_apply(adjustment, f"ATen's {header} does not have {missing[0]!r}")
            return False
    return True


_SIN_OR_COS = re.compile(r"^(\s*)auto (tmp\d+) = (tmp\d+)\.(sin|cos)\(\);$")


def sine_and_cosine_once(body: str) -> str:
    """``body`` with each ``tmp.sin()`` and ``tmp.cos()`` of one value in one block computed
    by one ``torchcx_sincos::of(tmp)`` (Note [Sines and cosines of one value])."""
    lines = body.split("\n")
    blocks, opened = [0], 0
    # (block, value) -> "sin"/"cos" -> (line, indent, result)
    found: dict[tuple[int, str], dict[str, tuple[int, str, str]]] = {}
    for i, line in enumerate(lines):
        match = _SIN_OR_COS.match(line)
        if match:
            indent, result, value, fn = match.groups()
            found.setdefault((blocks[-1], value), {})[fn] = (i, indent, result)
        for c in line:
            if c == "{":
                opened += 1
                blocks.append(opened)
            elif c == "}" and len(blocks) > 1:
                blocks.pop()
    for (_, value), calls in found.items():
        if len(calls) < 2:
            continue
        pair = f"torchcx_sincos_{value}"
        first = min(i for i, _, _ in calls.values())
        for fn, (i, indent, result) in calls.items():
            computed = f"auto {pair} = torchcx_sincos::of({value}); " if i == first else ""
            lines[i] = f"{indent}{computed}auto {result} = {pair}.{fn};"
    return "\n".join(lines)


# Note [Bfloat16 rounding in one instruction]: after the prefix, before the kernels.
_BFLOAT16_ROUNDING = r"""
#if INDUCTOR_USE_VECTOR_TYPES()
namespace torchcx_bf16 {
#if defined(CPU_CAPABILITY_AVX512) && defined(__AVX512BF16__)
// The lanes vcvtne2ps2bf16 rounds otherwise than ATen: quiet NaN (0x01), subnormal (0x20),
// signalling NaN (0x80).
constexpr int kRoundedByAten = 0x01 | 0x20 | 0x80;
inline at::vec::VectorizedN<at::BFloat16, 1> round2(const at::vec::VectorizedN<float, 2>& x) {
  __m512 lo = x[0], hi = x[1];
  if (C10_LIKELY((_mm512_fpclass_ps_mask(lo, kRoundedByAten) | _mm512_fpclass_ps_mask(hi, kRoundedByAten)) == 0)) {
    at::vec::VectorizedN<at::BFloat16, 1> r;
    r[0] = at::vec::Vectorized<at::BFloat16>((__m512i)_mm512_cvtne2ps_pbh(hi, lo));  // lo in the low half
    return r;
  }
  return at::vec::convert<at::BFloat16, 1, float, 2>(x);
}
inline at::vec::VectorizedN<at::BFloat16, 1> round1(const at::vec::VectorizedN<float, 1>& x) {
  __m512 v = x[0];
  if (C10_LIKELY(_mm512_fpclass_ps_mask(v, kRoundedByAten) == 0)) {
    at::vec::VectorizedN<at::BFloat16, 1> r;
    r[0] = at::vec::Vectorized<at::BFloat16>(_mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(v)));
    return r;
  }
  return at::vec::convert<at::BFloat16, 1, float, 1>(x);
}
#else
// ATen's conversions themselves; templates, so that only those a kernel calls are compiled
// (another vector width has other conversions).
template <typename T>
inline auto round2(const T& x) {
  return at::vec::convert<at::BFloat16, 1, float, 2>(x);
}
template <typename T>
inline auto round1(const T& x) {
  return at::vec::convert<at::BFloat16, 1, float, 1>(x);
}
#endif
}  // namespace torchcx_bf16
#endif
"""

#: ATen's float -> bfloat16 conversions, and the integer rounding they use, that
#: ``torchcx_bf16`` replaces (Note [Bfloat16 rounding in one instruction]).
_ATEN_BF16_ROUNDING = {
    "vec512/vec512_convert.h": (
        "struct VecConvert<BFloat16, 1, float, 1>",
        "result[0] = _mm512_castsi256_si512(cvtfp32_bf16(src[0]));",
        "struct VecConvert<BFloat16, 1, float, 2>",
        "result[0] = convert_float_bfloat16(src[0], src[1]);",
    ),
    "vec512/vec512_bfloat16.h": (
        "// uint32_t rounding_bias = 0x7fff + lsb;",
        "__m512i nan = _mm512_set1_epi32(0xffff);",
        "return cvtfp32_bf16(a, b);",
    ),
}

#: Switched off by a test or benchmark that compares with ATen's rounding.
_ROUND_BF16_IN_ONE_INSTRUCTION = True


@functools.cache
def _bfloat16_rounding_checked() -> bool:
    return _aten_headers_have("Bfloat16 rounding in one instruction", _ATEN_BF16_ROUNDING)


def bfloat16_rounding() -> str:
    """Note [Bfloat16 rounding in one instruction]: the helper, where ATen rounds floats to
    bfloat16 in integer arithmetic (else nothing, and one warning)."""
    return _BFLOAT16_ROUNDING if _ROUND_BF16_IN_ONE_INSTRUCTION and _bfloat16_rounding_checked() else ""


_BF16_CONVERSION = re.compile(r"at::vec::convert<at::BFloat16,\s*1,\s*float,\s*([12])>\(")


def bfloat16_rounded_in_one_instruction(body: str) -> str:
    """``body`` with ATen's vector conversions of float to bfloat16 made through
    ``torchcx_bf16`` (Note [Bfloat16 rounding in one instruction])."""
    return _BF16_CONVERSION.sub(lambda m: f"torchcx_bf16::round{m.group(1)}(", body)


# Arguments are parsed as Inductor's own kernel bindings parse them (codecache.py,
# CppPythonBindingsCodeCache): a tensor to its data pointer, through the function whose
# address Inductor publishes in _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR (it avoids the
# torch headers).
_BINDING_PREFIX = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>

namespace torchcx_bindings {
static void* (*tensor_data)(PyObject* tensor) = nullptr;

template <typename T> static inline T arg(PyObject* args, Py_ssize_t n) {
    static_assert(std::is_pointer_v<T>, "a kernel argument is a pointer or a scalar");
    return static_cast<T>(tensor_data(PyTuple_GET_ITEM(args, n)));
}
template <> inline int64_t arg<int64_t>(PyObject* args, Py_ssize_t n) {
    auto value = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if (value == -1 && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return value;
}
template <> inline uintptr_t arg<uintptr_t>(PyObject* args, Py_ssize_t n) {
    auto value = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if (value == reinterpret_cast<void*>(-1) && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return reinterpret_cast<uintptr_t>(value);
}
template <> inline float arg<float>(PyObject* args, Py_ssize_t n) {
    auto value = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if (value == -1.0 && PyErr_Occurred()) throw std::runtime_error("expected a float argument");
    return static_cast<float>(value);
}

template <typename F> static PyObject* call(PyObject* args, Py_ssize_t count, F&& kernel) {
    try {
        if (!PyTuple_CheckExact(args)) throw std::runtime_error("tuple args required");
        if (PyTuple_GET_SIZE(args) != count) throw std::runtime_error("wrong number of kernel arguments");
        kernel();
        Py_RETURN_NONE;
    } catch (std::exception const& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
    }
    return nullptr;
}
}  // namespace torchcx_bindings
"""

# (Inductor loads the library as the module "<key>.kernel": PyInit_kernel)
_BINDING_MODULE = r"""
static PyMethodDef torchcx_methods[] = {{
{methods}    {{nullptr, nullptr, 0, nullptr}}}};

static struct PyModuleDef torchcx_module = {{PyModuleDef_HEAD_INIT, "kernel", nullptr, -1, torchcx_methods}};

PyMODINIT_FUNC PyInit_kernel(void) {{
    const char* address = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    char* end = nullptr;
    errno = 0;
    uintptr_t value = address ? std::strtoull(address, &end, 10) : 0;
    if (!address || errno != 0 || end == address || value == 0) {{
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR is not set");
        return nullptr;
    }}
    torchcx_bindings::tensor_data = reinterpret_cast<decltype(torchcx_bindings::tensor_data)>(value);
    PyObject* module = PyModule_Create(&torchcx_module);
#ifdef Py_GIL_DISABLED
    if (module != nullptr) PyUnstable_Module_SetGIL(module, Py_MOD_GIL_NOT_USED);
#endif
    return module;
}}
"""


def shares(sizes: Sequence[int], libraries: int) -> list[list[int]]:
    """Indices of ``sizes`` shared out among at most ``libraries`` groups, largest first to the
    smallest group so far (each group in its original order)."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(libraries, len(sizes))))]
    totals = [0] * len(groups)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        smallest = totals.index(min(totals))
        groups[smallest].append(i)
        totals[smallest] += sizes[i]
    return [sorted(g) for g in groups if g]


class _Library:
    """Kernels built as one library; built alone each (Inductor's way) if it fails to build."""

    def __init__(self, kernels: list[tuple[Sequence[str], str]], submit: Callable[..., Any] | None) -> None:
        from torch._inductor import config as inductor_config
        from torch._inductor.codecache import CppPythonBindingsCodeCache

        from . import config

        self.kernels = kernels
        self.functions: list[Callable[..., Any]] | None = None
        try:
            # (the flags are read here, where the build's options and cache key are made)
            with inductor_config.patch({"aot_inductor.enable_line_tables": config.kernel_line_tables}):
                self._load = CppPythonBindingsCodeCache.load_async(
                    library_source(kernels), "cpu", submit_fn=submit, extra_flags=linker_flags()
                )
        except Exception as error:  # (writing the source failed: build alone)
            self._load = None
            _failed(len(kernels), error)

    def function(self, i: int) -> Callable[..., Any]:
        if self.functions is None:
            self.functions = self._built()
        return self.functions[i]

    def _built(self) -> list[Callable[..., Any]]:
        from torch._inductor.codecache import CppPythonBindingsCodeCache

        if self._load is not None:
            try:
                module = self._load()
                return [getattr(module, f"kernel_{i}") for i in range(len(self.kernels))]
            except Exception as error:
                _failed(len(self.kernels), error)
        return [CppPythonBindingsCodeCache.load_pybinding(list(a), s) for a, s in self.kernels]


#: Linkers faster than ld.bfd, fastest first (Note [Kernels built together]).
_LINKERS = ("mold", "lld", "gold")


def linker_flags() -> tuple[str, ...]:
    """``("-fuse-ld=<linker>",)`` for the fastest linker that works here, or ``()``."""
    from . import config

    return _fast_linker() if config.fast_linker else ()


@functools.cache
def _fast_linker() -> tuple[str, ...]:
    if not sys.platform.startswith("linux"):
        return ()
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        compiler = get_cpp_compiler()
    except Exception:  # noqa: BLE001  (Inductor's layout changed, or no compiler: keep its default)
        return ()
    for linker in _LINKERS:
        if shutil.which(f"ld.{linker}") is None and shutil.which(linker) is None:
            continue
        flag = f"-fuse-ld={linker}"
        if _links(compiler, flag):
            return (flag,)
    return ()


def _links(compiler: str, flag: str) -> bool:
    """Whether ``compiler`` links a shared library with ``flag``."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.cpp")
        with open(source, "w") as f:
            f.write("int torchcx_probe() { return 0; }\n")
        command = [compiler, flag, "-shared", "-fPIC", source, "-o", os.path.join(tmp, "probe.so")]
        try:
            return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


def _failed(count: int, error: Exception) -> None:
    # (a kernel that does not compile raises Inductor's own error next, when it is built alone)
    first_line = next(iter(str(error).splitlines()), type(error).__name__)
    log.warning(
        "torchcx: building %d kernels as one library failed (%s): building them alone (Note [Kernels built together])",
        count,
        first_line,
    )


class BatchedKernel:
    """A kernel whose library starts building when its module is loaded (``AsyncCompile.wait``),
    and which stands for the library's function in the module until its first call."""

    def __init__(self, pending: _Pending, argtypes: Sequence[str], source: str) -> None:
        self.pending = pending
        self.argtypes = argtypes
        self.source = source
        self.library: _Library | None = None
        self.index = -1
        self.scope: dict[str, Any] | None = None  # the module's globals, where it stands as ``name``
        self.name = ""

    def result(self) -> Callable[..., Any]:
        if self.library is None:
            self.pending.build()
        assert self.library is not None
        return self.library.function(self.index)

    def bind_at_first_call(self, scope: dict[str, Any], name: str) -> None:
        """``scope[name]`` (the generated module's global) becomes the library's function at
        this kernel's first call, which waits for its build; later calls go to it directly."""
        self.scope, self.name = scope, name
        scope[name] = self

    def __call__(self, *args: Any) -> Any:
        function = self.result()
        if self.scope is not None:
            self.scope[self.name] = function
        return function(*args)


class _Pending:
    """The kernels one generated module defined and has not waited for yet."""

    def __init__(self, submit: Callable[..., Any] | None, libraries: int) -> None:
        self.submit = submit
        self.libraries = libraries
        self.kernels: list[BatchedKernel] = []

    def add(self, argtypes: Sequence[str], source: str) -> BatchedKernel:
        kernel = BatchedKernel(self, argtypes, source)
        self.kernels.append(kernel)
        return kernel

    def build(self) -> None:
        kernels, self.kernels = self.kernels, []
        sizes = [len(k.source) for k in kernels]
        libraries = min(self.libraries, 1 + sum(sizes) // SOURCE_PER_LIBRARY)
        for group in shares(sizes, libraries):
            library = _Library([(kernels[i].argtypes, kernels[i].source) for i in group], self.submit)
            for index, i in enumerate(group):
                kernels[i].library, kernels[i].index = library, index


@contextlib.contextmanager
def kernels_built_together() -> Iterator[None]:
    """Note [Kernels built together], for the calling thread (Note [Patches and threads])."""
    try:
        from torch._inductor import async_compile, codecache
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Kernels built together", "torch._inductor.async_compile does not import")
        yield
        return
    compiler = getattr(async_compile, "AsyncCompile", None)
    cpp_pybinding = getattr(compiler, "cpp_pybinding", None)
    wait = getattr(compiler, "wait", None)
    threads = getattr(async_compile, "get_compile_threads", None)
    cache = getattr(codecache, "CppPythonBindingsCodeCache", None)
    if None in (cpp_pybinding, wait, threads) or not hasattr(cache, "load_async"):
        cannot_apply(
            "Kernels built together",
            "AsyncCompile.cpp_pybinding/wait, get_compile_threads or CppPythonBindingsCodeCache.load_async is missing",
        )
        yield
        return

    def collected(self: Any, argtypes: list[str], source_code: str) -> Any:
        if not batchable(argtypes, source_code):
            return cpp_pybinding(self, argtypes, source_code)
        getattr(async_compile, "kernel_code_log", log).info("CPP+Bindings Kernel:\n%s", source_code)
        pending = self.__dict__.get(_PENDING)
        if pending is None:
            count = threads()
            libraries = 1 if getattr(_ONE_LIBRARY, "one", False) else count
            pending = self.__dict__[_PENDING] = _Pending(self.submit if count > 1 else None, libraries)
        return pending.add(argtypes, source_code)

    def built(self: Any, scope: dict[str, Any]) -> None:
        pending = self.__dict__.get(_PENDING)
        if pending is not None:
            pending.build()
            for key, value in list(scope.items()):
                if isinstance(value, BatchedKernel):
                    value.bind_at_first_call(scope, key)
        wait(self, scope)

    with patched_for_this_thread((compiler, "cpp_pybinding", collected), (compiler, "wait", built)):
        yield
