"""A LLaMA-style transformer block with rotary position embeddings, compiled with torchcx.

Rotary embeddings (RoPE, Su et al. 2021) rotate each consecutive pair of
query/key features by an angle proportional to the token's position. LLaMA's
reference code (``model.py``) writes the rotation with complex numbers: the
pairs are viewed as complex (``view_as_complex``), multiplied by unit complex
frequencies made with ``torch.polar``, and viewed back (``view_as_real``).
This file keeps that code as it is; ``torchcx.compile`` turns the complex
multiply into real arithmetic that Inductor fuses with its neighbours.

Checks (besides compiled == eager):

* the rotation preserves the norm of every query/key head vector;
* the block depends on relative positions only: shifting every position by
  the same offset (``freqs_cis[s : s + T]`` instead of ``freqs_cis[:T]``)
  leaves its output unchanged, because ``<R(m) q, R(n) k> = <q, R(n - m) k>``.

    python examples/rope_attention.py [--small]
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from _util import Checks, parser, report_times, time_side_by_side
from torch import Tensor, nn

import torchcx


@dataclass
class ModelArgs:
    dim: int = 512
    n_heads: int = 8
    multiple_of: int = 256  # the feed-forward width is rounded up to a multiple of this
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0


# -- rotary embeddings, as in LLaMA's model.py ------------------------------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> Tensor:
    """e^{i m theta_j} for positions m < end and the dim/2 frequencies theta_j = theta^(-2j/dim)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


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


# -- the block ----------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x: Tensor, freqs_cis: Tensor) -> Tensor:
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        # (bsz, heads, seqlen, head_dim) for attention; causal, as in a decoder
        out = F.scaled_dot_product_attention(xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, multiple_of: int) -> None:
        super().__init__()
        hidden = int(2 * (4 * dim) / 3)
        hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # SwiGLU


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, args.multiple_of)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x: Tensor, freqs_cis: Tensor) -> Tensor:
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


# -- the demo -----------------------------------------------------------------------------------


def relative_error(a: Tensor, b: Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def run(small: bool) -> dict[str, float]:
    batch, seqlen = (1, 16) if small else (4, 256)
    args = ModelArgs(dim=64, n_heads=4, multiple_of=32) if small else ModelArgs()
    torch.manual_seed(0)
    block = TransformerBlock(args).eval()
    x = torch.randn(batch, seqlen, args.dim)
    head_dim = args.dim // args.n_heads
    # room for a shifted window of positions [seqlen, 2 seqlen) too
    freqs_cis = precompute_freqs_cis(head_dim, 2 * seqlen, args.rope_theta)
    window, shifted = freqs_cis[:seqlen], freqs_cis[seqlen:]
    print(f"LLaMA block: batch {batch}, {seqlen} tokens, dim {args.dim}, {args.n_heads} heads of {head_dim}")

    compiled_block = torchcx.compile(copy.deepcopy(block))
    compiled_rope = torchcx.compile(apply_rotary_emb)
    with torch.no_grad():
        expected = block(x, window)
        actual = compiled_block(x, window)
        actual_shifted = compiled_block(x, shifted)
        xq = block.attention.wq(x).view(batch, seqlen, args.n_heads, head_dim)
        xk = block.attention.wk(x).view(batch, seqlen, args.n_heads, head_dim)
        rq, rk = compiled_rope(xq, xk, window)
        eq, ek = apply_rotary_emb(xq, xk, window)

    checks = Checks()
    figures = {
        "block compiled vs eager (relative)": relative_error(actual, expected),
        "rope compiled vs eager (relative)": max(relative_error(rq, eq), relative_error(rk, ek)),
        # |R(m) q| = |q| for every head vector
        "norm change under rotation (relative)": ((rq.norm(dim=-1) - xq.norm(dim=-1)).abs() / xq.norm(dim=-1))
        .max()
        .item(),
        # only relative positions matter: the same block on positions shifted by seqlen
        f"output change when positions shift by {seqlen} (relative)": relative_error(actual_shifted, actual),
    }
    # float32 rounding of the GEMMs, and of the angles m * theta_j (about 1e-7 * m radians)
    bounds = [1e-5, 1e-6, 1e-6, 1e-5 * math.log2(4 * seqlen)]
    for (what, value), bound in zip(figures.items(), bounds):
        checks.below(what, value, bound)

    print("time per call (median, interleaved):")
    with torch.no_grad():
        block_times = time_side_by_side(
            {"eager": lambda: block(x, window), "torchcx.compile": lambda: compiled_block(x, window)},
            repeat=3 if small else 10,
        )
        print(" whole block:")
        report_times(block_times)
        rope_times = time_side_by_side(
            {
                "eager": lambda: apply_rotary_emb(xq, xk, window),
                "torchcx.compile": lambda: compiled_rope(xq, xk, window),
            },
            repeat=5 if small else 50,
        )
        print(" rotary embedding alone:")
        report_times(rope_times)
    figures["block speedup"] = block_times["eager"] / block_times["torchcx.compile"]
    figures["rope speedup"] = rope_times["eager"] / rope_times["torchcx.compile"]
    checks.finish()
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    return run(args.small)


if __name__ == "__main__":
    main()
