"""Training complex-parameter modules under torchcx.compile matches eager training.

Each model is trained for 20 steps twice from the same initial state: in eager
PyTorch on native complex tensors, and with its forward and loss compiled by
``torchcx.compile`` (backward through the compiled backward graph). The
optimizer steps the complex parameters eagerly or, compiled with
``torchcx.compile`` too, as a separate graph. Losses are compared at every
step and parameters, buffers and optimizer states at the end. Every graph
Inductor lowered, forward, backward and optimizer step, must be real-only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import torchcx
from compile_harness import record_inductor_graphs
from torchcx.explain import _capture

STEPS = 20
CFLOAT = torch.complex64


class ModReLU(nn.Module):
    """modReLU: relu(|z| + b) z / |z|, with a real learnable bias b."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.full((features,), -0.1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        magnitude = z.abs()
        # clamp: no 0/0 at z = 0, where modReLU's value is 0 anyway
        return torch.relu(magnitude + self.bias) * (z / magnitude.clamp_min(1e-6))


class CReLU(nn.Module):
    """CReLU: relu applied to the real and imaginary parts separately."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.complex(torch.relu(z.real), torch.relu(z.imag))


class PhaseMask(nn.Module):
    """A complex Parameter (elementwise gain), a complex buffer (a fixed phase
    ramp) and a real Parameter, and a conjugate inside a linear layer."""

    def __init__(self, features: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.gain = nn.Parameter(torch.randn(features, dtype=CFLOAT, generator=g))
        self.register_buffer("ramp", torch.polar(torch.ones(features), torch.linspace(0, 3.0, features)))
        self.scale = nn.Parameter(torch.tensor(0.5))
        self.mix = nn.Linear(features, features, dtype=CFLOAT)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = z * self.gain * self.ramp + 0.5j * self.scale
        return self.mix(z.conj()) * (1 - 0.25j)


class SpectralConv(nn.Module):
    """A Fourier-neural-operator layer: rfft, complex weights on the low modes, irfft."""

    def __init__(self, width: int, modes: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(2)
        self.modes = modes
        self.weight = nn.Parameter(torch.randn(width, width, modes, dtype=CFLOAT, generator=g) / width)
        self.skip = nn.Linear(width, width)

    def forward(self, u: torch.Tensor) -> torch.Tensor:  # u: (batch, width, points), real
        spectrum = torch.fft.rfft(u)
        low = torch.einsum("bim,iom->bom", spectrum[..., : self.modes], self.weight)
        out = torch.zeros_like(spectrum)
        out[..., : self.modes] = low
        return torch.fft.irfft(out, n=u.shape[-1]) + self.skip(u.transpose(1, 2)).transpose(1, 2)


def mlp(activation: type[nn.Module]) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        act = activation(16) if activation is ModReLU else activation()
        return nn.Sequential(nn.Linear(8, 16, dtype=CFLOAT), act, nn.Linear(16, 4, dtype=CFLOAT))

    return make


def complex_data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return torch.randn(32, 8, dtype=CFLOAT, generator=g), torch.randn(32, 4, dtype=CFLOAT, generator=g)


def phase_data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(4)
    return torch.randn(16, 8, dtype=CFLOAT, generator=g), torch.randn(16, 8, dtype=CFLOAT, generator=g)


def field_data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    return torch.randn(4, 6, 16, generator=g), torch.randn(4, 6, 16, generator=g)


def squared_error(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE on |y - target|^2: a real loss of a complex (or real) output."""
    return ((y - target).abs() ** 2).mean()


def phase_factory() -> nn.Module:
    torch.manual_seed(0)
    return PhaseMask(8)


def spectral_factory() -> nn.Module:
    torch.manual_seed(0)
    return SpectralConv(6, 5)


#: model name -> (factory, data)
MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, torch.Tensor]]]] = {
    "mlp-modrelu": (mlp(ModReLU), complex_data),
    "mlp-crelu": (mlp(CReLU), complex_data),
    "params-buffer-conj": (phase_factory, phase_data),
    "spectral-conv": (spectral_factory, field_data),
}

OPTIMIZERS: dict[str, tuple[type[torch.optim.Optimizer], dict[str, Any]]] = {
    "SGD": (torch.optim.SGD, {"lr": 1e-2, "momentum": 0.9}),
    "Adam": (torch.optim.Adam, {"lr": 1e-2}),
    "AdamW": (torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
}

# Every optimizer on the MLP, eager and compiled steps; every model with Adam.
CASES = [("mlp-modrelu", opt, compiled_step) for opt in OPTIMIZERS for compiled_step in (False, True)]
CASES += [(model, "Adam", False) for model in MODELS if model != "mlp-modrelu"]
CASES += [("params-buffer-conj", "AdamW", True)]

# float32 rounding differs between the decomposed and the native kernels by a
# few ulps per step; 20 optimizer steps amplify it (Adam divides by sqrt(v)).
RTOL, ATOL = 1e-4, 1e-5


def train(
    model: nn.Module,
    data: tuple[torch.Tensor, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    forward: Callable[..., torch.Tensor],
    step: Callable[[], Any],
) -> list[torch.Tensor]:
    x, target = data
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = forward(x, target)
        loss.backward()
        step()
        losses.append(loss.detach())
    return losses


@pytest.mark.parametrize(
    "model_name,optimizer_name,compiled_step",
    CASES,
    ids=[f"{m}-{o}-{'compiled' if c else 'eager'}_step" for m, o, c in CASES],
)
def test_training_matches_eager(model_name, optimizer_name, compiled_step):
    factory, make_data = MODELS[model_name]
    opt_class, opt_kwargs = OPTIMIZERS[optimizer_name]
    eager_model = factory()
    compiled_model = copy.deepcopy(eager_model)
    eager_opt = opt_class(eager_model.parameters(), **opt_kwargs)
    compiled_opt = opt_class(compiled_model.parameters(), **opt_kwargs)

    expected = train(eager_model, make_data(), eager_opt, lambda x, t: squared_error(eager_model(x), t), eager_opt.step)

    torch._dynamo.reset()
    forward = torchcx.compile(lambda x, t: squared_error(compiled_model(x), t))
    step = torchcx.compile(compiled_opt.step) if compiled_step else compiled_opt.step
    with record_inductor_graphs() as recorder, _capture() as report:
        actual = train(compiled_model, make_data(), compiled_opt, forward, step)

    assert expected[-1] < expected[0], "the model does not train: the comparison would be vacuous"
    torch.testing.assert_close(torch.stack(actual), torch.stack(expected), rtol=RTOL, atol=ATOL)
    for (name, a), (_, e) in zip(compiled_model.state_dict().items(), eager_model.state_dict().items()):
        torch.testing.assert_close(a, e, rtol=RTOL, atol=ATOL, msg=lambda m, name=name: f"{name}: {m}")
    for p_actual, p_expected in zip(compiled_model.parameters(), eager_model.parameters()):
        for key, value in compiled_opt.state[p_actual].items():
            torch.testing.assert_close(value, eager_opt.state[p_expected][key], rtol=RTOL, atol=ATOL)
    kinds = {g.kind for g in report.graphs}
    assert {"forward", "backward"} <= kinds, kinds
    assert all(g.real_only for g in report.graphs)
    assert recorder.graphs > 0 and not recorder.complex_nodes, recorder.complex_nodes
