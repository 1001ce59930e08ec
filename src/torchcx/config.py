"""torchcx settings. Change them as attributes (``torchcx.config.strict = True``)
or for a block of code with ``torchcx.config.patch(strict=True)``."""

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
