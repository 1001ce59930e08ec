"""What one extern kernel call costs beyond its kernel: ``torch.ops.torchcx.extern`` against the aten op.

    python benchmarks/extern_call.py

A 16-point complex FFT (a kernel of a few microseconds) is called directly and through
``torchcx::extern`` as a compiled graph calls it (spec, tensors, ints), interleaved, one
thread; the difference is the extern call's fixed cost (Note [Extern kernels]).
"""

from __future__ import annotations

import statistics
import time

import torch

from torchcx.ops import extern


def main() -> None:
    torch.set_num_threads(1)
    x = torch.randn(16, dtype=torch.complex64)
    spec, tensors, ints = extern.encode((x, [0], 0, True), {})
    call = torch.ops.torchcx.extern.default

    def direct() -> None:
        torch.ops.aten._fft_c2c(x, [0], 0, True)

    def through_extern() -> None:
        call("aten::_fft_c2c", spec, tensors, ints)

    for _ in range(200):
        direct()
        through_extern()
    samples: dict[str, list[float]] = {"direct": [], "extern": []}
    for _ in range(25):
        for name, fn in (("direct", direct), ("extern", through_extern)):
            start = time.perf_counter()
            for _ in range(500):
                fn()
            samples[name].append((time.perf_counter() - start) / 500 * 1e6)
    d, e = statistics.median(samples["direct"]), statistics.median(samples["extern"])
    print(f"aten call {d:.2f} us, torchcx::extern call {e:.2f} us: {e - d:.2f} us per extern call")


if __name__ == "__main__":
    main()
