"""torchcx with and without Note [Float math in registers] (src/torchcx/_kernel_batches.py):
float hypot corrected in float and sine and cosine without a call, against the hypot in
double and Sleef's ``sincosf``.

    python benchmarks/float_math.py [--workloads elementwise,nls,mlp] [--rounds 21]
        [--sizes 12,16,20,22] [--sweep-workloads elementwise,rope-fp32-freqs,modrelu]

Modes: "in registers" is torchcx as it is; "calls" compiles the same program with the helpers
off (the hypot in double, Sleef's ``sincosf``). Each workload is compiled both ways in one
process, caches off, then timed with eager, interleaved round by round, one thread (how:
``benchmarks/_switched.py``). Prints the median and the fastest sample per mode (the time of
one call) and the ratio of the two torchcx modes' medians. Their accuracy:
``benchmarks/float_math_accuracy.py``.
"""

from __future__ import annotations

from _switched import print_switched_suite

import torchcx._kernel_batches as batches

#: mode -> the switches set while it compiles
MODES = {"in registers": (), "calls": ((batches, "_FLOAT_MATH_IN_REGISTERS", False),)}


def main() -> None:
    print_switched_suite(
        __doc__,
        MODES,
        "elementwise,nls,mlp",
        "",
        "elementwise,rope-fp32-freqs,modrelu",
        {"calls / in registers": lambda ms: ms["calls"] / ms["in registers"]},
    )


if __name__ == "__main__":
    main()
