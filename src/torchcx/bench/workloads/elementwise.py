"""A fused elementwise chain: ``z = x*y + exp(1j*|x|)``, its squared norms and ``z``.

Memory-bound: an ideal kernel reads ``x`` and ``y`` once and writes ``z`` once
(24 bytes per complex64 element); eager runs a kernel per op, each a full pass
over memory.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, SweepWorkload, Workload, log2_exact, to_numpy


def chain(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    z = x * y + torch.exp(1j * x.abs())
    return (z * z.conj()).real.sum(-1), z


def _jax_chain(x: Any, y: Any) -> Any:
    import jax.numpy as jnp

    z = x * y + jnp.exp(1j * jnp.abs(x))
    return (z * z.conj()).real.sum(-1), z


#: (rows, columns): 2^20 elements take about 30-90 ms eager on the 2-core reference machine.
_SHAPES = {"smoke": (4, 256), "quick": (4, 1 << 16), "full": (16, 1 << 16)}


def build(scale: str, device: torch.device) -> Problem:
    return build_shape(*_SHAPES[scale], device)


def build_n(n: int, device: torch.device) -> Problem:
    """The chain on ``n`` complex64 elements: 16 rows (one below 256 elements) of ``n / 16``."""
    log2_exact(n)
    rows = 16 if n >= 256 else 1
    return build_shape(rows, n // rows, device)


def build_shape(rows: int, cols: int, device: torch.device) -> Problem:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(rows, cols, dtype=torch.complex64, generator=g).to(device)
    y = torch.randn(rows, cols, dtype=torch.complex64, generator=g).to(device)
    n = rows * cols
    return Problem(
        program=chain,
        make_args=lambda: (x, y),  # read-only inputs: every mode may share them
        size=f"complex64 {rows}x{cols}",
        bytes=3 * 8 * n + 4 * rows,
        # x*y: 6, |x|: 3 (hypot), exp(i a): 2 (cos, sin), +: 2, z*conj(z) real part: 3, sum: 1
        flops=17 * n,
        tolerance=1e-5,
        jax=lambda args: JaxCase(_jax_chain, tuple(to_numpy(a) for a in args)),
    )


WORKLOADS = [Workload("elementwise", "fused elementwise chain", build)]
SWEEP = [SweepWorkload("elementwise", "fused elementwise chain, n complex64 elements", build_n)]
