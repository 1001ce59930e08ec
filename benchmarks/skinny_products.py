"""Skinny complex products whose operands the compiled graph computes: ``block`` against
``native`` (Note [GEMM strategy rule], src/torchcx/ops/linalg.py).

    python benchmarks/skinny_products.py [--rounds 9]

Each product is compiled by torchcx three times, with ``config.matmul_strategy`` "auto",
"block" and "native"; its operands are computed in the graph (scaled, conjugated), so that
neither reaches the vendor GEMM as a graph input would (Note [Packed form]). The modes run
interleaved round by round in one process, one thread, caches off; median ms per call, and
block / native (above 1: the vendor's cgemm is faster).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx


def product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * 1.5) @ (b.conj() * 0.5)


def adjoint_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # the FNO layer's weight gradient: x^H @ g over the batch, per mode
    return (a * 1.5).transpose(-1, -2).conj() @ (b * 0.5)


#: name -> (a's shape, b's shape, program)
SHAPES: dict[str, tuple[tuple[int, ...], tuple[int, ...], Callable[..., Any]]] = {
    "gate 2x2 @ 2x2^17": ((2, 2), (2, 1 << 17), product),
    "gate 4x4 @ 4x2^16": ((4, 4), (4, 1 << 16), product),
    "state 2^16x4 @ 4x4": ((1 << 16, 4), (4, 4), product),
    "FNO weight gradient 256 x (32x8 @ 8x32)": ((256, 8, 32), (256, 8, 32), adjoint_product),
    "outer 1024x8 @ 8x1024": ((1024, 8), (8, 1024), product),
    "64x16 @ 16x4096": ((64, 16), (16, 4096), product),
    "batched 256 x (16x16 @ 16x16)": ((256, 16, 16), (256, 16, 16), product),
}
STRATEGIES = ("auto", "block", "native")


def _seconds(fn: Callable[..., Any], args: tuple[Any, ...], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.force_disable_caches = True
    g = torch.Generator().manual_seed(0)
    print("| product | " + " | ".join(f"{s} ms" for s in STRATEGIES) + " | block / native |")
    print("| --- | " + " | ".join("---:" for _ in STRATEGIES) + " | ---: |")
    for name, (a_shape, b_shape, program) in SHAPES.items():
        args = tuple(torch.randn(*s, dtype=torch.complex64, generator=g) for s in (a_shape, b_shape))
        compiled = {}
        for strategy in STRATEGIES:
            with torchcx.config.patch(matmul_strategy=strategy):
                torch._dynamo.reset()
                compiled[strategy] = torchcx.compile(program, dynamic=False)
                compiled[strategy](*args)
        torch.testing.assert_close(compiled["block"](*args), compiled["native"](*args), rtol=1e-4, atol=1e-4)
        calls = max(3, int(0.05 / _seconds(compiled["native"], args, 3)))
        samples: dict[str, list[float]] = {s: [] for s in STRATEGIES}
        for _ in range(options.rounds):
            for strategy, fn in compiled.items():
                samples[strategy].append(_seconds(fn, args, calls))
        ms = {s: statistics.median(t) * 1e3 for s, t in samples.items()}
        cells = " | ".join(f"{ms[s]:.3f}" for s in STRATEGIES)
        print(f"| {name} | {cells} | {ms['block'] / ms['native']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
