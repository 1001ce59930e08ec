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

Today the primitives run as the vendor FFT (pocketfft or MKL on CPU, cuFFT on
GPU) through the extern kernel (Note [Extern kernels]): zero-copy on
interleaved inputs, computed in complex64 for float16/bfloat16 parts. An FFT
in real arithmetic (DFT-as-GEMM for small sizes, Cooley-Tukey / four-step for
large ones, on the planar parts so that Inductor fuses it and low-precision
parts work) is the other path; it will register these three ops with an
implementation that chooses between the paths by size, dtype and device,
and keep ``vendor_fft`` as the fallback.
"""

from __future__ import annotations

from typing import Any

import torch

from ._registry import REAL_TO_COMPLEX_OPS
from .extern import call_extern, register_extern

aten = torch.ops.aten

#: The FFT primitives torch.fft, stft and istft reach under dispatch.
FFT_PRIMITIVES = (aten._fft_c2c.default, aten._fft_r2c.default, aten._fft_c2r.default)

register_extern(*FFT_PRIMITIVES)
REAL_TO_COMPLEX_OPS.add(aten._fft_r2c)


def vendor_fft(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """One of ``FFT_PRIMITIVES`` by the vendor FFT (the extern kernel), on ComplexTensors."""
    return call_extern(op, args, kwargs)
