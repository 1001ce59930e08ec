"""Gradients of extern kernels computed as one extern kernel (Note [Native gradients]).

Note [Native gradients]
-----------------------
An extern kernel's forward is one native call (Note [Extern kernels]), but its
gradient is PyTorch's derivative formula, which AOTAutograd traces op by op in
complex space and torchcx lowers op by op into real ones. For the Householder
products that formula is a loop over the reflectors: ``householder_product``'s
backward on a 5x5 matrix is 743 real nodes (88 slices, 84 cats, 57 clones and 20
GEMMs, in 20 kernels). Compiled cold with its gradient (OpInfo's first sample,
caches off, 2026-12-06) it took 7.5-7.8 s and ``ormqr`` 6.0-6.2 s, where the
default backend, which runs the same formula as eager kernels, took 3.1-3.3 s
and 2.3-2.4 s; with this Note, 0.27-0.33 s: no C++ is generated at all.

In a compiled graph those ops instead become torchcx ops of the same schema
whose derivative is one more torchcx op, ``<name>_backward(grad, *inputs)``. Its
kernel runs eager autograd on the native complex tensors: the op again with
gradients enabled, then ``torch.autograd.grad``. Like any extern call it reaches
Inductor as one ``torchcx::extern``. Its values are eager's, from eager's own
formula and kernels, at the cost of the forward computed a second time (one
LAPACK call, cheaper than the formula it replaces at any size).

Only Dynamo's graph is rewritten (``native_gradients`` in ``_graph_passes``), for
complex inputs, so eager code and real programs are untouched. A compiled graph's
backward cannot be differentiated again (AOTAutograd's backward is once
differentiable), so no double backward is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, fx
from torch._ops import OpOverload

from .extern import register_extern

aten = torch.ops.aten

_LIB = torch.library.Library("torchcx", "FRAGMENT")


def _vjp_kernel(op: OpOverload, tensor_args: int) -> Callable[..., list[Tensor]]:
    """The gradients of ``op``'s first ``tensor_args`` arguments, by eager autograd."""

    def backward(grad: Tensor, *args: Any) -> list[Tensor]:
        inputs = [x.detach().requires_grad_() for x in args[:tensor_args]]
        with torch.enable_grad():
            out = op(*inputs, *args[tensor_args:])
        grads = torch.autograd.grad(out, inputs, grad, allow_unused=True, materialize_grads=True)
        return [g.contiguous() for g in grads]  # the layout the fake kernel promises

    return backward


def _define(name: str, op: OpOverload, tensor_args: int) -> OpOverload:
    """``torchcx::<name>``: ``op`` with its derivative computed by ``torchcx::<name>_backward``."""
    schema = str(op._schema)
    signature = schema[schema.index("(") :]
    params = signature[1 : signature.index(")")]
    _LIB.define(f"{name}{signature}")
    _LIB.impl(name, op, "CompositeExplicitAutograd")
    _LIB.define(f"{name}_backward(Tensor grad, {params}) -> Tensor[]")
    _LIB.impl(f"{name}_backward", _vjp_kernel(op, tensor_args), "CompositeExplicitAutograd")

    @torch.library.register_fake(f"torchcx::{name}_backward", lib=_LIB)
    def _backward_fake(grad: Tensor, *args: Any) -> list[Tensor]:
        return [torch.empty_like(x, memory_format=torch.contiguous_format) for x in args[:tensor_args]]

    backward_op = getattr(torch.ops.torchcx, f"{name}_backward").default

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
        ctx.save_for_backward(*inputs[:tensor_args])
        ctx.options = inputs[tensor_args:]

    def derivative(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        grads = backward_op(grad, *ctx.saved_tensors, *ctx.options)
        return (*grads, *[None] * len(ctx.options))

    torch.library.register_autograd(f"torchcx::{name}", derivative, setup_context=setup_context, lib=_LIB)
    overload = getattr(torch.ops.torchcx, name).default
    register_extern(overload, backward_op)
    return overload


householder_product = _define("householder_product", aten.linalg_householder_product.default, 2)
ormqr = _define("ormqr", aten.ormqr.default, 3)

#: Dynamo's spellings of the ops (targets of call_function nodes, names of call_method
#: nodes) -> the torchcx op that replaces them, for complex inputs.
SPELLINGS: dict[Any, OpOverload] = {
    torch.linalg.householder_product: householder_product,  # (torch._C._linalg's function)
    torch.orgqr: householder_product,
    "orgqr": householder_product,
    torch.ormqr: ormqr,
    "ormqr": ormqr,
}


def replacement(node: fx.Node) -> OpOverload | None:
    """The torchcx op for a node of Dynamo's graph, or None."""
    if node.op not in ("call_function", "call_method") or "out" in node.kwargs:
        return None
    found = SPELLINGS.get(node.target)
    if found is None:
        return None
    values = [a.meta.get("example_value") for a in node.all_input_nodes]
    return found if any(isinstance(v, Tensor) and v.is_complex() for v in values) else None
