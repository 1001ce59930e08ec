"""One training step of a complex-valued MLP: forward, backward and ``torch.optim.Adam``.

Three ``nn.Linear`` layers of dtype complex64 with modReLU activations
(``polar(relu(|z| + b), angle(z))``, a learnable real bias per feature), the
loss the mean of ``|y - target|^2``. Each mode has its own copy of the model
and optimizer; after the first step from the same state the loss and every
updated parameter are compared with eager's.

Cost: the complex GEMMs dominate: per layer one forward product and two
backward (8 real flops per complex multiply-add).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

from ._base import JaxCase, Problem, Workload, to_numpy


class ModReLU(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.full((features,), -0.1))

    def forward(self, z: Tensor) -> Tensor:
        return torch.polar(torch.relu(z.abs() + self.bias), z.angle())


class ComplexMLP(nn.Module):
    def __init__(self, width: int, depth: int = 3) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(depth):
            layers.append(nn.Linear(width, width, dtype=torch.cfloat))
            if i < depth - 1:
                layers.append(ModReLU(width))
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor, target: Tensor) -> Tensor:
    optimizer.zero_grad()
    loss = (model(x) - target).abs().pow(2).mean()
    loss.backward()
    optimizer.step()
    return loss


def _observe(args: tuple[Any, ...], loss: Tensor) -> list[Tensor]:
    return [loss, *args[0].parameters()]


def _jax_case(args: tuple[Any, ...]) -> JaxCase:
    """The same step in JAX, with an Adam step written out as torch.optim.Adam computes it.

    Complex parameters are kept as (real, imaginary) pairs: torch.optim.Adam
    treats a complex parameter as a pair of real ones (``view_as_real``), and
    the gradient with respect to real parts has no conjugation convention to
    reconcile.
    """
    import jax
    import jax.numpy as jnp
    from jax import lax

    model, optimizer, x, target = args
    depth = sum(isinstance(m, nn.Linear) for m in model.modules())
    params = []
    for p in model.parameters():
        params.append((to_numpy(p.real), to_numpy(p.imag)) if p.is_complex() else to_numpy(p))
    (group,) = optimizer.param_groups
    lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]

    def as_value(p: Any) -> Any:
        return lax.complex(*p) if isinstance(p, tuple) else p

    def forward(params: list[Any], z: Any) -> Any:
        values = iter(as_value(p) for p in params)  # in the order of model.parameters()
        for i in range(depth):
            w, b = next(values), next(values)
            z = z @ w.T + b
            if i < depth - 1:
                r = jax.nn.relu(jnp.abs(z) + next(values))
                theta = jnp.angle(z)
                z = lax.complex(r * jnp.cos(theta), r * jnp.sin(theta))
        return z

    def loss_fn(params: list[Any], x: Any, target: Any) -> Any:
        return jnp.mean(jnp.abs(forward(params, x) - target) ** 2)

    def step(params: list[Any], state: tuple[Any, Any, Any], x: Any, target: Any) -> Any:
        count, mu, nu = state
        loss, grads = jax.value_and_grad(loss_fn)(params, x, target)
        count = count + 1
        mu = jax.tree_util.tree_map(lambda m, g: beta1 * m + (1 - beta1) * g, mu, grads)
        nu = jax.tree_util.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g, nu, grads)
        step_size = lr / (1 - beta1**count)
        root_bias2 = jnp.sqrt(1 - beta2**count)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - step_size * m / (jnp.sqrt(v) / root_bias2 + eps), params, mu, nu
        )
        return loss, params, (count, mu, nu)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (jnp.zeros((), jnp.float32), zeros, zeros)

    def observe(out: Any) -> list[Any]:
        loss, params, _ = out
        return [loss, *(as_value(p) for p in params)]

    def advance(args: tuple[Any, ...], out: Any) -> tuple[Any, ...]:
        _, params, state = out
        return (params, state, *args[2:])

    return JaxCase(step, (params, state, to_numpy(x), to_numpy(target)), observe=observe, advance=advance)


#: (batch, width); "full" is the issue's size.
_SHAPES = {"smoke": (8, 16), "quick": (512, 256), "full": (512, 256)}


def build(scale: str, device: torch.device) -> Problem:
    batch, width = _SHAPES[scale]
    torch.manual_seed(0)  # the model's initialization, as a user would seed it
    model = ComplexMLP(width).to(device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, dtype=torch.complex64, generator=g).to(device)
    target = torch.randn(batch, width, dtype=torch.complex64, generator=g).to(device)

    def make_args() -> tuple[Any, ...]:
        fresh = copy.deepcopy(model)
        return fresh, torch.optim.Adam(fresh.parameters(), lr=1e-3), x, target

    return Problem(
        program=train_step,
        make_args=make_args,
        size=f"complex64 batch {batch}, width {width}, 3 layers",
        # Adam reads parameter, gradient and both moments and writes three of them;
        # each layer's activations are written forward and read twice backward.
        bytes=7 * 8 * 3 * width * (width + 2) + 3 * 3 * 8 * batch * width,
        flops=3 * 3 * 8 * batch * width * width,
        # Adam's first step is lr * g / (|g| + eps): for gradient components near
        # eps (1e-8), float32 rounding differences in g become update differences
        # of up to lr (1e-3) times a fraction of the largest parameter.
        tolerance=1e-3,
        observe=_observe,
        jax=_jax_case,
    )


WORKLOADS = [Workload("mlp", "complex MLP training step (Adam)", build)]
