"""Phases, ``exp(1j * theta)``: torchcx with and without Note [Exponentials of imaginary numbers].

    python benchmarks/phase_exponentials.py [--workloads elementwise,nls,mlp] [--rounds 21]

"after" is torchcx as it is; "before" switches off the graph pass and the graph-reuse rule of
Note [Heavy values computed once] that came with it (transcendental values read by several
nodes stored once); "ones kept" has both but keeps the products by one the pass drops since
2026-12-07 (exp's overflow scale, a ``where`` of a false mask and the number 1); "phase products
kept" keeps the products by ``e^(0 * t)`` of ``cos(t)`` and ``sin(t)`` and the blend that kept
``sin(+-0)``'s sign, dropped since 2026-12-07 evening. Each workload of the suite (full sizes) is compiled each way in one
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
    "phase products kept": [(graph_passes, "_PHASES_AS_SINES", False)],
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
    others = [m for m in MODES if m != "after"]
    print("| workload | " + " | ".join(NAMES) + " | " + " | ".join(f"{m} / after" for m in others) + " |")
    print("| --- |" + " ---: |" * (len(NAMES) + len(others)))
    for name in options.workloads.split(","):
        ms = {mode: statistics.median(samples[(name, mode)]) * 1e3 for mode in NAMES}
        fast = {mode: min(samples[(name, mode)]) * 1e3 for mode in NAMES}
        cells = " | ".join(f"{ms[m]:.2f} ({fast[m]:.2f})" for m in NAMES)
        ratios = " | ".join(f"{ms[m] / ms['after']:.3f}x" for m in others)
        print(f"| {name} | {cells} | {ratios} |")


if __name__ == "__main__":
    main()
