"""Interleaved data in the generated CPU kernels, before and after (Notes [Interleaved access], [Words as pairs],
[Pairs in lane order]).

Times the programs of issue #13 whose kernels read or write (re, im) pairs, eager and
torchcx with ``config.interleaved_access`` on, on with ``config.lane_order`` off, and off,
interleaved in one process (rounds of one sample per mode, the order rotated; the median of
the samples), one thread:

    python benchmarks/interleaved.py [--sizes 14,18,20] [--rounds 9]

Ratios are eager's time over the mode's (higher is better). *copy* is the ratio a kernel
would reach that only copied the program's inputs to its outputs (``out.copy_(x)`` into
preallocated tensors: the bytes every implementation must move), the ceiling at sizes
where the memory system, not the arithmetic, bounds the program.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
from torchcx import config
from torchcx.bench.workloads.inplace import update_view
from torchcx.bench.workloads.rotary import (
    apply_rotary_emb,
    apply_rotary_emb_from_positions,
    inverse_frequencies,
    precompute_freqs_cis,
)


def rope(dtype: torch.dtype, n: int, in_graph: bool = False) -> tuple[Callable[..., Any], Callable[[], tuple]]:
    h, d = 8, 64
    b = 4 if n >= 1 << 20 else 1
    t = max(1, n // (b * h * d))
    g = torch.Generator().manual_seed(0)
    xq = torch.randn(b, t, h, d, generator=g).to(dtype)
    xk = torch.randn(b, t, h, d, generator=g).to(dtype)
    if in_graph:
        args = (xq, xk, torch.arange(t, dtype=torch.float32), inverse_frequencies(d))
        return apply_rotary_emb_from_positions, lambda: args
    args = (xq, xk, precompute_freqs_cis(d, t))
    return apply_rotary_emb, lambda: args


def inplace(n: int) -> tuple[Callable[..., Any], Callable[[], tuple]]:
    cols = min(1024, n)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n // cols, cols, dtype=torch.complex64, generator=g)
    angle = math.pi / 2 + math.pi * torch.rand(cols, generator=g)
    phase = torch.polar(torch.ones(cols), angle).to(torch.complex64)
    y = torch.randn(n // cols, cols, dtype=torch.complex64, generator=g)
    return update_view, lambda: (x, phase, y)  # |phase| = 1: x stays bounded (bench/workloads/inplace.py)


PROGRAMS: dict[str, Callable[[int], tuple[Callable[..., Any], Callable[[], tuple]]]] = {
    "rope-fp32": lambda n: rope(torch.float32, n),
    "rope-bf16": lambda n: rope(torch.bfloat16, n),
    "rope-fp32-freqs": lambda n: rope(torch.float32, n, in_graph=True),
    "inplace-view": inplace,
}


def copy_of(args: tuple) -> Callable[[], None]:
    """Copies of the tensors the program reads in full (not a broadcast table) into preallocated outputs."""
    big = max(a.numel() for a in args)
    sources = [a for a in args if a.numel() == big]
    outs = [torch.empty_like(a) for a in sources]

    def copy() -> None:
        for o, a in zip(outs, sources):
            o.copy_(a)

    return copy


def compiled(fn: Callable[..., Any], args: tuple, interleaved: bool, lanes: bool = True) -> Callable[..., Any]:
    with config.patch(interleaved_access=interleaved, lane_order=lanes):
        c = torchcx.compile(fn)
        c(*args)  # compiles with the setting (Note [Settings are part of what was compiled])
    return c


def sample(fn: Callable[..., Any], args: tuple, min_s: float = 0.02) -> float:
    calls, start = 0, time.perf_counter()
    while True:
        fn(*args)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_s:
            return elapsed / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="14,18,20", help="exponents of 2 (elements of q, or of x)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    a = parser.parse_args()
    torch.set_num_threads(1)
    torch._dynamo.config.cache_size_limit = 64
    print("program | n | eager us | torchcx | torchcx, lane order off | torchcx, interleaved off | copy")
    print("--- | ---: | ---: | ---: | ---: | ---: | ---:")
    for name in a.programs.split(","):
        for e in (int(s) for s in a.sizes.split(",")):
            fn, make = PROGRAMS[name](1 << e)
            args = make()
            torch._dynamo.reset()
            copy = copy_of(args)
            modes = {
                "eager": fn,
                "on": compiled(fn, args, True),
                "ordered": compiled(fn, args, True, lanes=False),
                "off": compiled(fn, args, False),
                "copy": lambda *_, copy=copy: copy(),
            }
            times: dict[str, list[float]] = {m: [] for m in modes}
            order = list(modes)
            for r in range(a.rounds):
                k = r % len(order)
                for m in order[k:] + order[:k]:
                    times[m].append(sample(modes[m], args))
            med = {m: statistics.median(v) for m, v in times.items()}
            print(
                f"{name} | 2^{e} | {med['eager'] * 1e6:.1f} | {med['eager'] / med['on']:.2f}x | "
                f"{med['eager'] / med['ordered']:.2f}x | {med['eager'] / med['off']:.2f}x | "
                f"{med['eager'] / med['copy']:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
