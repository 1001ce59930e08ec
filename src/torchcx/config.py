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
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

#: Raise (instead of warning and running the native kernel) when a compiled graph
#: holds a complex op torchcx cannot decompose. ``torchcx.compile(strict=True)`` sets it per call.
strict: bool = False

#: Emit vectorized bitcasts in Inductor's CPU kernels (Note [Vectorized bitcasts]).
vectorized_bitcast: bool = True

#: Vectorize stride-2 loads and stores of (re, im) pairs in Inductor's CPU kernels
#: (Note [Interleaved access]).
interleaved_access: bool = True

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

#: The settings that change what a compiled graph computes or the code generated for it.
#: They are read once per compiled function (Note [Settings are part of what was compiled]).
COMPILE_SETTINGS = ("vectorized_bitcast", "interleaved_access", "matmul_strategy", "fft_path")

_DEFAULTS = {
    name: value
    for name, value in vars(sys.modules[__name__]).items()
    if not name.startswith("_") and isinstance(value, (bool, int, float, str))
}


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Set config values for the duration of a ``with`` block."""
    module = sys.modules[__name__]
    unknown = set(changes) - set(_DEFAULTS)
    if unknown:
        raise AttributeError(f"torchcx.config has no setting {sorted(unknown)}")
    saved = {name: getattr(module, name) for name in changes}
    for name, value in changes.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def compile_settings() -> dict[str, Any]:
    """The current values of ``COMPILE_SETTINGS``."""
    module = sys.modules[__name__]
    return {name: getattr(module, name) for name in COMPILE_SETTINGS}
