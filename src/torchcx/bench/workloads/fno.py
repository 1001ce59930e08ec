"""The spectral convolution of a Fourier neural operator (Li et al.), forward and backward.

``SpectralConv2d`` as in the FNO reference code: ``rfft2`` of the input, a
complex channel mixing (``einsum('bixy,ioxy->boxy')``) with complex weights on
the lowest modes (two corners of the half spectrum), ``irfft2`` back. Each
call is one forward and backward pass of an MSE loss; the weights are
``nn.Parameter``s of dtype complex64 and their gradients are compared with
eager's.

Cost: the FFTs dominate. The compulsory traffic is reading the input and the
target, the forward ``irfft2`` and the backward ``rfft2`` of the output
gradient (each reads and writes its array once); the flops are those of the
four real FFTs (2.5 N log2 N each, the usual count) and the two einsums
forward and twice that backward.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._base import JaxCase, Problem, Workload, to_numpy


class SpectralConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, modes1: int, modes2: int) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.modes1 = modes1
        self.modes2 = modes2
        scale = 1 / (in_channels * out_channels)
        self.weights1 = nn.Parameter(scale * torch.rand(in_channels, out_channels, modes1, modes2, dtype=torch.cfloat))
        self.weights2 = nn.Parameter(scale * torch.rand(in_channels, out_channels, modes1, modes2, dtype=torch.cfloat))

    @staticmethod
    def compl_mul2d(input: Tensor, weights: Tensor) -> Tensor:
        return torch.einsum("bixy,ioxy->boxy", input, weights)

    def forward(self, x: Tensor) -> Tensor:
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(
            batchsize, self.out_channels, x.size(-2), x.size(-1) // 2 + 1, dtype=torch.cfloat, device=x.device
        )
        out_ft[:, :, : self.modes1, : self.modes2] = self.compl_mul2d(
            x_ft[:, :, : self.modes1, : self.modes2], self.weights1
        )
        out_ft[:, :, -self.modes1 :, : self.modes2] = self.compl_mul2d(
            x_ft[:, :, -self.modes1 :, : self.modes2], self.weights2
        )
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


def forward_backward(layer: SpectralConv2d, x: Tensor, target: Tensor) -> Tensor:
    layer.zero_grad()
    loss = F.mse_loss(layer(x), target)
    loss.backward()
    return loss


def _observe(args: tuple[Any, ...], loss: Tensor) -> list[Tensor]:
    layer = args[0]
    return [loss, layer.weights1.grad, layer.weights2.grad]


def _jax_case(args: tuple[Any, ...], modes: int) -> JaxCase:
    import jax
    import jax.numpy as jnp

    layer, x, target = args

    def spectral_conv(weights: tuple[Any, Any], x: Any) -> Any:
        w1, w2 = weights
        x_ft = jnp.fft.rfft2(x)
        out_ft = jnp.zeros((x.shape[0], w1.shape[1], x.shape[-2], x.shape[-1] // 2 + 1), dtype=jnp.complex64)
        out_ft = out_ft.at[:, :, :modes, :modes].set(jnp.einsum("bixy,ioxy->boxy", x_ft[:, :, :modes, :modes], w1))
        out_ft = out_ft.at[:, :, -modes:, :modes].set(jnp.einsum("bixy,ioxy->boxy", x_ft[:, :, -modes:, :modes], w2))
        return jnp.fft.irfft2(out_ft, s=x.shape[-2:])

    def loss_fn(weights: tuple[Any, Any], x: Any, target: Any) -> Any:
        return jnp.mean((spectral_conv(weights, x) - target) ** 2)

    def forward_backward(weights: tuple[Any, Any], x: Any, target: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(weights, x, target)
        # JAX's gradient with respect to a complex parameter is the conjugate of
        # PyTorch's (it differentiates with respect to z, PyTorch with respect to conj(z)).
        return loss, jax.tree_util.tree_map(jnp.conj, grads)

    weights = (to_numpy(layer.weights1), to_numpy(layer.weights2))
    return JaxCase(forward_backward, (weights, to_numpy(x), to_numpy(target)))


#: (batch, channels, grid, modes); "full" is the issue's size.
_SHAPES = {"smoke": (2, 4, 16, 4), "quick": (8, 32, 64, 16), "full": (8, 32, 64, 16)}


def build(scale: str, device: torch.device) -> Problem:
    b, c, n, modes = _SHAPES[scale]
    torch.manual_seed(0)  # the layer's initialization, as a user would seed it
    layer = SpectralConv2d(c, c, modes, modes).to(device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(b, c, n, n, generator=g).to(device)
    target = torch.randn(b, c, n, n, generator=g).to(device)
    grid = b * c * n * n
    fft_flops = 2.5 * grid * math.log2(n * n)
    einsum_flops = 2 * 8 * b * c * c * modes * modes  # two corners, 8 real flops per complex multiply-add
    return Problem(
        program=forward_backward,
        make_args=lambda: (copy.deepcopy(layer), x, target),
        size=f"float32 B={b} C={c} {n}x{n}, {modes} modes",
        bytes=4 * grid * (2 + 2 + 2),  # x, target; irfft2 forward; rfft2 backward
        flops=4 * fft_flops + 3 * einsum_flops,
        tolerance=1e-4,
        observe=_observe,
        jax=lambda args: _jax_case(args, modes),
    )


WORKLOADS = [Workload("fno", "FNO SpectralConv2d forward+backward", build)]
