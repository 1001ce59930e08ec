"""torchcx with and without Notes [Hypot of floats in double] and [Reductions fused with their
producers] (src/torchcx/_inductor_patches.py).

    python benchmarks/kernel_adjustments.py [--workloads elementwise,nls,mlp] [--rounds 21]
        [--sizes 14,20,22] [--sweep-workloads elementwise,modrelu]

Modes: "both" is torchcx as it is; "hypot" has the hypot in double but not the fusion; "none"
has neither (torchcx before them). Each workload of the suite (full sizes; and each of
``--sweep-workloads`` at 2^k elements for each ``--sizes`` k, as the size sweep builds it) is compiled
every way in one process, caches off, then timed with eager, interleaved round by round (the
order rotated; each sample is enough calls for 20 ms), one thread. Prints the median and the
fastest sample per mode (the time of one call), and the minor page faults per call (a large
output allocated afresh each call faults its pages in).

Each mode compiles its own function (a distinct code object) with static shapes, and nothing
calls ``torch._dynamo.reset()`` after the first compile: a reset drops every compiled
function's code, and the next call compiles it again with the adjustments as they are then;
and without ``dynamic=False`` the first function compiled after the chain at another size
gets dynamic shapes (Dynamo saw the inlined ``chain`` with other sizes), and was 2.3x slower
at 2^12 elements whatever its adjustments.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
import torchcx._inductor_patches as patches
from torchcx.bench.workloads import SWEEP_WORKLOADS, WORKLOADS

#: mode -> the adjustments switched off while it compiles
MODES = {
    "both": (),
    "hypot": ("_reductions_fused_with_producers",),
    "none": ("_hypot_in_double", "_reductions_fused_with_producers"),
}


def _compiled(program: Callable[..., Any], args: tuple[Any, ...], off: tuple[str, ...], tag: str) -> Any:
    """``program`` compiled by torchcx now, with the adjustments ``off`` switched off."""
    namespace: dict[str, Any] = {}
    exec(f"def {tag}(*args):\n    return program(*args)\n", {"program": program}, namespace)
    saved = {name: getattr(patches, name) for name in off}
    for name in off:
        setattr(patches, name, contextlib.nullcontext)
    try:
        fn = torchcx.compile(namespace[tag], dynamic=False)
        fn(*args)
    finally:
        for name, value in saved.items():
            setattr(patches, name, value)
    return fn


def _calls_per_sample(fn: Callable[..., Any], args: tuple[Any, ...], sample_s: float = 0.02) -> int:
    """Calls in one timed sample: enough for ``sample_s``. The first call after another mode's
    pays for caches and predictors that mode left behind (a compiled 2^12-element chain: 74 us
    after an eager call, 42 us after itself); a sample of many calls spreads that out."""
    start = time.perf_counter()
    fn(*args)
    return max(1, min(1000, round(sample_s / max(time.perf_counter() - start, 1e-6))))


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="elementwise,nls,mlp")
    parser.add_argument("--sizes", default="", help="exponents: the sweep workloads at 2^k elements too")
    parser.add_argument("--sweep-workloads", default="elementwise")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    torch._inductor.config.force_disable_caches = True
    problems = {name: WORKLOADS[name].build("full", torch.device("cpu")) for name in options.workloads.split(",")}
    for k in (int(s) for s in options.sizes.split(",") if s):
        for name in options.sweep_workloads.split(","):
            problems[f"{name} 2^{k}"] = SWEEP_WORKLOADS[name].build(1 << k, torch.device("cpu"))
    modes: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    for name, problem in problems.items():
        args = problem.make_args()
        modes[(name, "eager")] = (problem.program, args)
        for mode, off in MODES.items():
            tag = f"{name}_{mode}".replace("-", "_").replace(" ", "_").replace("^", "")
            modes[(name, mode)] = (_compiled(problem.program, args, off, tag), args)
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in modes}
    faults: dict[tuple[str, str], list[float]] = {key: [] for key in modes}
    calls = {key: _calls_per_sample(fn, args) for key, (fn, args) in modes.items()}
    keys = list(modes)
    for r in range(options.rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            fn, args = modes[key]
            before, start = _faults(), time.perf_counter()
            for _ in range(calls[key]):
                fn(*args)
            samples[key].append((time.perf_counter() - start) / calls[key])
            faults[key].append((_faults() - before) / calls[key])
    names = ("eager", *MODES)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms; page faults per call")
    print("| workload | " + " | ".join(names) + " | none / both | faults (" + ", ".join(MODES) + ") |")
    print("| --- |" + " ---: |" * (len(names) + 2))
    for name in problems:
        ms = {m: statistics.median(samples[(name, m)]) * 1e3 for m in names}
        fast = {m: min(samples[(name, m)]) * 1e3 for m in names}
        cells = " | ".join(f"{ms[m]:.3g} ({fast[m]:.3g})" for m in names)
        fault_cells = ", ".join(f"{statistics.median(faults[(name, m)]):.0f}" for m in MODES)
        print(f"| {name} | {cells} | {ms['none'] / ms['both']:.2f}x | {fault_cells} |")


if __name__ == "__main__":
    main()
