"""torchcx on a CUDA device: representative programs, compiled, against eager.

CI has no GPU, so these tests skip there; they run where ``torch.cuda.is_available()``
(``tools/gpu_check.sh`` runs them with the benchmark suite on a GPU machine). Each
program is compared with eager native complex PyTorch on the same device, and the
graphs Inductor lowered must hold no complex values.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import torchcx
from compile_harness import record_inductor_graphs
from torchcx import ComplexTensor

# TORCHCX_TEST_DEVICE=cpu runs the same programs on the CPU (to check the tests themselves).
DEVICE = os.environ.get("TORCHCX_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")


def cplx(*shape: int, seed: int = 0, dtype: torch.dtype = torch.complex64) -> torch.Tensor:
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(shape, dtype=dtype, device=DEVICE, generator=g)


def compiled_real_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``torchcx.compile(fn)(*args)``; the graphs Inductor lowered must be real-only."""
    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torchcx.compile(fn)(*args)
    assert not recorder.complex_nodes, f"complex values reached Inductor: {recorder.complex_nodes[:3]}"
    return out


def comparable(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(torch.complex64)
    return x


def assert_matches_eager(fn: Callable[..., Any], *args: Any, **tol: float) -> None:
    expected = fn(*[a.clone() for a in args])
    got = compiled_real_only(fn, *[a.clone() for a in args])
    torch.testing.assert_close(comparable(got), expected, **tol)


def test_elementwise_chain() -> None:
    def chain(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = x * y + torch.exp(1j * x.abs())
        return (z * z.conj()).real.sum(-1), z

    assert_matches_eager(chain, cplx(16, 4096), cplx(16, 4096, seed=1))


def test_input_mutation_and_aliasing() -> None:
    def mutate(x: torch.Tensor) -> torch.Tensor:
        x[1:].mul_(2j)
        x.real.add_(1)
        return x.T

    x_eager, x_compiled = cplx(4, 6), cplx(4, 6)
    out_eager = mutate(x_eager)
    out = compiled_real_only(mutate, x_compiled)
    torch.testing.assert_close(x_compiled, x_eager)
    torch.testing.assert_close(out, out_eager)
    assert out.data_ptr() == x_compiled.data_ptr()


@pytest.mark.parametrize("act", [torch.float32, torch.bfloat16], ids=str)
def test_rotary_embedding(act: torch.dtype) -> None:
    def rope(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        f = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
        return torch.view_as_real(xq_ * f).flatten(3).type_as(xq), torch.view_as_real(xk_ * f).flatten(3).type_as(xk)

    b, t, h, d = 2, 128, 4, 64
    g = torch.Generator(device=DEVICE).manual_seed(0)
    xq = torch.randn(b, t, h, d, device=DEVICE, generator=g).to(act)
    xk = torch.randn(b, t, h, d, device=DEVICE, generator=g).to(act)
    freqs = torch.outer(torch.arange(t, device=DEVICE).float(), torch.rand(d // 2, device=DEVICE, generator=g))
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    assert_matches_eager(rope, xq, xk, freqs_cis)


@pytest.mark.parametrize("path", ["vendor", "real"])
def test_fft_split_step(path: str) -> None:
    def step(psi: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        psi = torch.fft.ifft(torch.exp(-0.5j * k**2 * 1e-3) * torch.fft.fft(psi))
        return psi * torch.exp(1j * psi.abs() ** 2 * 1e-3)

    k = torch.fft.fftfreq(1024, device=DEVICE) * 2 * torch.pi
    with torchcx.config.patch(fft_path=path):
        assert_matches_eager(step, cplx(8, 1024), k, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("path", ["vendor", "real"])
def test_rfft2_spectral_conv(path: str) -> None:
    def spectral(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        xf = torch.fft.rfft2(x)
        out = torch.zeros(x.shape[0], w.shape[1], x.shape[-2], x.shape[-1] // 2 + 1, dtype=xf.dtype, device=x.device)
        out[:, :, :8, :8] = torch.einsum("bixy,ioxy->boxy", xf[:, :, :8, :8], w)
        return torch.fft.irfft2(out, s=x.shape[-2:])

    x = torch.randn(2, 4, 32, 32, device=DEVICE)
    with torchcx.config.patch(fft_path=path):
        assert_matches_eager(spectral, x, cplx(4, 4, 8, 8), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("strategy", ["4m", "block", "native", "auto"])
def test_matmul_strategies(strategy: str) -> None:
    def product(a: torch.Tensor, b: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        return (a @ b * phase).abs()

    with torchcx.config.patch(matmul_strategy=strategy):
        assert_matches_eager(product, cplx(4, 64, 64), cplx(4, 64, 64, seed=1), cplx(64, seed=2), rtol=1e-4, atol=1e-4)


def test_complex128() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x) * torch.log(x) / (x + 1)

    assert_matches_eager(f, cplx(1000, dtype=torch.complex128))


def test_bfloat16_parts() -> None:
    """bf16 parts on the GPU: elementwise, matmul and FFT against complex64 on the same values."""

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft(torch.exp(a) * (a @ b))  # (1j * a.abs() would promote to complex64, as torch does)

    a = torchcx.as_complex_tensor(cplx(32, 32), torch.bfloat16)
    b = torchcx.as_complex_tensor(cplx(32, 32, seed=1), torch.bfloat16)
    out = compiled_real_only(f, a, b)
    assert isinstance(out, ComplexTensor) and out.component_dtype == torch.bfloat16
    expected = f(a.to_interleaved(torch.complex64), b.to_interleaved(torch.complex64))
    error = (out.to_interleaved(torch.complex64) - expected).norm() / expected.norm()
    assert error < 2e-2, error


def test_training_step() -> None:
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(32, 32, dtype=torch.cfloat), nn.Linear(32, 8, dtype=torch.cfloat)).to(DEVICE)
    compiled = nn.Sequential(nn.Linear(32, 32, dtype=torch.cfloat), nn.Linear(32, 8, dtype=torch.cfloat)).to(DEVICE)
    compiled.load_state_dict(eager.state_dict())
    step = torchcx.compile(compiled)
    x, target = cplx(16, 32), cplx(16, 8, seed=1)
    opts = [torch.optim.Adam(m.parameters(), lr=1e-2) for m in (eager, compiled)]
    for _ in range(3):
        for model, opt in zip((eager, step), opts):
            opt.zero_grad()
            loss = (model(x) - target).abs().pow(2).mean()
            loss.backward()
            opt.step()
    for p, q in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5)
