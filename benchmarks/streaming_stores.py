"""torchcx with and without Note [Streaming stores] (src/torchcx/_streaming_stores.py), against
eager.

    python benchmarks/streaming_stores.py [--workloads rope-fp32-large,rope-bf16-large,elementwise]
        [--sizes 18,20,22,24] [--sweep-workloads rope-fp32,inplace-view,crelu] [--rounds 21]

Modes: "streamed" is torchcx as it is; "plain stores" compiles with ``config.streaming_stores``
off (every store as Inductor wrote it). Each workload of the suite (full sizes; and each of
``--sweep-workloads`` at 2^k elements for each ``--sizes`` k, as the size sweep builds it) is
compiled both ways in one process, caches off, then timed with eager, interleaved round by
round (the order changed every round; each sample is enough calls for 20 ms), one thread.
Prints the median and the fastest sample per mode (the time of one call), and the ratio of the
medians. Only kernels whose data exceed the last-level cache stream, so the small sizes are
the check that nothing else changed. How the modes are compiled and timed:
``benchmarks/_switched.py``.
"""

from __future__ import annotations

import argparse
import statistics

from _switched import eager_and_switched, parse_options, time_interleaved
from _switched import problems as suite_problems

import torchcx
from torchcx._streaming_stores import last_level_cache_bytes

#: mode -> the switches set while it compiles
MODES = {"streamed": (), "plain stores": ((torchcx.config, "streaming_stores", False),)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="rope-fp32-large,rope-bf16-large,elementwise")
    parser.add_argument("--sizes", default="18,20,22,24", help="exponents: the sweep workloads at 2^k elements")
    parser.add_argument("--sweep-workloads", default="rope-fp32,inplace-view,crelu")
    options = parse_options(parser)
    problems = suite_problems(options.workloads, options.sizes, options.sweep_workloads)
    modes = eager_and_switched(problems, MODES)
    samples, _ = time_interleaved(modes, options.rounds)
    names = ("eager", *MODES)
    print(f"last-level cache {last_level_cache_bytes() >> 20} MiB; {options.threads} thread(s), median (fastest) of")
    print(f"{options.rounds} rounds, ms per call")
    print("| workload | " + " | ".join(names) + " | plain / streamed | eager / streamed |")
    print("| --- |" + " ---: |" * (len(names) + 2))
    for name in problems:
        ms = {m: statistics.median(samples[(name, m)]) * 1e3 for m in names}
        fast = {m: min(samples[(name, m)]) * 1e3 for m in names}
        cells = " | ".join(f"{ms[m]:.3g} ({fast[m]:.3g})" for m in names)
        gain, vs_eager = ms["plain stores"] / ms["streamed"], ms["eager"] / ms["streamed"]
        print(f"| {name} | {cells} | {gain:.2f}x | {vs_eager:.2f}x |")


if __name__ == "__main__":
    main()
