"""torchcx with and without Note [Bfloat16 rounding in one instruction]
(src/torchcx/_kernel_batches.py): a kernel's float -> bfloat16 conversions rounded by one
``vcvtne2ps2bf16`` where the CPU has AVX-512 BF16 (and the vectors hold no NaN or subnormal),
against ATen's rounding in integer arithmetic.

    python benchmarks/bfloat16_rounding.py [--workloads rope-bf16,nls-b16] [--rounds 21]
        [--sizes 12,16,18,20,22] [--sweep-workloads rope-bf16,rope-bf16-freqs]

Modes: "one instruction" is torchcx as it is; "aten" compiles the same program with the helper
off. Each workload of the suite (full sizes; and each of ``--sweep-workloads`` at 2^k elements
for each ``--sizes`` k, as the size sweep builds it) is compiled both ways in one process,
caches off, then timed with eager, interleaved round by round, one thread. Prints the median
and the fastest sample per mode (the time of one call). On a CPU without AVX-512 BF16 both
modes run the same code. How the modes are compiled and timed, and why: ``benchmarks/_switched.py``.
"""

from __future__ import annotations

from _switched import median_table, switched_suite

import torchcx._kernel_batches as batches

#: mode -> the switches set while it compiles
MODES = {"one instruction": (), "aten": ((batches, "_ROUND_BF16_IN_ONE_INSTRUCTION", False),)}


def main() -> None:
    options, problems, samples, _ = switched_suite(__doc__, MODES, "rope-bf16,nls-b16", "", "rope-bf16,rope-bf16-freqs")
    names = ("eager", *MODES)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms per call")
    ratios = {
        "aten / one instruction": lambda ms: ms["aten"] / ms["one instruction"],
        "eager / one instruction": lambda ms: ms["eager"] / ms["one instruction"],
    }
    print("\n".join(median_table(problems, samples, names, ratios)))


if __name__ == "__main__":
    main()
