"""torchcx on every device PyTorch's test framework finds: representative programs, compiled, against eager.

Device-generic tests in the OpInfo style: ``instantiate_device_type_tests`` makes a
class per device type (``TestDevicesCPU`` here; ``TestDevicesCUDA`` where a CUDA
device is available, which ``tools/gpu_check.sh`` runs), and each test takes the
``device`` it runs on. Each program is compared with eager native complex PyTorch
on the same device (values, dtypes and device: ``assert_close``), and the graphs
Inductor lowered must hold no complex values; on CUDA they are Triton kernels, and
the vendor FFT (cuFFT) and complex GEMM (cuBLAS) run as extern kernels.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

import torchcx
from compile_harness import record_inductor_graphs
from torchcx import ComplexTensor


def cplx(device: str, *shape: int, seed: int = 0, dtype: torch.dtype = torch.complex64) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, dtype=dtype, device=device, generator=g)


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


class TestDevices(TestCase):
    def test_elementwise_chain(self, device: str) -> None:
        def chain(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            z = x * y + torch.exp(1j * x.abs())
            return (z * z.conj()).real.sum(-1), z

        assert_matches_eager(chain, cplx(device, 16, 4096), cplx(device, 16, 4096, seed=1))

    def test_input_mutation_and_aliasing(self, device: str) -> None:
        def mutate(x: torch.Tensor) -> torch.Tensor:
            x[1:].mul_(2j)
            x.real.add_(1)
            return x.T

        x_eager, x_compiled = cplx(device, 4, 6), cplx(device, 4, 6)
        out_eager = mutate(x_eager)
        out = compiled_real_only(mutate, x_compiled)
        torch.testing.assert_close(x_compiled, x_eager)
        torch.testing.assert_close(out, out_eager)
        assert out.data_ptr() == x_compiled.data_ptr()

    @dtypes(torch.float32, torch.bfloat16)
    def test_rotary_embedding(self, device: str, dtype: torch.dtype) -> None:
        def rope(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
            xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
            f = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
            q, k = torch.view_as_real(xq_ * f).flatten(3), torch.view_as_real(xk_ * f).flatten(3)
            return q.type_as(xq), k.type_as(xk)

        b, t, h, d = 2, 128, 4, 64
        g = torch.Generator(device=device).manual_seed(0)
        xq = torch.randn(b, t, h, d, device=device, generator=g).to(dtype)
        xk = torch.randn(b, t, h, d, device=device, generator=g).to(dtype)
        freqs = torch.outer(torch.arange(t, device=device).float(), torch.rand(d // 2, device=device, generator=g))
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        assert_matches_eager(rope, xq, xk, freqs_cis)

    @parametrize("path", ["vendor", "real"])
    def test_fft_split_step(self, device: str, path: str) -> None:
        def step(psi: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            psi = torch.fft.ifft(torch.exp(-0.5j * k**2 * 1e-3) * torch.fft.fft(psi))
            return psi * torch.exp(1j * psi.abs() ** 2 * 1e-3)

        k = torch.fft.fftfreq(1024, device=device) * 2 * torch.pi
        with torchcx.config.patch(fft_path=path):
            assert_matches_eager(step, cplx(device, 8, 1024), k, rtol=1e-4, atol=1e-5)

    @parametrize("path", ["vendor", "real"])
    def test_rfft2_spectral_conv(self, device: str, path: str) -> None:
        def spectral(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            xf = torch.fft.rfft2(x)
            shape = (x.shape[0], w.shape[1], x.shape[-2], x.shape[-1] // 2 + 1)
            out = torch.zeros(shape, dtype=xf.dtype, device=x.device)
            out[:, :, :8, :8] = torch.einsum("bixy,ioxy->boxy", xf[:, :, :8, :8], w)
            return torch.fft.irfft2(out, s=x.shape[-2:])

        x = torch.randn(2, 4, 32, 32, device=device)
        with torchcx.config.patch(fft_path=path):
            assert_matches_eager(spectral, x, cplx(device, 4, 4, 8, 8), rtol=1e-4, atol=1e-5)

    @parametrize("strategy", ["4m", "block", "native", "auto"])
    def test_matmul_strategies(self, device: str, strategy: str) -> None:
        def product(a: torch.Tensor, b: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
            return (a @ b * phase).abs()

        a, b, phase = cplx(device, 4, 64, 64), cplx(device, 4, 64, 64, seed=1), cplx(device, 64, seed=2)
        with torchcx.config.patch(matmul_strategy=strategy):
            assert_matches_eager(product, a, b, phase, rtol=1e-4, atol=1e-4)

    def test_complex128(self, device: str) -> None:
        def f(x: torch.Tensor) -> torch.Tensor:
            return torch.sqrt(x) * torch.log(x) / (x + 1)

        assert_matches_eager(f, cplx(device, 1000, dtype=torch.complex128))

    def test_bfloat16_parts(self, device: str) -> None:
        """bf16 parts: elementwise, matmul and FFT against complex64 on the same values."""

        def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.fft.fft(torch.exp(a) * (a @ b))  # (1j * a.abs() would promote to complex64, as torch does)

        a = torchcx.as_complex_tensor(cplx(device, 32, 32), torch.bfloat16)
        b = torchcx.as_complex_tensor(cplx(device, 32, 32, seed=1), torch.bfloat16)
        out = compiled_real_only(f, a, b)
        assert isinstance(out, ComplexTensor) and out.component_dtype == torch.bfloat16
        assert out.device == a.device
        expected = f(a.to_interleaved(torch.complex64), b.to_interleaved(torch.complex64))
        error = (out.to_interleaved(torch.complex64) - expected).norm() / expected.norm()
        assert error < 2e-2, error

    def test_training_step(self, device: str) -> None:
        torch.manual_seed(0)
        eager = nn.Sequential(nn.Linear(32, 32, dtype=torch.cfloat), nn.Linear(32, 8, dtype=torch.cfloat)).to(device)
        compiled = nn.Sequential(nn.Linear(32, 32, dtype=torch.cfloat), nn.Linear(32, 8, dtype=torch.cfloat)).to(device)
        compiled.load_state_dict(eager.state_dict())
        step = torchcx.compile(compiled)
        x, target = cplx(device, 16, 32), cplx(device, 16, 8, seed=1)
        opts = [torch.optim.Adam(m.parameters(), lr=1e-2) for m in (eager, compiled)]
        for _ in range(3):
            for model, opt in zip((eager, step), opts):
                opt.zero_grad()
                loss = (model(x) - target).abs().pow(2).mean()
                loss.backward()
                opt.step()
        for p, q in zip(eager.parameters(), compiled.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5)


instantiate_device_type_tests(TestDevices, globals(), only_for=("cpu", "cuda"))

if __name__ == "__main__":
    run_tests()
