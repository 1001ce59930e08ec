"""One gate on the input state, at every qubit position: eager, torchcx, torchcx without the rewrite.

    python benchmarks/quantum_gate_positions.py [--qubits 18] [--rounds 11] [--threads 1]

A one-qubit gate on each qubit and a two-qubit gate on each pair of neighbours, applied with
``torch.einsum`` to a ``(2,) * n`` complex64 state that is the compiled function's input.
Each program is compiled twice in one process (caches off): as torchcx compiles it, and with
Note [Small contractions in place] switched off ("bmm form": eager's decomposition, lowered by
torchcx); the three modes are timed interleaved, one thread. Prints the median per mode and
eager / mode. The gate's innermost summed axis has a stride of 2^(n-1-q) elements: the
rewrite is left out where the input would be read in blocks of 2 to 15 elements.
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
from torchcx.bench.workloads.quantum import gate_subscripts


def _timed(fn: Callable[..., Any], args: tuple[Any, ...]) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _compiled(equation: str, rewrite: bool, args: tuple[Any, ...]) -> Callable[..., Any]:
    """torchcx's compiled gate, compiled now (with the rewrite switched off unless ``rewrite``)."""
    # a distinct code object per (equation, mode), so that Dynamo compiles each separately
    namespace: dict[str, Any] = {}
    exec(f"def gate(g, s):\n    return torch.einsum({equation!r}, g, s)\n", {"torch": torch}, namespace)
    fn = torchcx.compile(namespace["gate"])
    original = torchcx.backend.small_contractions_in_place
    if not rewrite:
        torchcx.backend.small_contractions_in_place = lambda gm, rewrites=None: 0
    try:
        fn(*args)
    finally:
        torchcx.backend.small_contractions_in_place = original
    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qubits", type=int, default=18)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    torch._inductor.config.force_disable_caches = True
    n = options.qubits
    g = torch.Generator().manual_seed(0)
    state = torch.randn((2,) * n, dtype=torch.complex64, generator=g)
    gates = [(q,) for q in range(n)] + [(q, q + 1) for q in range(n - 1)]
    print(f"{n} qubits, complex64, {options.threads} thread(s), median of {options.rounds}")
    print("| gate on | stride | eager ms | torchcx ms | bmm form ms | eager / torchcx | eager / bmm form |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for qubits in gates:
        gate = torch.randn((2,) * 2 * len(qubits), dtype=torch.complex64, generator=g)
        equation = gate_subscripts(n, qubits)
        args = (gate, state)
        modes = {
            "eager": lambda g, s, eq=equation: torch.einsum(eq, g, s),
            "torchcx": _compiled(equation, True, args),
            "bmm form": _compiled(equation, False, args),
        }
        expected = modes["eager"](*args)
        for name, fn in modes.items():
            torch.testing.assert_close(fn(*args), expected, msg=name)
        samples: dict[str, list[float]] = {name: [] for name in modes}
        names = list(modes)
        for r in range(options.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                samples[name].append(_timed(modes[name], args))
        ms = {name: statistics.median(v) * 1e3 for name, v in samples.items()}
        stride = min(state.stride(q) for q in qubits)
        print(
            f"| {qubits} | {stride} | {ms['eager']:.3f} | {ms['torchcx']:.3f} | {ms['bmm form']:.3f} "
            f"| {ms['eager'] / ms['torchcx']:.2f}x | {ms['eager'] / ms['bmm form']:.2f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
