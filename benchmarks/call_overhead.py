"""The fixed cost of one compiled call, and torchcx's share of it, on programs too small to hide it.

    python benchmarks/call_overhead.py [--sizes 10 12 14] [--rounds 15]

For each program and size: eager on the complex program, stock ``torch.compile`` (Inductor) on
the *same program written in real arithmetic* (its floor: Dynamo's guards, AOTAutograd's runtime
wrapper and Inductor's ``call``, with no complex value anywhere), and ``torchcx.compile`` on the
complex program, as it is and with the returned views of inputs replayed by torchcx's run time
before AOTAutograd regenerates them (as before Note [Views AOTAutograd regenerates], in
src/torchcx/backend.py; each torchcx mode compiles its own wrapper function, caches off).
``boundary`` is the time torchcx's run-time wrapper (BoundaryRuntime: the views in and out, the
replayed views) spends around Inductor's ``call``. Modes interleaved in one process, one thread;
median µs per call. This is what decides the smallest sizes at which any
compiled mode can match eager (issue 13 asks for every size from 2^10).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx.backend
from torchcx._boundary.runtime import BoundaryRuntime


def inplace_view(x: torch.Tensor, phase: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.mul_(phase)
    x.add_(y)
    return x[:, ::2]


def inplace_view_real(xr: torch.Tensor, xi: torch.Tensor, pr: torch.Tensor, pi: torch.Tensor, yr, yi) -> Any:
    # the same update on planar float32 parts: (x * p) + y, written into x, a strided view returned
    re = xr * pr - xi * pi
    im = xr * pi + xi * pr
    xr.copy_(re + yr)
    xi.copy_(im + yi)
    return xr[:, ::2], xi[:, ::2]


def rope(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs).flatten(-2)


def rope_real(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def programs(
    n: int,
) -> dict[str, tuple[Callable[..., Any], Callable[[], tuple], Callable[..., Any], Callable[[], tuple]]]:
    g = torch.Generator().manual_seed(0)
    cols = max(n // 32, 2)

    def c(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.complex64, generator=g)

    # unit phases: repeated calls rotate x and add y, so no value drifts towards overflow or subnormals
    x, y = c(32, cols), c(32, cols)
    p = torch.polar(torch.ones(cols), torch.randn(cols, generator=g))
    d = 64
    q = torch.randn(n // d, d, generator=g)
    freqs = torch.polar(torch.ones(d // 2), torch.randn(d // 2, generator=g))
    return {
        "in-place update returning a view": (
            inplace_view,
            lambda: (x.clone(), p, y),
            inplace_view_real,
            lambda: (x.real.clone(), x.imag.clone(), p.real.clone(), p.imag.clone(), y.real.clone(), y.imag.clone()),
        ),
        "rotary embedding, float32": (
            rope,
            lambda: (q, freqs),
            rope_real,
            lambda: (q, freqs.real.contiguous(), freqs.imag.contiguous()),
        ),
    }


def compiled_now(fn: Callable[..., Any], args: tuple, tag: str, switches: list[tuple[Any, str, Any]]) -> Any:
    """``fn`` compiled by torchcx through a wrapper of its own (a distinct code object), its first call
    made with ``switches`` (object, attribute, value) set. Not ``_switched.compiled_with``: its
    ``isolate_recompiles`` adds about 6 us to every call, as much as this benchmark measures."""
    namespace: dict[str, Any] = {}
    exec(f"def {tag}(*args):\n    return fn(*args)\n", {"fn": fn}, namespace)
    compiled = torchcx.compile(namespace[tag])
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in switches]
    for owner, name, value in switches:
        setattr(owner, name, value)
    try:
        compiled(*args)
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
    return compiled


class _BoundaryClock:
    """Accumulates the time spent in BoundaryRuntime.__call__ outside Inductor's ``call``."""

    def __init__(self) -> None:
        self.outer = self.inner = 0.0
        self._original = BoundaryRuntime.__call__
        clock = self

        def timed(runtime: BoundaryRuntime, *args: Any) -> Any:
            if not getattr(runtime, "_clocked", False):
                compiled = runtime.compiled

                def inner(real_args: list[Any]) -> Any:
                    start = time.perf_counter()
                    out = compiled(real_args)
                    clock.inner += time.perf_counter() - start
                    return out

                runtime.compiled, runtime._clocked = inner, True
            start = time.perf_counter()
            out = clock._original(runtime, *args)
            clock.outer += time.perf_counter() - start
            return out

        BoundaryRuntime.__call__ = timed

    def close(self) -> None:
        BoundaryRuntime.__call__ = self._original


def per_call_us(fn: Callable[..., Any], args: tuple, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 12, 14], help="log2 of the complex elements")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300, help="calls per sample")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.force_disable_caches = True  # each mode lowers its own graph
    print(
        "| program | n | eager µs | stock Inductor, real program µs | torchcx µs | torchcx, views replayed µs "
        "| torchcx boundary µs |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    replayed = [(torchcx.backend, "_outputs_aot_regenerates", lambda kind: frozenset())]
    for log2 in args.sizes:
        for name, (fn, make, real_fn, make_real) in programs(1 << log2).items():
            torch._dynamo.reset()
            tag = f"{fn.__name__}_{log2}"
            args_cx, args_replayed = make(), make()
            modes = {
                "eager": (fn, make()),
                "inductor-real": (torch.compile(real_fn), make_real()),
                "torchcx": (compiled_now(fn, args_cx, tag, []), args_cx),
                "replayed": (compiled_now(fn, args_replayed, f"{tag}_replayed", replayed), args_replayed),
            }
            for f, a in modes.values():
                for _ in range(3):
                    f(*a)
            samples: dict[str, list[float]] = {k: [] for k in modes}
            for r in range(args.rounds):
                order = list(modes)[r % len(modes) :] + list(modes)[: r % len(modes)]
                for k in order:
                    samples[k].append(per_call_us(*modes[k], args.calls))
            clock = _BoundaryClock()
            try:
                per_call_us(*modes["torchcx"], args.calls)
            finally:
                clock.close()
            boundary = (clock.outer - clock.inner) / args.calls * 1e6
            med = {k: statistics.median(v) for k, v in samples.items()}
            print(
                f"| {name} | 2^{log2} | {med['eager']:.1f} | {med['inductor-real']:.1f} | {med['torchcx']:.1f} "
                f"| {med['replayed']:.1f} | {boundary:.1f} |"
            )


if __name__ == "__main__":
    main()
