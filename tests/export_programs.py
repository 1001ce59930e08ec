"""The programs torchcx.export is checked on (issue 20's list), written the way their users write them.

Each ``Program`` builds a module and example inputs at a size (``small`` for tests,
larger for benchmarks/export.py) and says which input dtypes it takes. The inputs are
what the module's users pass: native complex tensors, or ComplexTensors for
bfloat16 parts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

import torchcx


@dataclass
class Program:
    name: str
    make: Callable[[bool], tuple[nn.Module, tuple[Any, ...]]]  # small -> (module, example args)
    # float tolerance against eager (relative to the output's largest magnitude)
    rtol: float = 1e-5


# -- rotary embedding (LLaMA's apply_rotary_emb, freqs_cis precomputed) ----------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    return torch.polar(torch.ones(end, dim // 2), torch.outer(t, freqs))


class Rotary(nn.Module):
    def __init__(self, head_dim: int, seq: int) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, seq))

    def forward(self, xq: Tensor, xk: Tensor) -> tuple[Tensor, Tensor]:
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs = self.freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
        xq_out = torch.view_as_real(xq_ * freqs).flatten(3)
        xk_out = torch.view_as_real(xk_ * freqs).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)


def _rotary(dtype: torch.dtype) -> Callable[[bool], tuple[nn.Module, tuple[Any, ...]]]:
    def make(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
        b, t, h, d = (2, 16, 2, 16) if small else (4, 512, 8, 64)
        g = torch.Generator().manual_seed(0)
        xq = torch.randn(b, t, h, d, generator=g).to(dtype)
        xk = torch.randn(b, t, h, d, generator=g).to(dtype)
        return Rotary(d, t), (xq, xk)

    return make


# -- STFT -> magnitude/phase -> iSTFT (a spectral compressor) ----------------------------------------


class SpectralCompressor(nn.Module):
    def __init__(self, n_fft: int) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, audio: Tensor) -> Tensor:
        hop = self.n_fft // 4
        spec = torch.stft(audio, self.n_fft, hop, window=self.window, return_complex=True)
        magnitude, phase = spec.abs(), spec.angle()
        shaped = torch.polar(magnitude.sqrt(), phase)
        return torch.istft(shaped, self.n_fft, hop, window=self.window, length=audio.shape[-1])


def _stft(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    n_fft, length = (32, 256) if small else (512, 16000)
    g = torch.Generator().manual_seed(1)
    return SpectralCompressor(n_fft), (torch.randn(2, length, generator=g),)


# -- rfft -> phase -> irfft (the program torch.onnx.export fails on) --------------------------------


class PhaseWarp(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        spectrum = torch.fft.rfft(x)
        return torch.fft.irfft(spectrum * torch.exp(-1j * spectrum.abs()), n=x.shape[-1])


def _phase_warp(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    g = torch.Generator().manual_seed(2)
    return PhaseWarp(), (torch.randn(4, 64 if small else 4096, generator=g),)


# -- FNO spectral convolution (forward) -------------------------------------------------------------


class SpectralConv2d(nn.Module):
    def __init__(self, channels: int, modes: int) -> None:
        super().__init__()
        self.modes = modes
        scale = 1 / (channels * channels)
        g = torch.Generator().manual_seed(3)
        shape = (channels, channels, modes, modes)
        self.weights1 = nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat, generator=g))
        self.weights2 = nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat, generator=g))

    def forward(self, x: Tensor) -> Tensor:
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(
            x.shape[0], self.weights1.shape[1], x.shape[-2], x.shape[-1] // 2 + 1, dtype=torch.cfloat, device=x.device
        )
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weights1)
        out_ft[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m:, :m], self.weights2)
        return torch.fft.irfft2(out_ft, s=(x.shape[-2], x.shape[-1]))


def _fno(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    c, modes, s, b = (4, 4, 16, 2) if small else (32, 12, 64, 8)
    g = torch.Generator().manual_seed(4)
    return SpectralConv2d(c, modes), (torch.randn(b, c, s, s, generator=g),)


# -- a complex-weight MLP ------------------------------------------------------------------------------


class ComplexMLP(nn.Module):
    """Complex linear layers with a modReLU activation, on complex features."""

    def __init__(self, features: int, hidden: int, dtype: torch.dtype = torch.complex64) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(5)
        self.w1 = nn.Parameter(torch.randn(hidden, features, dtype=dtype, generator=g) / math.sqrt(features))
        self.b1 = nn.Parameter(torch.zeros(hidden, dtype=dtype))
        self.bias = nn.Parameter(torch.full((hidden,), -0.1))
        self.w2 = nn.Parameter(torch.randn(features, hidden, dtype=dtype, generator=g) / math.sqrt(hidden))

    def forward(self, z: Tensor) -> Tensor:
        h = z @ self.w1.T + self.b1
        magnitude = h.abs()
        h = torch.relu(magnitude + self.bias) * h / (magnitude + 1e-6)  # modReLU
        return h @ self.w2.T


def _mlp(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    f, hidden, b = (8, 16, 4) if small else (256, 512, 64)
    g = torch.Generator().manual_seed(6)
    return ComplexMLP(f, hidden), (torch.randn(b, f, dtype=torch.complex64, generator=g),)


class ComplexMLPWeightsIn(nn.Module):
    """The MLP with its complex weights passed in: with bfloat16 parts they are ComplexTensors,
    which a module cannot hold as parameters of a complex dtype torch lacks."""

    def __init__(self, bias: Tensor) -> None:
        super().__init__()
        self.bias = nn.Parameter(bias)

    def forward(self, z: Tensor, w1: Tensor, b1: Tensor, w2: Tensor) -> Tensor:
        h = z @ w1.T + b1
        magnitude = h.abs()
        h = torch.relu(magnitude + self.bias) * h / (magnitude + 1e-2)
        return h @ w2.T


def _mlp_bf16(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    """The MLP on bfloat16 parts (ComplexTensors: torch has no such complex dtype)."""
    module, (z,) = _mlp(small)

    def low(x: Tensor) -> Tensor:
        return torchcx.complex(x.real.to(torch.bfloat16), x.imag.to(torch.bfloat16))

    weights = (low(module.w1.detach()), low(module.b1.detach()), low(module.w2.detach()))
    return ComplexMLPWeightsIn(module.bias.detach().to(torch.bfloat16)), (low(z), *weights)


# -- a QFT on a state vector ------------------------------------------------------------------------


class QFT(nn.Module):
    """The quantum Fourier transform applied gate by gate (Hadamards and controlled phases)."""

    def __init__(self, qubits: int) -> None:
        super().__init__()
        self.qubits = qubits
        self.register_buffer("hadamard", torch.tensor([[1, 1], [1, -1]], dtype=torch.complex64) / math.sqrt(2))

    def forward(self, state: Tensor) -> Tensor:
        n = self.qubits
        batch = state.shape[0]
        psi = state.reshape(batch, *([2] * n))
        for j in range(n):
            psi = torch.movedim(torch.tensordot(psi, self.hadamard, dims=([j + 1], [1])), -1, j + 1)
            for k in range(j + 1, n):
                phase = torch.exp(torch.tensor(1j * math.pi / 2 ** (k - j)))
                index = [slice(None)] * (n + 1)
                index[j + 1], index[k + 1] = 1, 1
                both = psi[tuple(index)] * phase
                psi = psi.clone()
                psi[tuple(index)] = both
        psi = psi.permute(0, *range(n, 0, -1))  # the final swaps reverse the qubit order
        return psi.reshape(batch, -1)


def _qft(small: bool) -> tuple[nn.Module, tuple[Any, ...]]:
    n, batch = (4, 2) if small else (12, 8)
    g = torch.Generator().manual_seed(7)
    state = torch.randn(batch, 2**n, dtype=torch.complex64, generator=g)
    return QFT(n), (state / state.norm(dim=-1, keepdim=True),)


PROGRAMS = [
    Program("rope-fp32", _rotary(torch.float32)),
    Program("rope-bf16", _rotary(torch.bfloat16), rtol=1e-2),
    Program("stft-istft", _stft),
    Program("rfft-phase-irfft", _phase_warp, rtol=1e-4),
    Program("fno-spectral-conv", _fno),
    Program("complex-mlp", _mlp),
    Program("complex-mlp-bf16", _mlp_bf16, rtol=5e-2),
    Program("qft", _qft),
]
