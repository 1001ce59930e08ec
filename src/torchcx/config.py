"""torchcx settings. Change them as attributes (``torchcx.config.strict = True``)
or for a block of code with ``torchcx.config.patch(strict=True)``.

Note [Settings are part of what was compiled]
---------------------------------------------
A compiled function keeps the settings it was compiled with: ``torchcx.compile``
reads ``strict`` and ``COMPILE_SETTINGS`` when it is called (``torch.compile(f,
backend="torchcx")``, when Dynamo first compiles ``f``), and every graph of that
function, backward graphs compiled later included, is lowered with them. Changing
a setting afterwards does not change a function already compiled, whose guards do
not read torchcx's settings; calling ``torchcx.compile`` again does (the new
backend fails Dynamo's backend guard, so the function is recompiled). Settings
that change only the generated code are in Inductor's FX graph cache key
(``_inductor_patches``), and the others change the graph itself, so a cached graph
compiled under other settings is never loaded.

Note [Settings per thread]
--------------------------
Setting an attribute changes it for the whole process; ``patch`` changes it for the
calling thread only (a context variable holds the patched values, read before the
module's own), and so does setting a patched attribute inside the ``patch`` block (undone
at its end, as before). The backend applies a compiled function's settings with ``patch`` while
it lowers a graph. Process-wide patches broke when two threads lowered at once, as they did
while a backward graph was lowered at the first ``backward()``, in whichever thread called it,
outside Dynamo's compile lock (before Note [Backward lowered with the forward] in backend.py):
each read the other's settings, and the patch that ended last restored the other's values for
good (Note [Patches and threads] in _patching.py).
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

#: Raise (instead of warning and running the native kernel) when a compiled graph
#: holds a complex op torchcx cannot decompose. ``torchcx.compile(strict=True)`` sets it per call.
strict: bool = False

#: Emit vectorized bitcasts in Inductor's CPU kernels (Note [Vectorized bitcasts]).
vectorized_bitcast: bool = True

#: Vectorize stride-2 loads and stores of (re, im) pairs in Inductor's CPU kernels
#: (Note [Interleaved access]).
interleaved_access: bool = True

#: Split and join (re, im) pairs within 128-bit lanes where a kernel allows it, instead of
#: keeping elements in order across the vector (Note [Pairs in lane order]): the same bits,
#: fewer shuffles across lanes. Only with ``interleaved_access``.
lane_order: bool = True

#: How complex matrix products (mm, bmm, matmul, einsum, linear, ...) are computed
#: (Note [Complex GEMM strategies]): ``"auto"`` picks per device, dtype and shape by
#: the rule measured in benchmarks/gemm_strategies.py (Note [GEMM strategy rule]);
#: ``"4m"``, ``"3m"``, ``"block"`` or ``"native"`` forces one ("native", the vendor's
#: complex GEMM, exists for float32/float64 parts only: others keep the rule's choice).
matmul_strategy: str = "auto"

#: How torch.fft transforms (and stft/istft) are computed (Note [FFT path selection]):
#: ``"auto"`` picks per device, dtype and size by the rule measured in
#: benchmarks/fft_paths.py; ``"vendor"`` always calls the vendor FFT (pocketfft/MKL,
#: cuFFT) as an extern kernel; ``"real"`` always uses the FFT in real arithmetic
#: (Note [FFT in real arithmetic]), which Inductor fuses with its neighbours.
fft_path: str = "auto"

#: Compute a 2-D real FFT whose spectrum is only sliced to a few low modes, or an inverse
#: whose input is zeros but for a few modes (a Fourier neural operator's spectral
#: convolution), over those modes alone: as DFT products, or as FFTs with the columns that
#: are dropped pruned, whichever was measured faster (Note [Truncated spectra]).
truncated_spectra: bool = True

#: Build the C++ kernels of each compiled graph as a few shared libraries rather than one
#: each (Note [Kernels built together]): the same code, without g++'s fixed cost per kernel.
#: Not a compile setting: it changes how the code is built, never the code.
batch_kernels: bool = True

#: Link those libraries with the fastest linker installed (mold, lld or gold) rather than
#: the system's default ld.bfd (Note [Kernels built together]): about a third of each C++
#: build is the link against libtorch. Not a compile setting: it changes how the code is
#: linked, never the code.
fast_linker: bool = True

#: Build those libraries with line tables (``-g1``, Inductor's default for its kernels), so
#: that a profiler or debugger maps kernel code to source lines. Off, each g++ run is 15-20%
#: shorter (0.98 -> 0.81 s for a small kernel's library, 2026-12-06) and profilers still name
#: every kernel function (Note [Kernels built together]). Not a compile setting: it changes
#: how the code is built, never the code.
kernel_line_tables: bool = False

#: End the C++ function Inductor's CPU backend builds from consecutive nodes after a node
#: that writes 1 MiB or more, so that the intermediates of a long chain are freed and reused
#: between kernels instead of all living until the end (Note [Large intermediates freed
#: between kernels]). Not a compile setting: it changes when buffers are freed, never what
#: is computed; it is part of the FX graph cache key.
free_large_intermediates: bool = True

#: Write the large outputs of a C++ kernel whose data does not fit in the last-level cache
#: with streaming stores, which skip reading each line before it is written (Note [Streaming
#: stores]): the same values, a third less memory traffic. Needs ``batch_kernels`` (the
#: stores are rewritten in torchcx's libraries). Not a compile setting: it changes how the
#: outputs are stored, never what is computed; it is part of the FX graph cache key.
streaming_stores: bool = True

#: Ask the kernel for transparent huge pages on each CPU buffer of 32 MiB or more that a
#: compiled graph allocates (Note [Large buffers on huge pages] in torchcx/_fresh_pages.py):
#: glibc maps such buffers afresh at every allocation, and 2 MiB pages fault them in with
#: 512 times fewer faults. Only where huge pages are given on request (``madvise``, Linux).
#: Not a compile setting: it changes how pages are mapped, never what is computed; it is
#: part of the FX graph cache key.
huge_pages: bool = True

#: The settings that change what a compiled graph computes or the code generated for it.
#: They are read once per compiled function (Note [Settings are part of what was compiled]).
COMPILE_SETTINGS = (
    "vectorized_bitcast",
    "interleaved_access",
    "lane_order",
    "matmul_strategy",
    "fft_path",
    "truncated_spectra",
)

_DEFAULTS = {
    name: value
    for name, value in vars(sys.modules[__name__]).items()
    if not name.startswith("_") and isinstance(value, (bool, int, float, str))
}


#: This thread's patched values (Note [Settings per thread]).
_PATCHED: ContextVar[Mapping[str, Any]] = ContextVar("torchcx_config_patched", default=types.MappingProxyType({}))


class _Settings(types.ModuleType):
    """This module's class: each setting reads the calling thread's patched value first."""


def _setting(name: str) -> property:
    def get(module: types.ModuleType) -> Any:
        patched = _PATCHED.get()
        return patched[name] if name in patched else vars(module)[name]

    def set_(module: types.ModuleType, value: Any) -> None:
        patched = _PATCHED.get()
        if name in patched:  # inside this thread's ``patch`` of it: undone when the block ends
            _PATCHED.set(types.MappingProxyType({**patched, name: value}))
        else:
            vars(module)[name] = value  # process-wide

    return property(get, set_)


for _name in _DEFAULTS:
    setattr(_Settings, _name, _setting(_name))
sys.modules[__name__].__class__ = _Settings


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Set config values for the duration of a ``with`` block, in the calling thread only."""
    unknown = set(changes) - set(_DEFAULTS)
    if unknown:
        raise AttributeError(f"torchcx.config has no setting {sorted(unknown)}")
    token = _PATCHED.set(types.MappingProxyType({**_PATCHED.get(), **changes}))
    try:
        yield
    finally:
        _PATCHED.reset(token)


