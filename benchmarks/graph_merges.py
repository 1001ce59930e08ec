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

from _switched import print_switched_suite

import torchcx.backend as backend

MODES = {"merged": [], "unmerged": [(backend, "_MERGE_REAL_GRAPHS", False)]}


def main() -> None:
    print_switched_suite(
        __doc__,
        MODES,
        "elementwise,rope-fp32,rope-bf16,fno,mlp,quantum,matmul,nls",
        "",
        "elementwise,modrelu",
        {"unmerged / merged": lambda ms: ms["unmerged"] / ms["merged"]},
    )


if __name__ == "__main__":
    main()
