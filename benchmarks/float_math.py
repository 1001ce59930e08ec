"""torchcx with and without Note [Float math in registers] (src/torchcx/_kernel_batches.py):
float hypot corrected in float and sine and cosine without a call, against the hypot in
double and Sleef's ``sincosf``; and, with ``--accuracy``, the accuracy of both helpers as the
compiled kernels compute them.

    python benchmarks/float_math.py [--workloads elementwise,nls,mlp] [--rounds 21]
        [--sizes 12,16,20,22] [--sweep-workloads elementwise,rope-fp32-freqs,modrelu]
    python benchmarks/float_math.py --accuracy [--hypot-pairs 26]

Modes: "in registers" is torchcx as it is; "calls" compiles the same program with the helpers
off (the hypot in double, Sleef's ``sincosf``). Each workload is compiled both ways in one
process, caches off, then timed with eager, interleaved round by round, one thread (how:
``benchmarks/_switched.py``). Prints the median and the fastest sample per mode (the time of
one call) and the median over rounds of the two torchcx modes' ratio.

``--accuracy`` compiles ``torch.polar(1, t)`` and ``z.abs()`` with torchcx and compares them,
and eager's, with float64: the sine and cosine of every float from 0 to 125 (past which the
helper calls Sleef), of 2^24 random floats of either sign below 125, and of floats within
1e-4 of multiples of pi/2 (where the reduction cancels); the hypot of 2^k random pairs over
the whole float range and of pairs whose squares nearly tie. Errors in ULP of the float
nearest the exact value.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from typing import Any

import torch
from _switched import compiled_with, parse_options, time_interleaved
from _switched import problems as suite_problems

import torchcx
import torchcx._kernel_batches as batches

#: mode -> the switches set while it compiles
MODES = {"in registers": (), "calls": ((batches, "_FLOAT_MATH_IN_REGISTERS", False),)}


def ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in ULP of the float nearest ``exact`` (float64), 0 where both are equal or
    where ``exact`` overflows float and ``got`` is infinite."""
    nearest = exact.float()
    ulp = (torch.nextafter(nearest.abs(), torch.tensor(math.inf)) - nearest.abs()).double()
    error = torch.where(got.double() == exact, 0.0, (got.double() - exact).abs() / ulp)
    return torch.where(nearest.isinf() & (got == nearest), 0.0, error)


def _worst(label: str, t: torch.Tensor, compiled: tuple[torch.Tensor, ...], eager: tuple[torch.Tensor, ...]) -> None:
    exact = (torch.sin(t.double()), torch.cos(t.double()))
    for fn, c, e, x in zip(("sin", "cos"), compiled, eager, exact):
        mine, theirs = ulps(c, x), ulps(e, x)
        at = t[mine.argmax()].item()
        print(f"{label:28s} {fn}: torchcx {mine.max().item():.3f} ULP (at {at!r}), eager {theirs.max().item():.3f} ULP")


