"""torchcx with and without Note [Sines and cosines of one value] (src/torchcx/_kernel_batches.py):
one Sleef ``sincosf`` call where a kernel computes the sine and the cosine of one float vector,
against the two calls Inductor emits.

    python benchmarks/sines_and_cosines.py [--workloads elementwise,nls,mlp] [--rounds 21]
        [--sizes 12,16,20,22] [--sweep-workloads elementwise,rope-fp32-freqs,modrelu]
        [--complex128-sizes 14,18]

Modes: "one call" is torchcx as it is; "two calls" compiles the same program with the pairing
off. Each workload of the suite (full sizes; and each of ``--sweep-workloads`` at 2^k elements
for each ``--sizes`` k, as the size sweep builds it; and the elementwise chain on complex128
at 2^k elements for each ``--complex128-sizes`` k) is compiled both ways in one process,
caches off, then timed with eager, interleaved round by round (the order changed every round;
each sample is enough calls for 20 ms), one thread. Prints the median and the fastest sample
per mode (the time of one call), and the median over rounds of the two torchcx modes' ratio
(the two samples of a round ran side by side). How the modes are compiled and timed, and why:
``benchmarks/_switched.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

import torch
from _switched import compiled_with, parse_options, time_interleaved
from _switched import problems as suite_problems

import torchcx._kernel_batches as batches
from torchcx.bench.workloads import SWEEP_WORKLOADS

#: mode -> the switches set while it compiles
MODES = {"one call": (), "two calls": ((batches, "sines_and_cosines", lambda: ""),)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="elementwise,nls,mlp")
    parser.add_argument("--sizes", default="", help="exponents: the sweep workloads at 2^k elements too")
    parser.add_argument("--sweep-workloads", default="elementwise,rope-fp32-freqs,modrelu")
    parser.add_argument("--complex128-sizes", default="", help="exponents: the elementwise chain on complex128")
    options = parse_options(parser)
    problems = suite_problems(options.workloads, options.sizes, options.sweep_workloads)
    for k in (int(s) for s in options.complex128_sizes.split(",") if s):
        problem = SWEEP_WORKLOADS["elementwise"].build(1 << k, torch.device("cpu"))
        wide = tuple(a.to(torch.complex128) for a in problem.make_args())
        problems[f"elementwise complex128 2^{k}"] = dataclasses.replace(problem, make_args=lambda wide=wide: wide)
    modes: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    for name, problem in problems.items():
        modes[(name, "eager")] = (problem.program, problem.make_args())
        expected = problem.observe(modes[(name, "eager")][1], problem.program(*modes[(name, "eager")][1]))
        for mode, switches in MODES.items():
            args = problem.make_args()
            tag = "".join(c if c.isalnum() else "_" for c in f"{name}_{mode}")
            fn = compiled_with(problem.program, args, tag, switches)
            fresh = problem.make_args()  # a training step's first call, as eager's
            for got, want in zip(problem.observe(fresh, fn(*fresh)), expected):
                atol = problem.tolerance * want.abs().max().item()
                torch.testing.assert_close(got, want, rtol=problem.tolerance, atol=atol)
            modes[(name, mode)] = (fn, args)
    samples, _ = time_interleaved(modes, options.rounds)
    names = ("eager", *MODES)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms")
    print("| workload | " + " | ".join(names) + " | two calls / one call, per round |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    for name in problems:
        cells = " | ".join(
            f"{statistics.median(samples[(name, m)]) * 1e3:.3g} ({min(samples[(name, m)]) * 1e3:.3g})" for m in names
        )
        ratio = statistics.median(a / b for a, b in zip(samples[(name, "two calls")], samples[(name, "one call")]))
        print(f"| {name} | {cells} | {ratio:.3f}x |")


if __name__ == "__main__":
    main()
