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

from _switched import median_table, switched_suite

import torchcx
from torchcx._streaming_stores import last_level_cache_bytes

#: mode -> the switches set while it compiles
MODES = {"streamed": (), "plain stores": ((torchcx.config, "streaming_stores", False),)}


def main() -> None:
    options, built, samples, _ = switched_suite(
        __doc__, MODES, "rope-fp32-large,rope-bf16-large,elementwise", "18,20,22,24", "rope-fp32,inplace-view,crelu"
    )
    print(f"last-level cache {last_level_cache_bytes() >> 20} MiB; {options.threads} thread(s), median (fastest) of")
    print(f"{options.rounds} rounds, ms per call")
    ratios = {
        "plain / streamed": lambda ms: ms["plain stores"] / ms["streamed"],
        "eager / streamed": lambda ms: ms["eager"] / ms["streamed"],
    }
    print("\n".join(median_table(built, samples, ("eager", *MODES), ratios)))


if __name__ == "__main__":
    main()
