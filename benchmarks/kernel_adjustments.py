"""torchcx with and without Notes [Hypot of floats in double] and [Reductions fused with their
producers] (src/torchcx/_inductor_patches.py).

    python benchmarks/kernel_adjustments.py [--workloads elementwise,nls,mlp] [--rounds 21]
        [--sizes 14,20,22] [--sweep-workloads elementwise,modrelu]

Modes: "both" is torchcx as it is; "hypot" has the hypot in double but not the fusion; "none"
has neither (torchcx before them). Each workload of the suite (full sizes; and each of
``--sweep-workloads`` at 2^k elements for each ``--sizes`` k, as the size sweep builds it) is compiled
every way in one process, caches off, then timed with eager, interleaved round by round (the
order changed every round; each sample is enough calls for 20 ms), one thread. Prints the median and the
fastest sample per mode (the time of one call), and the minor page faults per call (a large
output allocated afresh each call faults its pages in).

How the modes are compiled and timed, and why: ``benchmarks/_switched.py``.
"""

from __future__ import annotations

import contextlib
import statistics

from _switched import switched_suite

import torchcx._inductor_patches as patches

#: mode -> the adjustments switched off while it compiles
MODES = {
    "both": (),
    "hypot": ("_reductions_fused_with_producers",),
    "none": ("_hypot_in_double", "_reductions_fused_with_producers"),
}


def main() -> None:
    switched = {mode: [(patches, name, contextlib.nullcontext) for name in off] for mode, off in MODES.items()}
    options, problems, samples, faults = switched_suite(__doc__, switched, "elementwise,nls,mlp", "", "elementwise")
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
