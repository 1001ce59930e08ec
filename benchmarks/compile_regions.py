"""Cold compile time of repeated structure with and without ``torch.compiler.nested_compile_region``.

A split-step NLS solver (1 step; 20 steps with the step marked; 20 steps unmarked) and a
stack of complex layers (1; 8 marked; 8 unmarked), forward only, through torchcx.compile,
one process, after a warm-up compile. A compile time is the first call minus a steady one;
each round times every row once, and the ratios to one step (one layer) are per round, so
that the machine's drift cancels. Run with Inductor's caches off:

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python benchmarks/compile_regions.py --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

import torchcx


def nls_step(psi: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    psi = torch.fft.ifft(torch.exp(-1j * k**2 * 1e-3) * torch.fft.fft(psi))
    return psi * torch.exp(1j * psi.abs() ** 2 * 1e-3)


def layer(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(z @ w) * z.conj() + 0.1 * z


def repeated(f: Callable[..., torch.Tensor], n: int) -> Callable[..., torch.Tensor]:
    def run(x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        for _ in range(n):
            x = f(x, p)
        return x

    return run


def compile_seconds(fn: Callable[..., Any], *args: Any) -> float:
    """First call minus a steady one."""
    torch._dynamo.reset()
    compiled = torchcx.compile(fn)
    start = time.perf_counter()
    compiled(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    compiled(*args)
    return first - (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    rounds = parser.parse_args().rounds
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    psi, k = torch.randn(64, 4096, dtype=torch.complex64), torch.randn(4096)
    z, w = torch.randn(64, 256, dtype=torch.complex64), 0.05 * torch.randn(256, 256, dtype=torch.complex64)
    marked_step = torch.compiler.nested_compile_region(nls_step)
    marked_layer = torch.compiler.nested_compile_region(layer)
    compile_seconds(repeated(nls_step, 1), psi, k)  # the process's first compile pays one-time costs
    # (name, program, its arguments, the row it is compared with)
    rows = [
        ("NLS solver, 1 step", repeated(nls_step, 1), (psi, k), None),
        ("NLS solver, 20 steps, marked", repeated(marked_step, 20), (psi, k), 0),
        ("NLS solver, 20 steps, unmarked", repeated(nls_step, 20), (psi, k), 0),
        ("complex layer, 1", repeated(layer, 1), (z, w), None),
        ("8 layers, marked", repeated(marked_layer, 8), (z, w), 3),
        ("8 layers, unmarked", repeated(layer, 8), (z, w), 3),
    ]
    seconds: list[list[float]] = [[] for _ in rows]
    for _ in range(rounds):
        for i, (_, fn, args, _) in enumerate(rows):
            seconds[i].append(compile_seconds(fn, *args))
    for i, (name, _, _, base) in enumerate(rows):
        times = " ".join(f"{t:5.2f}" for t in seconds[i])
        ratios = (
            "" if base is None else "  ratio " + " ".join(f"{t / b:4.2f}" for t, b in zip(seconds[i], seconds[base]))
        )
        median = statistics.median(seconds[i])
        print(f"{name:32s} median {median:5.2f} s  ({times}){ratios}", flush=True)


if __name__ == "__main__":
    main()
