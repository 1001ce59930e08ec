"""Compile time of the suite's workloads cold and from the caches, each first call in a new process.

    python benchmarks/cache_loads.py [--workloads quantum,nls,...] [--loads 2]

Per workload: a fresh ``TORCHINDUCTOR_CACHE_DIR`` (Inductor's ISA check, and torchcx's stamp of
it, warmed there first by a trivial compile with each backend, so that no row carries them),
then, one process after another, default ``torch.compile`` cold and ``--loads`` times from the
caches, then torchcx the same. A row is a
new process's first call minus a steady call (one thread, the suite's full sizes), with the
AOTAutograd cache counters of that process (Note [torchcx graphs in AOTAutograd's cache]).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODES = ("torch.compile", "torchcx")


def child(workload: str, mode: str) -> None:
    import torch

    torch.set_num_threads(1)
    from torch._dynamo.utils import counters

    import torchcx
    from torchcx.bench.workloads import WORKLOADS

    problem = WORKLOADS[workload].build("full", torch.device("cpu"))
    args = problem.make_args()
    # The compiled function is made inside the timed span: ``torch.compile`` with the default
    # backend imports Inductor's compile_fx (0.8 s here) when it makes the wrapper, torchcx's
    # backend at the first call, and each must be charged the same.
    start = time.perf_counter()
    fn = torchcx.compile(problem.program) if mode == "torchcx" else torch.compile(problem.program)
    fn(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    fn(*args)
    steady = time.perf_counter() - start
    print(json.dumps({"compile_s": first - steady, "aot_autograd": dict(counters["aot_autograd"])}))


def run(workload: str, mode: str, cache: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, __file__, "--child", workload, mode], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="quantum,nls,mlp,fno,elementwise,rope-fp32")
    parser.add_argument("--loads", type=int, default=2, help="new processes from the caches per mode")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "MODE"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(*options.child)
        return
    print("| workload | mode | cold s | from the caches s | AOTAutograd cache, last load |")
    print("| --- | --- | ---: | ---: | --- |")
    for workload in options.workloads.split(","):
        with tempfile.TemporaryDirectory(prefix="torchcx-cache-loads-") as cache:
            # Each backend's one-time costs of a new cache directory: Inductor's ISA check,
            # and torchcx's stamp of it (Note [The ISA probe remembered]), which a user's
            # cache directory has after its first torchcx compilation.
            # One process per backend: a process probes the ISAs once, so a torchcx compile after
            # a default one in the same process would leave no stamp.
            for warm in (
                "import torch; torch.compile(lambda x: x + 1)(torch.ones(3))",
                "import torch, torchcx; torchcx.compile(lambda z: z * 2j)(torch.ones(3, dtype=torch.complex64))",
            ):
                subprocess.run(
                    [sys.executable, "-c", warm], env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}, check=True
                )
            for mode in MODES:
                cold = run(workload, mode, cache)
                loads = [run(workload, mode, cache) for _ in range(options.loads)]
                times = ", ".join(f"{r['compile_s']:.2f}" for r in loads)
                print(
                    f"| {workload} | {mode} | {cold['compile_s']:.2f} | {times} | {loads[-1]['aot_autograd']} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
