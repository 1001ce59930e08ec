"""Quantum gates applied with einsum: torchcx with and without Note [Small contractions in place].

    python benchmarks/quantum_layout.py [--sizes 18] [--layers 10] [--rounds 31]

The benchmark suite's ``quantum`` program (random one- and two-qubit gates, ``layers``
of two one-qubit gates and one two-qubit gate) on ``(2,) * n`` complex64 states: eager,
torchcx, and torchcx with the rewrite disabled ("before"), compiled in one process,
timed interleaved round by round (the order rotated), one thread. Prints the median
and the fastest sample of each mode, and the ratios eager / mode.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
import torchcx.backend
from torchcx.bench.workloads.quantum import random_circuit, run_circuit


def _time_ms(fn: Callable[..., Any], args: tuple[Any, ...], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e3


def _without_rewrite() -> Callable[..., Any]:
    """run_circuit compiled by torchcx with Note [Small contractions in place] off."""
    rewrite = torchcx.backend.small_contractions_in_place
    torchcx.backend.small_contractions_in_place = lambda gm: 0
    try:
        # options={} makes the backend differ from the first one, so Dynamo compiles again
        return torchcx.compile(run_circuit, options={})
    finally:
        torchcx.backend.small_contractions_in_place = rewrite


def run(n: int, layers: int, rounds: int) -> None:
    g = torch.Generator().manual_seed(0)
    state = torch.randn((2,) * n, dtype=torch.complex64, generator=g)
    args = (state, random_circuit(n, layers, g))
    torch._dynamo.reset()
    modes: dict[str, Callable[..., Any]] = {"eager": run_circuit, "torchcx": torchcx.compile(run_circuit)}
    first_s = {}
    start = time.perf_counter()
    expected = modes["torchcx"](*args)
    first_s["torchcx"] = time.perf_counter() - start
    modes["before"] = _without_rewrite()
    start = time.perf_counter()
    before = modes["before"](*args)  # compiled now, while the rewrite is still off
    first_s["before"] = time.perf_counter() - start
    reference = run_circuit(*args)
    torch.testing.assert_close(expected, reference, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(before, reference, rtol=1e-4, atol=1e-5)
    calls = max(1, int(20 / max(_time_ms(run_circuit, args, 2), 1e-3)))
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    order = list(modes.items())
    for r in range(rounds):
        for mode, fn in order[r % len(order) :] + order[: r % len(order)]:
            samples[mode].append(_time_ms(fn, args, calls))
    med = {mode: statistics.median(s) for mode, s in samples.items()}
    low = {mode: min(s) for mode, s in samples.items()}
    print(
        f"2^{n} amplitudes, {3 * layers} gates; first call: torchcx {first_s['torchcx']:.1f} s, before {first_s['before']:.1f} s"
    )
    for mode in modes:
        print(
            f"  {mode:8} median {med[mode]:9.3f} ms ({med['eager'] / med[mode]:.2f}x eager)"
            f"   fastest {low[mode]:9.3f} ms ({low['eager'] / low[mode]:.2f}x)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="18", help="qubit counts, comma-separated")
    parser.add_argument("--layers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    for n in map(int, options.sizes.split(",")):
        run(n, options.layers, options.rounds)


if __name__ == "__main__":
    main()
