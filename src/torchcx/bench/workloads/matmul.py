"""A batched complex matrix product with an elementwise epilogue: ``abs(a @ b * phase)``.

The size sweep's variant keeps the product complex: ``(a @ b) * scale + bias``.

GEMM-bound: 8 real flops per complex multiply-add. Eager calls the vendor's
complex GEMM (cgemm) and then one kernel per epilogue op; a compiler can fuse
the epilogue into a single pass over the product.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, SweepWorkload, Workload, log2_exact, to_numpy


def matmul_epilogue(a: Tensor, b: Tensor, phase: Tensor) -> Tensor:
    return (a @ b * phase).abs()


def _jax_matmul_epilogue(a: Any, b: Any, phase: Any) -> Any:
    import jax.numpy as jnp

    return jnp.abs(a @ b * phase)


def matmul_scale_bias(a: Tensor, b: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    return (a @ b) * scale + bias


def _jax_matmul_scale_bias(a: Any, b: Any, scale: Any, bias: Any) -> Any:
    return (a @ b) * scale + bias


def build_n(n: int, device: torch.device) -> Problem:
    """``(a @ b) * scale + bias`` with ``n`` elements in each of a, b and the result.

    64x64 complex64 matrices (smaller below 2^12 elements), ``n / 4096`` of them;
    ``scale`` and ``bias`` are complex per-column vectors.
    """
    m = 1 << min(6, log2_exact(n) // 2)
    batch = n // (m * m)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(batch, m, m, dtype=torch.complex64, generator=g).to(device)
    b = torch.randn(batch, m, m, dtype=torch.complex64, generator=g).to(device)
    scale = torch.randn(m, dtype=torch.complex64, generator=g).to(device)
    bias = torch.randn(m, dtype=torch.complex64, generator=g).to(device)
    return Problem(
        program=matmul_scale_bias,
        make_args=lambda: (a, b, scale, bias),
        size=f"complex64 {batch}x{m}x{m}",
        bytes=3 * 8 * n + 2 * 8 * m,
        flops=8 * n * m + 8 * n,
        tolerance=1e-5,
        jax=lambda args: JaxCase(_jax_matmul_scale_bias, tuple(to_numpy(x) for x in args)),
    )


#: (batch, n): n x n matrices; "full" is the issue's size.
_SHAPES = {"smoke": (2, 16), "quick": (16, 256), "full": (16, 256)}


def build(scale: str, device: torch.device) -> Problem:
    batch, n = _SHAPES[scale]
    g = torch.Generator().manual_seed(0)
    a = torch.randn(batch, n, n, dtype=torch.complex64, generator=g).to(device)
    b = torch.randn(batch, n, n, dtype=torch.complex64, generator=g).to(device)
    phase = torch.polar(torch.ones(n), 2 * torch.pi * torch.rand(n, generator=g)).to(device)
    return Problem(
        program=matmul_epilogue,
        make_args=lambda: (a, b, phase),
        size=f"complex64 {batch}x{n}x{n}",
        bytes=(2 * 8 + 4) * batch * n * n,
        flops=8 * batch * n**3,
        tolerance=1e-5,
        jax=lambda args: JaxCase(_jax_matmul_epilogue, tuple(to_numpy(a) for a in args)),
    )


WORKLOADS = [Workload("matmul", "batched complex matmul + epilogue", build)]
SWEEP = [SweepWorkload("bmm-epilogue", "batched complex matmul, (a @ b) * scale + bias", build_n)]
