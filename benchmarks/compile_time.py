"""Compile time of torchcx.compile against default torch.compile, caches off.

    python benchmarks/compile_time.py

For each program, the first call of a freshly compiled function (Dynamo,
AOTAutograd, lowering, Inductor codegen and the C++ compiler) minus one
steady-state call, median of three fresh compilations, with Inductor's caches
disabled for both backends. Results also go to bench-results/compile_time.json.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import torch

import torchcx


def chain(x, y):
    return x * y + torch.exp(1j * x.abs())


def rope(xq, xk, freqs_cis):
    # LLaMA's apply_rotary_emb
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class ComplexMLP(torch.nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width, dtype=torch.complex64) for _ in range(3))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            z = layer(z)
            z = torch.polar(torch.relu(z.abs() - 0.1), z.angle())  # modReLU
        return z


def mlp_step(model, z, target):
    loss = (model(z) - target).abs().pow(2).mean()
    loss.backward()
    return loss


def programs():
    g = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(1 << 16, dtype=torch.complex64, generator=g),
        torch.randn(1 << 16, dtype=torch.complex64, generator=g),
    )
    xq, xk = torch.randn(2, 64, 4, 32, generator=g), torch.randn(2, 64, 4, 32, generator=g)
    freqs = torch.polar(torch.ones(64, 16), torch.randn(64, 16, generator=g))
    model = ComplexMLP()
    z, target = (
        torch.randn(32, 64, dtype=torch.complex64, generator=g),
        torch.randn(32, 64, dtype=torch.complex64, generator=g),
    )
    return {
        "elementwise chain": (chain, (x, y)),
        "rotary embedding": (rope, (xq, xk, freqs)),
        "complex MLP fwd+bwd": (lambda m, a, b: mlp_step(m, a, b), (model, z, target)),
    }


def compile_seconds(compiler, fn, args) -> float:
    samples = []
    for _ in range(3):
        torch._dynamo.reset()
        compiled = compiler(fn)
        start = time.perf_counter()
        compiled(*args)
        first = time.perf_counter() - start
        start = time.perf_counter()
        compiled(*args)
        steady = time.perf_counter() - start
        samples.append(first - steady)
    return statistics.median(samples)


def main() -> None:
    torch._inductor.config.force_disable_caches = True
    results = {}
    print(f"{'program':<22} {'torch.compile':>14} {'torchcx':>9} {'ratio':>6}")
    for name, (fn, args) in programs().items():
        default = compile_seconds(torch.compile, fn, args)
        ours = compile_seconds(torchcx.compile, fn, args)
        results[name] = {"torch.compile_s": default, "torchcx_s": ours, "ratio": ours / default}
        print(f"{name:<22} {default:13.2f}s {ours:8.2f}s {ours / default:6.2f}")
    os.makedirs("bench-results", exist_ok=True)
    with open("bench-results/compile_time.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
