"""An in-place update returning a view: ``x.mul_(phase); x.add_(y); return x[:, ::2]``.

``x`` is a complex64 matrix updated in place (a graph input the compiled
program must write back), ``phase`` a row of unit complex numbers, ``y`` a
matrix like ``x``; the result is a strided view of ``x``, and a compiled
program must return a view of the very tensor it was given. Memory-bound: an
ideal kernel reads ``x`` and ``y`` once and writes ``x`` once.

Every call updates the same ``x`` (the timing loop has no room to restore it),
so its values must stay bounded: the update ``x <- x * p + y`` with ``|p| = 1``
has the fixed point ``x* = y / (1 - p)``, and ``x - x*`` only turns by ``p``
each call, so ``|x| <= |x*| + |x0 - x*|`` forever. The phases' angles are drawn
from [pi/2, 3pi/2], so ``|1 - p| >= sqrt(2)`` and ``|x*| <= |y| / sqrt(2)``: the
values stay of the order of the inputs however many calls are timed. Each
mode starts from its own copy of ``x``, so every mode's first call (the one
checked against eager) starts from the same values.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, SweepWorkload, log2_exact, to_numpy


def update_view(x: Tensor, phase: Tensor, y: Tensor) -> Tensor:
    x.mul_(phase)
    x.add_(y)
    return x[:, ::2]


def _observe(args: tuple[Any, ...], out: Tensor) -> list[Tensor]:
    """The view, the updated ``x``, and 1.0 if the view is a view of ``x`` (eager's aliasing) else 0.0."""
    x = args[0]
    aliases = (
        out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        and out.storage_offset() == x.storage_offset()
        and out.stride() == (x.stride(0), 2 * x.stride(1))
    )
    return [out, x, torch.tensor(1.0 if aliases else 0.0)]


def _jax_update_view(x: Any, phase: Any, y: Any) -> Any:
    x = x * phase + y
    return x[:, ::2], x


def _jax_observe(out: Any) -> list[Any]:
    import jax.numpy as jnp

    view, x = out
    return [view, x, jnp.float32(1.0)]  # JAX arrays are immutable: no aliasing to check


def build_n(n: int, device: torch.device) -> Problem:
    """``x`` of ``n`` complex64 elements: ``n / 1024`` rows of 1024 (one row below 1024 elements)."""
    log2_exact(n)
    cols = min(1024, n)
    rows = n // cols
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(rows, cols, dtype=torch.complex64, generator=g).to(device)
    angle = math.pi / 2 + math.pi * torch.rand(cols, generator=g)
    phase = torch.polar(torch.ones(cols), angle).to(device=device, dtype=torch.complex64)
    y = torch.randn(rows, cols, dtype=torch.complex64, generator=g).to(device)
    return Problem(
        program=update_view,
        make_args=lambda: (x0.clone(), phase, y),  # x is written: a copy per mode
        size=f"complex64 {rows}x{cols}",
        bytes=3 * 8 * n + 8 * cols,
        flops=8 * n,  # a complex multiply (6) and add (2) per element
        tolerance=1e-5,
        observe=_observe,
        jax=lambda args: JaxCase(
            _jax_update_view,
            tuple(to_numpy(a) for a in args),
            observe=_jax_observe,
            advance=lambda args, out: (out[1], *args[1:]),  # the next call updates the new x
        ),
        note="x updated in place, bounded (|phase| = 1)",
    )


SWEEP = [SweepWorkload("inplace-view", "x.mul_(phase); x.add_(y); return x[:, ::2]", build_n)]
