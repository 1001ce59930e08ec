"""LLaMA-style rotary position embeddings, as in Meta's reference ``model.py``.

The frequencies are unit complex numbers made with ``torch.polar`` once at
setup (``precompute_freqs_cis``); each call rotates the query and key
activations by viewing consecutive pairs as complex numbers. Activations are
float32 or bfloat16; the rotation itself is computed in complex64, as the
reference code does. Memory-bound: an ideal kernel reads q, k and the
frequencies once and writes the rotated q and k once.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, SweepWorkload, Workload, log2_exact, to_numpy


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis: Tensor, x: Tensor) -> Tensor:
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: Tensor, xk: Tensor, freqs_cis: Tensor) -> tuple[Tensor, Tensor]:
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def inverse_frequencies(dim: int, theta: float = 10000.0) -> Tensor:
    return 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))


def apply_rotary_emb_from_positions(xq: Tensor, xk: Tensor, t: Tensor, inv_freq: Tensor) -> tuple[Tensor, Tensor]:
    """``apply_rotary_emb`` with ``freqs_cis`` made in the program from the positions ``t`` (float32)."""
    freqs = torch.outer(t, inv_freq)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    return apply_rotary_emb(xq, xk, freqs_cis)


def _jax_apply_rotary_emb(xq: Any, xk: Any, freqs_cis: Any) -> Any:
    import jax.numpy as jnp
    from jax import lax

    def rotate(x: Any) -> Any:
        pairs = x.astype(jnp.float32).reshape(*x.shape[:-1], -1, 2)
        rotated = lax.complex(pairs[..., 0], pairs[..., 1]) * freqs_cis[None, :, None, :]
        return jnp.stack([rotated.real, rotated.imag], axis=-1).reshape(x.shape).astype(x.dtype)

    return rotate(xq), rotate(xk)


def _jax_apply_rotary_emb_from_positions(xq: Any, xk: Any, t: Any, inv_freq: Any) -> Any:
    import jax.numpy as jnp
    from jax import lax

    freqs = jnp.outer(t, inv_freq)
    return _jax_apply_rotary_emb(xq, xk, lax.complex(jnp.cos(freqs), jnp.sin(freqs)))


#: (batch, sequence, heads, head dim): B4 T512 H8 D64 is the size issue #7 named
#: (cache-resident on the reference machine, about 1 ms eager: where per-kernel
#: costs show). The "-large" workloads beside them take T=2048, where DRAM
#: bandwidth dominates; neither is reported without the other.
#: ``python -m torchcx.bench --sweep`` times the same program from 2^10 to 2^24 elements.
_SHAPES = {"smoke": (1, 16, 2, 8), "quick": (4, 512, 8, 64), "full": (4, 512, 8, 64)}
_LARGE_SHAPES = {"smoke": (1, 32, 2, 8), "quick": (4, 2048, 8, 64), "full": (4, 2048, 8, 64)}


def build(dtype: torch.dtype, scale: str, device: torch.device, *, large: bool = False) -> Problem:
    b, t, h, d = (_LARGE_SHAPES if large else _SHAPES)[scale]
    return build_shape(dtype, (b, t, h, d), device)


def build_shape(dtype: torch.dtype, shape: tuple[int, int, int, int], device: torch.device) -> Problem:
    """The rotary embedding of (batch, sequence, heads, head dim) activations, ``freqs_cis`` precomputed."""
    b, t, h, d = shape
    g = torch.Generator().manual_seed(0)
    xq = torch.randn(b, t, h, d, generator=g).to(device=device, dtype=dtype)
    xk = torch.randn(b, t, h, d, generator=g).to(device=device, dtype=dtype)
    freqs_cis = precompute_freqs_cis(d, t).to(device)
    n = b * t * h * d
    return Problem(
        program=apply_rotary_emb,
        make_args=lambda: (xq, xk, freqs_cis),
        size=f"{str(dtype).removeprefix('torch.')} B={b} T={t} H={h} D={d}",
        bytes=4 * n * dtype.itemsize + freqs_cis.numel() * 8,
        flops=2 * 6 * n // 2,  # one complex multiply (6 flops) per pair, for q and k
        # bfloat16 results differ from eager by rounding the float32 rotation once
        # more or less: a bfloat16 ulp relative to the largest value.
        tolerance=1e-5 if dtype == torch.float32 else 2e-2,
        jax=lambda args: JaxCase(_jax_apply_rotary_emb, tuple(to_numpy(a) for a in args)),
    )


def sweep_shape(n: int) -> tuple[int, int, int, int]:
    """(B, T, H, D) with ``n`` elements: H=8, D=64, B=1 below 2^16 elements, 2 below 2^20, else 4.

    2^20 is B4 T512 H8 D64, issue #7's size; below 512 elements H, then D, shrink.
    """
    log2_exact(n)
    d = min(64, n)
    h = min(8, n // d)
    b = 4 if n >= 1 << 20 else 2 if n >= 1 << 16 else 1
    return b, n // (b * h * d), h, d


def build_n(dtype: torch.dtype, n: int, device: torch.device, *, in_graph: bool = False) -> Problem:
    """The rotary embedding of q and k, each of ``n`` elements (``sweep_shape``).

    ``in_graph``: ``freqs_cis`` is computed in the program (``torch.polar`` of
    ``torch.outer(t, inv_freq)``) from float32 positions and inverse frequencies.
    """
    problem = build_shape(dtype, sweep_shape(n), device)
    if not in_graph:
        return problem
    b, t, h, d = sweep_shape(n)
    xq, xk, _ = problem.make_args()
    positions = torch.arange(t, dtype=torch.float32, device=device)
    inv_freq = inverse_frequencies(d).to(device)
    problem.program = apply_rotary_emb_from_positions
    problem.make_args = lambda: (xq, xk, positions, inv_freq)
    problem.bytes = 4 * n * dtype.itemsize + 4 * (t + d // 2)
    problem.flops += 2 * t * d // 2  # the outer product; cos and sin not counted
    problem.jax = lambda args: JaxCase(_jax_apply_rotary_emb_from_positions, tuple(to_numpy(a) for a in args))
    problem.note = "freqs_cis computed in the program"
    return problem


WORKLOADS = [
    Workload("rope-fp32", "rotary embeddings, float32 activations", functools.partial(build, torch.float32)),
    Workload("rope-bf16", "rotary embeddings, bfloat16 activations", functools.partial(build, torch.bfloat16)),
    Workload(
        "rope-fp32-large",
        "rotary embeddings, float32 activations, T=2048",
        functools.partial(build, torch.float32, large=True),
    ),
    Workload(
        "rope-bf16-large",
        "rotary embeddings, bfloat16 activations, T=2048",
        functools.partial(build, torch.bfloat16, large=True),
    ),
]
SWEEP = [
    SweepWorkload(
        "rope-fp32", "rotary embeddings, float32, freqs_cis precomputed", functools.partial(build_n, torch.float32)
    ),
    SweepWorkload(
        "rope-bf16", "rotary embeddings, bfloat16, freqs_cis precomputed", functools.partial(build_n, torch.bfloat16)
    ),
    SweepWorkload(
        "rope-fp32-freqs",
        "rotary embeddings, float32, freqs_cis computed in the program",
        functools.partial(build_n, torch.float32, in_graph=True),
    ),
    SweepWorkload(
        "rope-bf16-freqs",
        "rotary embeddings, bfloat16, freqs_cis computed in the program",
        functools.partial(build_n, torch.bfloat16, in_graph=True),
    ),
]
