"""One process of tests/test_compile_cache.py: compiles a few programs with torchcx, checks each
against eager, and writes what it found as JSON.

``python compile_cache_child.py OUT.json SALT``. ``SALT`` (a float) enters every program as a
constant of Dynamo's graph, so that a test run's programs are its own: no entry an earlier run
saved in the same Inductor cache directory can be found by the first process.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.fx._lazy_graph_module import _LazyGraphModule

import torchcx
import torchcx.backend
from torchcx._boundary.runtime import BoundaryRuntime
from torchcx.ops import _registry

aten = torch.ops.aten
lowered = 0  # graphs torchcx lowered in this process


def counting(fn: Callable[..., Any]) -> Callable[..., Any]:
    def count(*args: Any, **kwargs: Any) -> Any:
        global lowered
        lowered += 1
        return fn(*args, **kwargs)

    return count


def cplx(*shape: int, seed: int = 0, requires_grad: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(*shape, dtype=torch.complex64, generator=g)
    return z.requires_grad_(requires_grad)


def main(out: str, salt: float) -> None:
    torch.set_num_threads(1)
    # every graph torchcx lowers goes through retrace (complex values) or the real-graph path
    torchcx.backend.retrace = counting(torchcx.backend.retrace)
    torchcx.backend.RealGraphRuntime = counting(torchcx.backend.RealGraphRuntime)
    results: dict[str, Any] = {}
    lowerings: dict[str, int] = {}

    def lowered_by(program: str, before: int) -> None:
        lowerings[program] = lowered - before

    def inplace_view(x: torch.Tensor, p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.mul_(p * salt)
        x.add_(y)
        return x[:, ::2]

    before = lowered
    x, p, y = cplx(4, 6, seed=1), cplx(6, seed=2), cplx(4, 6, seed=3)
    x_eager = x.clone()
    expected = inplace_view(x_eager, p, y)
    got = torchcx.compile(inplace_view)(x, p, y)
    results["inplace_view"] = {
        "values": bool(torch.allclose(got, expected)),
        "input_written": bool(torch.allclose(x, x_eager)),
        "aliases_input": got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        "view_of_input": got._base is x,
        "strides": got.stride() == expected.stride(),
    }
    lowered_by("inplace_view", before)

    def shared_view(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = torch.exp(a * salt)
        return t, t[1:]  # Note [Outputs that alias each other]: t[1:] is replayed on t

    before = lowered
    a = cplx(4, 3, seed=9)
    runtimes: list[BoundaryRuntime] = []
    call = BoundaryRuntime.__call__

    def spy(self: BoundaryRuntime, *args: Any) -> Any:
        runtimes.append(self)
        return call(self, *args)

    BoundaryRuntime.__call__ = spy
    try:
        t, view = torchcx.compile(shared_view)(a)
    finally:
        BoundaryRuntime.__call__ = call
    replays = [r._replay for r in runtimes if r._replay is not None]
    results["shared_view"] = {
        "values": bool(torch.allclose(view, shared_view(a)[1])),
        "view_of_output": view._base is t,
        # the view is replayed by the replay graph's generated forward: loaded from the cache,
        # the graph is a lazy GraphModule, whose stub forward would add a recompilation check
        # and nn.Module's __call__ to every call
        "replays_generated_code": bool(replays)
        and all(getattr(r, "__func__", None) is not _LazyGraphModule._lazy_forward for r in replays),
    }
    lowered_by("shared_view", before)

    def loss_of(w: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return (torch.exp(1j * (a @ w).abs()) * salt).abs().pow(2).sum() + (a @ w).real.sum()

    before = lowered
    w, a = cplx(5, 3, seed=4, requires_grad=True), cplx(2, 5, seed=5)
    w_eager = w.detach().clone().requires_grad_()
    loss_of(w_eager, a).backward()
    loss = torchcx.compile(loss_of)(w, a)
    loss.backward()
    results["gradients"] = {
        "loss": bool(torch.allclose(loss, loss_of(w_eager.detach(), a))),
        "grad": bool(torch.allclose(w.grad, w_eager.grad, rtol=1e-4, atol=1e-5)),
    }
    lowered_by("gradients", before)

    def gate(state: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ij,ajb->aib", g, state) * salt  # Note [Small contractions in place]

    def step(w: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        # backward() inside the compiled function (a graph break): the backward compiles while
        # Dynamo is active, which once deadlocked torchcx's compile callbacks
        loss = loss_of(w, a)
        loss.backward()
        return loss.detach() * salt  # the graph after the break is this run's own too

    before = lowered
    w2 = w_eager.detach().clone().requires_grad_()
    torchcx.compile(step)(w2, a)
    results["backward_inside"] = {"grad": bool(torch.allclose(w2.grad, w_eager.grad, rtol=1e-4, atol=1e-5))}
    lowered_by("backward_inside", before)

    before = lowered
    state, g = cplx(4, 2, 8, seed=6), cplx(2, 2, seed=7)
    results["small_contraction"] = {"values": bool(torch.allclose(torchcx.compile(gate)(state, g), gate(state, g)))}
    lowered_by("small_contraction", before)

    def planar(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
        z = torchcx.ComplexTensor(re, im)
        return (z * z + salt).abs()

    before = lowered
    re, im = torch.randn(8, dtype=torch.bfloat16), torch.randn(8, dtype=torch.bfloat16)
    got, expected = torchcx.compile(planar)(re, im), planar(re, im)
    results["planar_parts"] = {"values": bool(torch.allclose(got.float(), expected.float(), rtol=1e-2, atol=1e-2))}
    lowered_by("planar_parts", before)

    # an op torchcx has no decomposition for runs as its native kernel, with a warning (given
    # again when the graph is loaded from the cache)
    table = dict(_registry._TABLE)
    for key in (aten.sin, aten.sin.default):
        table.pop(key, None)
    _registry._TABLE = table
    _registry._core_decompositions = lambda: {}
    _registry.entry_for.cache_clear()

    def fallback(z: torch.Tensor) -> torch.Tensor:
        return torch.sin(z) * salt + 1j

    before = lowered
    z = cplx(3, seed=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torchcx.compile(fallback)(z)
    results["fallback"] = {
        "values": bool(torch.allclose(got, fallback(z))),
        "warned": any("aten.sin.default" in str(w.message) for w in caught),
    }
    lowered_by("fallback", before)

    from torch._dynamo.utils import counters

    with open(out, "w") as f:
        json.dump({"results": results, "aot_autograd": dict(counters["aot_autograd"]), "lowered": lowerings}, f)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
