"""Phases, ``exp(1j * theta)``: torchcx with and without Note [Exponentials of imaginary numbers].

    python benchmarks/phase_exponentials.py [--workloads elementwise,nls,mlp] [--rounds 21]

"after" is torchcx as it is; "before" switches off the graph pass and the graph-reuse rule of
Note [Heavy values computed once] that came with it (transcendental values read by several
nodes stored once). Each workload of the suite (full sizes) is compiled both ways in one
process, caches off, then timed with eager, interleaved round by round, one thread
(``benchmarks/_switched.py``: the order changes every round, a sample is enough calls for
20 ms). Prints the median and the fastest sample per mode.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import torch
from _switched import compiled_with, parse_options, time_interleaved

import torchcx._inductor_patches as patches
import torchcx.backend as backend
from torchcx.bench.workloads import WORKLOADS


def _compiled(program: Callable[..., Any], args: tuple[Any, ...], after: bool, tag: str) -> Callable[..., Any]:
    """``program`` compiled by torchcx now, with the pass and the rule on (``after``) or off."""
    off = [(backend, "imaginary_exponentials", lambda gm: 0), (patches, "_TRANSCENDENTAL", frozenset())]
    return compiled_with(program, args, tag, [] if after else off)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="elementwise,nls,mlp")
    options = parse_options(parser)
    modes: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    for name in options.workloads.split(","):
        problem = WORKLOADS[name].build("full", torch.device("cpu"))
        args = problem.make_args()
        tag = name.replace("-", "_")
        modes[(name, "eager")] = (problem.program, args)
        modes[(name, "before")] = (_compiled(problem.program, args, False, f"{tag}_before"), args)
        modes[(name, "after")] = (_compiled(problem.program, args, True, f"{tag}_after"), args)
    samples, _ = time_interleaved(modes, options.rounds)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms")
    print("| workload | eager | before | after | after / before |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in options.workloads.split(","):
        ms = {mode: statistics.median(samples[(name, mode)]) * 1e3 for mode in ("eager", "before", "after")}
        fast = {mode: min(samples[(name, mode)]) * 1e3 for mode in ("eager", "before", "after")}
        cells = " | ".join(f"{ms[m]:.2f} ({fast[m]:.2f})" for m in ("eager", "before", "after"))
        print(f"| {name} | {cells} | {ms['before'] / ms['after']:.2f}x |")


if __name__ == "__main__":
    main()
