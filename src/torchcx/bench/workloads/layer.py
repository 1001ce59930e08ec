"""A complex linear layer with a complex activation: CReLU or modReLU.

``h = x @ w`` (complex64, 64 features in and out), then

* CReLU: ``torch.complex(relu(h.real), relu(h.imag))``;
* modReLU: ``relu(|h| + b) * h / |h|`` with a learned real bias ``b < 0``, 0
  where ``|h| = 0`` (the phase of 0 is undefined).

The GEMM is small (64x64 weights), so for a compiler the epilogue is the
part to fuse: eager makes a pass over ``h`` per op.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, SweepWorkload, log2_exact, to_numpy


def linear_crelu(x: Tensor, w: Tensor) -> Tensor:
    h = x @ w
    return torch.complex(torch.relu(h.real), torch.relu(h.imag))


def linear_modrelu(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    h = x @ w
    magnitude = h.abs()
    scale = torch.where(magnitude > 0, torch.relu(magnitude + b) / magnitude, torch.zeros_like(magnitude))
    return h * scale


def _jax_linear_crelu(x: Any, w: Any) -> Any:
    import jax.numpy as jnp
    from jax import lax

    h = x @ w
    return lax.complex(jnp.maximum(h.real, 0), jnp.maximum(h.imag, 0))


def _jax_linear_modrelu(x: Any, w: Any, b: Any) -> Any:
    import jax.numpy as jnp

    h = x @ w
    magnitude = jnp.abs(h)
    safe = jnp.where(magnitude > 0, magnitude, 1)
    return h * jnp.where(magnitude > 0, jnp.maximum(magnitude + b, 0) / safe, 0)


def build_n(activation: str, n: int, device: torch.device) -> Problem:
    """``n`` elements in ``x`` and in the layer's output: ``n / 64`` rows of 64 features (fewer below 64)."""
    log2_exact(n)
    features = min(64, n)
    batch = n // features
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, features, dtype=torch.complex64, generator=g).to(device)
    w = (torch.randn(features, features, dtype=torch.complex64, generator=g) / math.sqrt(features)).to(device)
    gemm_flops = 8 * n * features
    if activation == "crelu":
        args: tuple[Tensor, ...] = (x, w)
        program, jax_program, epilogue_flops = linear_crelu, _jax_linear_crelu, 2 * n
    else:
        b = -torch.rand(features, generator=g).to(device)  # in (-1, 0]: some outputs are zeroed
        args = (x, w, b)
        program, jax_program, epilogue_flops = linear_modrelu, _jax_linear_modrelu, 9 * n
    return Problem(
        program=program,
        make_args=lambda: args,
        size=f"complex64 {batch}x{features} @ {features}x{features}",
        bytes=2 * 8 * n + 8 * features * features,
        flops=gemm_flops + epilogue_flops,
        tolerance=1e-5,
        jax=lambda a: JaxCase(jax_program, tuple(to_numpy(t) for t in a)),
    )


SWEEP = [
    SweepWorkload("crelu", "complex linear layer + CReLU", functools.partial(build_n, "crelu")),
    SweepWorkload("modrelu", "complex linear layer + modReLU", functools.partial(build_n, "modrelu")),
]