def compile_settings() -> dict[str, Any]:
    """The current values of ``COMPILE_SETTINGS``."""
    module = sys.modules[__name__]
    return {name: getattr(module, name) for name in COMPILE_SETTINGS}


def all_settings() -> dict[str, Any]:
    """The current value of every setting (this thread's patched ones included)."""
    module = sys.modules[__name__]
    return {name: getattr(module, name) for name in _DEFAULTS}


@contextlib.contextmanager
def flush_subnormals() -> Iterator[None]:
    """Flush subnormal floats to zero in the calling thread for the block (opt-in; XLA's CPU semantics).

    Eager PyTorch and torchcx keep IEEE gradual underflow: a result below the smallest
    normal float (1.2e-38 for float32) is a subnormal, which x86 CPUs compute tens of
    times slower. Programs whose values decay into that range (a soliton's tails, whose
    ``|psi|^2`` reaches 1e-52) spend most of their time there. JAX on CPU flushes them to
    zero (XLA sets the FTZ/DAZ bits); this does the same, through
    ``torch.set_flush_denormal``, for the calling thread only: other threads of the
    intra-op pool keep gradual underflow, so results are XLA's only with one thread.
    Gradual underflow is restored at the end of the block. Raises ``RuntimeError`` on a
    CPU that cannot flush (no SSE3).
    """
    import torch

    if not torch.set_flush_denormal(True):
        raise RuntimeError("torchcx.config.flush_subnormals: this CPU cannot flush subnormals (it has no SSE3 DAZ)")
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