def accuracy(hypot_pairs: int) -> None:
    polar = torchcx.compile(lambda t: torch.polar(torch.ones_like(t), t), dynamic=False)
    chunk = 1 << 24
    top = torch.tensor(125.0).view(torch.int32).item()
    worst = {"sin": (0.0, 0.0), "cos": (0.0, 0.0)}
    for start in range(0, top, chunk):  # every float in [0, 125)
        t = torch.arange(start, min(start + chunk, top), dtype=torch.int32).view(torch.float32)
        if t.numel() < chunk:
            t = torch.cat([t, t.new_zeros(chunk - t.numel())])
        z = polar(t)
        for fn, got, exact in (("sin", z.imag, torch.sin(t.double())), ("cos", z.real, torch.cos(t.double()))):
            e = ulps(got, exact)
            if e.max().item() > worst[fn][0]:
                worst[fn] = (e.max().item(), t[e.argmax()].item())
    for fn, (e, at) in worst.items():
        print(f"{'every float in [0, 125)':28s} {fn}: torchcx {e:.3f} ULP (at {at!r})")
    g = torch.Generator().manual_seed(0)
    t = (torch.rand(chunk, generator=g) * 250 - 125).float()
    z = polar(t)
    _worst("2^24 random in (-125, 125)", t, (z.imag, z.real), (torch.sin(t), torch.cos(t)))
    q = torch.randint(-79, 80, (chunk,), generator=g).double()
    t = (q * (math.pi / 2) + (torch.rand(chunk, generator=g, dtype=torch.float64) - 0.5) * 2e-4).float()
    z = polar(t)
    _worst("near multiples of pi/2", t, (z.imag, z.real), (torch.sin(t), torch.cos(t)))

    modulus = torchcx.compile(torch.abs, dynamic=False)
    n = 1 << hypot_pairs
    bits = torch.randint(0, 0x7F800000, (2, n), generator=g, dtype=torch.int32)  # every finite magnitude
    signs = torch.randint(0, 2, (2, n), generator=g, dtype=torch.int32) << 31
    wide = (bits | signs).view(torch.float32)
    a = torch.rand(n, generator=g) + 0.5
    near = torch.stack([a, (a * (1 + (torch.rand(n, generator=g) - 0.5) * 1e-3)).float()])  # squares nearly tie
    for label, (re, im) in (("hypot, every magnitude", wide), ("hypot, nearly equal parts", near)):
        got, eager = modulus(torch.complex(re, im)), torch.complex(re, im).abs()
        exact = torch.hypot(re.double(), im.double())
        print(
            f"{label:28s} torchcx {ulps(got, exact).max().item():.4f} ULP, "
            f"eager {ulps(eager, exact).max().item():.4f} ULP, "
            f"torchcx != the exact value rounded once: {int((got != exact.float()).sum())} of {n}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="elementwise,nls,mlp")
    parser.add_argument("--sizes", default="", help="exponents: the sweep workloads at 2^k elements too")
    parser.add_argument("--sweep-workloads", default="elementwise,rope-fp32-freqs,modrelu")
    parser.add_argument("--accuracy", action="store_true", help="the helpers' accuracy instead of their speed")
    parser.add_argument("--hypot-pairs", type=int, default=24, help="exponent: 2^k random pairs for the hypot")
    options = parse_options(parser)
    if options.accuracy:
        accuracy(options.hypot_pairs)
        return
    problems = suite_problems(options.workloads, options.sizes, options.sweep_workloads)
    modes: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    for name, problem in problems.items():
        modes[(name, "eager")] = (problem.program, problem.make_args())
        expected = problem.observe(modes[(name, "eager")][1], problem.program(*modes[(name, "eager")][1]))
        for mode, switches in MODES.items():
            args = problem.make_args()
            tag = "".join(c if c.isalnum() else "_" for c in f"{name}_{mode}")
            fn = compiled_with(problem.program, args, tag, switches)
            fresh = problem.make_args()  # a training step's first call, as eager's
            for got, want in zip(problem.observe(fresh, fn(*fresh)), expected):
                atol = problem.tolerance * want.abs().max().item()
                torch.testing.assert_close(got, want, rtol=problem.tolerance, atol=atol)
            modes[(name, mode)] = (fn, args)
    samples, _ = time_interleaved(modes, options.rounds)
    names = ("eager", *MODES)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms")
    print("| workload | " + " | ".join(names) + " | calls / in registers, per round |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    for name in problems:
        cells = " | ".join(
            f"{statistics.median(samples[(name, m)]) * 1e3:.3g} ({min(samples[(name, m)]) * 1e3:.3g})" for m in names
        )
        ratio = statistics.median(a / b for a, b in zip(samples[(name, "calls")], samples[(name, "in registers")]))
        print(f"| {name} | {cells} | {ratio:.3f}x |")


if __name__ == "__main__":
    main()
