"""Where torchcx's time goes in each workload of the suite: ``torch.profiler`` over a few
steady calls, with Inductor's kernel profiling on, the self time summed per op (every
Inductor kernel counted as one entry).

    python benchmarks/profile_workloads.py [--workloads fno,nls,...] [--calls 10] [--top 6]

One thread; each workload compiled by torchcx (caches as they are), called three times, then
profiled. A profiled call is slower than a timed one (the profiler's own cost per op), so the
shares are what this is for, not the times.
"""

from __future__ import annotations

import argparse
import collections

import torch
from torch.profiler import profile

import torchcx
from torchcx.bench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--top", type=int, default=6)
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.cpp.enable_kernel_profile = True
    for name in options.workloads.split(","):
        problem = WORKLOADS[name].build("full", torch.device("cpu"))
        args = problem.make_args()
        fn = torchcx.compile(problem.program)
        for _ in range(3):
            fn(*args)
        with profile() as prof:
            for _ in range(options.calls):
                fn(*args)
        self_time: collections.Counter[str] = collections.Counter()
        for event in prof.key_averages():
            key = "Inductor kernels" if "cpp_fused" in event.key else event.key
            self_time[key] += event.self_cpu_time_total
        total = sum(self_time.values())
        print(f"{name}: {total / options.calls / 1e3:.2f} ms per profiled call")
        for key, us in self_time.most_common(options.top):
            print(f"  {key[:60]:60s} {us / options.calls / 1e3:8.3f} ms {100 * us / total:5.1f}%")


if __name__ == "__main__":
    main()
