"""The suite's workloads with and without Note [Large intermediates freed between kernels].

    python benchmarks/large_intermediates.py [--workloads quantum,nls] [--scale full] [--rounds 15]

For each workload, eager and two torchcx compilations of the same program in one process:
``config.free_large_intermediates`` on (the default) and off (Inductor's one C++ function
for each run of consecutive nodes). Both are compiled cold (Inductor's caches off) and
timed interleaved round by round, the order rotated, one thread. Prints, per mode, the
median and fastest time of a call, the minor page faults per call (fresh pages the
allocator had to map: intermediates that were not reused), and the first call's time
(``--off-first`` swaps the order of the two compilations: a later one reuses some of
Dynamo's and Inductor's in-process work).
A stateful program (a training step) gets fresh arguments per mode, as in the suite.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
from torchcx.bench.workloads import WORKLOADS


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _compiled(program: Callable[..., Any], args: tuple[Any, ...], free: bool) -> tuple[Callable[..., Any], float]:
    # options={} (or None) makes two backends that compare unequal, so Dynamo compiles twice
    compiled = torchcx.compile(program, options={} if free else None)
    with torchcx.config.patch(free_large_intermediates=free):
        start = time.perf_counter()
        compiled(*args)
        return compiled, time.perf_counter() - start


def run(name: str, scale: str, rounds: int, off_first: bool) -> None:
    problem = WORKLOADS[name].build(scale, torch.device("cpu"))
    args = {mode: problem.make_args() for mode in ("eager", "freed", "one function")}
    fns: dict[str, Callable[..., Any]] = {"eager": problem.program}
    first: dict[str, float] = {}
    for mode in ("one function", "freed") if off_first else ("freed", "one function"):
        fns[mode], first[mode] = _compiled(problem.program, args[mode], mode == "freed")
    start = time.perf_counter()
    problem.program(*args["eager"])
    calls = max(1, int(0.03 / max(time.perf_counter() - start, 1e-6)))
    samples: dict[str, list[float]] = {mode: [] for mode in fns}
    faults: dict[str, list[float]] = {mode: [] for mode in fns}
    order = list(fns)
    for r in range(rounds):
        for mode in order[r % len(order) :] + order[: r % len(order)]:
            before, start = _faults(), time.perf_counter()
            for _ in range(calls):
                fns[mode](*args[mode])
            samples[mode].append((time.perf_counter() - start) / calls * 1e3)
            faults[mode].append((_faults() - before) / calls)
    eager = statistics.median(samples["eager"])
    print(f"{name} [{problem.size}], {calls} calls per sample, {rounds} rounds")
    for mode in fns:
        med = statistics.median(samples[mode])
        compile_s = f"   first call {first[mode]:5.1f} s" if mode in first else ""
        print(
            f"  {mode:13} median {med:9.3f} ms ({eager / med:.2f}x eager)  fastest {min(samples[mode]):9.3f} ms"
            f"  faults/call {statistics.median(faults[mode]):7.1f}{compile_s}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="quantum,nls,fno,mlp,elementwise,rope-fp32,rope-bf16,matmul")
    parser.add_argument("--scale", default="full", choices=("smoke", "quick", "full"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--off-first", action="store_true", help="compile with the setting off first")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.force_disable_caches = True
    # The process's one-time costs (C++ compiler and ISA probes) go here, not to a first call.
    torchcx.compile(lambda a: a * 2)(torch.randn(8, dtype=torch.complex64))
    for name in options.workloads.split(","):
        run(name, options.scale, options.rounds, options.off_first)


if __name__ == "__main__":
    main()
