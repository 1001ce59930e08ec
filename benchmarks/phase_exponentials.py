"""Phases, ``exp(1j * theta)``: torchcx with and without Note [Exponentials of imaginary numbers].

    python benchmarks/phase_exponentials.py [--workloads elementwise,nls,mlp] [--rounds 21]

"after" is torchcx as it is; "before" switches off the graph pass and the graph-reuse rule of
Note [Heavy values computed once] that came with it (transcendental values read by several
nodes stored once); "ones kept" has both but keeps the products by one the pass drops since
2026-12-07 (exp's overflow scale, a ``where`` of a false mask and the number 1). Each workload of the suite (full sizes) is compiled both ways in one
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

import torchcx._graph_passes as graph_passes
import torchcx._inductor_patches as patches
import torchcx.backend as backend
from torchcx.bench.workloads import WORKLOADS

#: mode -> the switches set while it compiles
MODES = {
    "before": [(backend, "imaginary_exponentials", lambda gm: 0), (patches, "_TRANSCENDENTAL", frozenset())],
    "ones kept": [(graph_passes, "_MULTIPLIES_BY_ONE", False)],
    "after": [],
}
NAMES = ("eager", *MODES)


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
        for mode, switches in MODES.items():
            modes[(name, mode)] = (
                compiled_with(problem.program, args, f"{tag}_{mode.replace(' ', '_')}", switches),
                args,
            )
    samples, _ = time_interleaved(modes, options.rounds)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms")
    print("| workload | " + " | ".join(NAMES) + " | before / after | ones kept / after |")
    print("| --- |" + " ---: |" * (len(NAMES) + 2))
    for name in options.workloads.split(","):
        ms = {mode: statistics.median(samples[(name, mode)]) * 1e3 for mode in NAMES}
        fast = {mode: min(samples[(name, mode)]) * 1e3 for mode in NAMES}
        cells = " | ".join(f"{ms[m]:.2f} ({fast[m]:.2f})" for m in NAMES)
        print(f"| {name} | {cells} | {ms['before'] / ms['after']:.2f}x | {ms['ones kept'] / ms['after']:.3f}x |")


if __name__ == "__main__":
    main()
