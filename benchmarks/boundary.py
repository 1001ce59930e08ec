"""What the complex boundary costs: interleaved complex64 in and out vs planar ComplexTensor.

    python benchmarks/boundary.py [--sizes 20 22] [--repeat 30]

The same fused elementwise computation, ``z = x*y + exp(1j*|x|)``, is timed
eager, with ``torch.compile`` (default Inductor), and with ``torchcx.compile``
on native complex64 tensors (interleaved memory: the boundary of Note
[Interleaved layouts]) and on planar ComplexTensors (two contiguous float32
buffers: no boundary at all). Median of repeated runs, all interleaved in one
process. Results go to stdout and to bench-results/boundary.json.

Allocation matters at 2^22: a complex64 result is 32 MiB, at glibc's largest
mmap threshold, so every call maps fresh pages and pays their first-touch
faults, while the planar result is two 16 MiB buffers that malloc reuses.
PyTorch's own ``THP_MEM_ALLOC_ENABLE=1`` (2 MiB-aligned allocations advised as
transparent huge pages) removes the faults' cost; run with it to see the
boundary alone:

    THP_MEM_ALLOC_ENABLE=1 python benchmarks/boundary.py --threads 1 --sizes 22
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

import torchcx


def chain(x, y):
    return x * y + torch.exp(1j * x.abs())


def median_ms(fn, *args, repeat: int) -> float:
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def run(log2n: int, repeat: int) -> dict[str, float]:
    n = 1 << log2n
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dtype=torch.complex64, generator=g)
    y = torch.randn(n, dtype=torch.complex64, generator=g)
    # Two independent float32 buffers each (from_interleaved(x).contiguous() would be x's
    # own memory: it is contiguous already, and contiguous() returns it, as torch does).
    xp = torchcx.complex(x.real.clone(), x.imag.clone())
    yp = torchcx.complex(y.real.clone(), y.imag.clone())
    assert xp.re.is_contiguous() and xp.re.untyped_storage().data_ptr() != xp.im.untyped_storage().data_ptr()
    torch._dynamo.reset()
    default = torch.compile(chain)
    interleaved = torchcx.compile(chain)
    planar = torchcx.compile(chain)
    expected = chain(x, y)
    torch.testing.assert_close(interleaved(x, y), expected)
    torch.testing.assert_close(planar(xp, yp).to_interleaved(), expected)
    modes = {
        "eager": (chain, x, y),
        "torch.compile": (default, x, y),
        "torchcx interleaved": (interleaved, x, y),
        "torchcx planar": (planar, xp, yp),
    }
    result = {name: median_ms(fn, *args, repeat=repeat) for name, (fn, *args) in modes.items()}
    # Memory traffic of the fused kernel: read x, y, write z (8 bytes each per element).
    result["GB/s interleaved"] = 3 * 8 * n / (result["torchcx interleaved"] * 1e-3) / 1e9
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 22], help="log2 of the element counts")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results = {}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    header = f"{'n':>8} {'eager':>9} {'compile':>9} {'cx inter':>9} {'cx planar':>9} {'inter/planar':>13} {'eager/inter':>12}"
    print(header)
    for log2n in args.sizes:
        r = run(log2n, args.repeat)
        results[f"2^{log2n}"] = r
        print(
            f"{'2^' + str(log2n):>8} {r['eager']:9.2f} {r['torch.compile']:9.2f} {r['torchcx interleaved']:9.2f} "
            f"{r['torchcx planar']:9.2f} {r['torchcx interleaved'] / r['torchcx planar']:13.2f} "
            f"{r['eager'] / r['torchcx interleaved']:12.1f}"
        )
    print("(ms, median; ratios: interleaved over planar time, eager over interleaved time)")
    os.makedirs("bench-results", exist_ok=True)
    with open("bench-results/boundary.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
