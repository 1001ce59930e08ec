"""torchcx with and without Note [Large buffers on huge pages] (src/torchcx/_fresh_pages.py):
the compiled wrapper asks for transparent huge pages on each CPU buffer of 32 MiB or more it
allocates, which glibc maps afresh at every call.

    python benchmarks/huge_pages.py [--workloads fno] [--rounds 7] [--sizes 20,22,24]
        [--sweep-workloads elementwise,rope-fp32,rope-bf16,crelu,bmm-epilogue]

Modes: "huge pages" is torchcx as it is; "4 KiB pages" compiles the same program with
``config.huge_pages`` off. Each workload of the suite (full sizes; and each of
``--sweep-workloads`` at 2^k elements for each ``--sizes`` k, as the size sweep builds it) is
compiled both ways in one process, caches off, then timed with eager, interleaved round by
round, one thread. Prints the median and the fastest sample per mode (the time of one call)
and the minor page faults per call. Where the kernel does not give huge pages on request
(``/sys/kernel/mm/transparent_hugepage/enabled`` is not ``[madvise]``) both modes run the same
code. How the modes are compiled and timed, and why: ``benchmarks/_switched.py``.
"""

from __future__ import annotations

import statistics

from _switched import median_table, switched_suite

import torchcx
from torchcx import _fresh_pages

#: mode -> the switches set while it compiles
MODES = {"huge pages": (), "4 KiB pages": ((torchcx.config, "huge_pages", False),)}


def main() -> None:
    options, problems, samples, faults = switched_suite(
        __doc__, MODES, "fno", "20,22,24", "elementwise,rope-fp32,rope-bf16,crelu,bmm-epilogue"
    )
    names = ("eager", *MODES)
    print(f"huge pages on request here: {_fresh_pages.advisable()}")
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms per call")
    ratios = {
        "4 KiB / huge": lambda ms: ms["4 KiB pages"] / ms["huge pages"],
        "eager / huge": lambda ms: ms["eager"] / ms["huge pages"],
        "eager / 4 KiB": lambda ms: ms["eager"] / ms["4 KiB pages"],
    }
    print("\n".join(median_table(problems, samples, names, ratios)))
    print("\npage faults per call (median): " + ", ".join(names))
    for name in problems:
        print(f"| {name} | " + " | ".join(f"{statistics.median(faults[(name, m)]):.0f}" for m in names) + " |")


if __name__ == "__main__":
    main()
