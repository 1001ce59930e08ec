"""torchcx with and without Note [Real graphs merged] (src/torchcx/backend.py): what merging
the real graph's repeated ops does to the compiled code's speed.

    python benchmarks/graph_merges.py [--workloads elementwise,rope-fp32,fno] [--rounds 21]
        [--sizes 12,16,20] [--sweep-workloads elementwise,modrelu]

Modes: "merged" is torchcx as it is; "unmerged" hands Inductor the real graph as the lowering
made it. Each workload of the suite (full sizes; and each of ``--sweep-workloads`` at 2^k
elements for each ``--sizes`` k) is compiled both ways in one process, caches off, then timed
with eager, interleaved round by round, one thread (``benchmarks/_switched.py``). Prints the
median and the fastest sample per mode (ms per call). The compile time itself is
``benchmarks/compile_versions.py``'s to measure.
"""

from __future__ import annotations

import argparse
import statistics

from _switched import eager_and_switched, parse_options, time_interleaved
from _switched import problems as suite_problems

import torchcx.backend as backend

MODES = {"merged": [], "unmerged": [(backend, "_MERGE_REAL_GRAPHS", False)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="elementwise,rope-fp32,rope-bf16,fno,mlp,quantum,matmul,nls")
    parser.add_argument("--sizes", default="", help="exponents: the sweep workloads at 2^k elements too")
    parser.add_argument("--sweep-workloads", default="elementwise,modrelu")
    options = parse_options(parser)
    problems = suite_problems(options.workloads, options.sizes, options.sweep_workloads)
    modes = eager_and_switched(problems, MODES)
    samples, _ = time_interleaved(modes, options.rounds)
    names = ("eager", *MODES)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms per call")
    print("| workload | " + " | ".join(names) + " | unmerged / merged |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    for name in problems:
        ms = {m: statistics.median(samples[(name, m)]) * 1e3 for m in names}
        fast = {m: min(samples[(name, m)]) * 1e3 for m in names}
        cells = " | ".join(f"{ms[m]:.3g} ({fast[m]:.3g})" for m in names)
        print(f"| {name} | {cells} | {ms['unmerged'] / ms['merged']:.3f}x |")


if __name__ == "__main__":
    main()
