"""Checking a torchcx-compiled function against eager: values, side effects, aliasing, real-only graphs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch._inductor.graph import GraphLowering
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._pytree import tree_flatten, tree_unflatten

import torchcx
from torchcx import ComplexTensor


class RealOnlyRecorder(CustomGraphPass):
    """An Inductor post-grad pass that records every complex value in the graphs Inductor lowers."""

    def __init__(self) -> None:
        self.graphs = 0
        self.complex_nodes: list[str] = []

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.graphs += 1
        for node in graph.nodes:
            vals = tree_flatten(node.meta.get("val"))[0]
            if any(isinstance(v, torch.Tensor) and v.is_complex() for v in vals):
                self.complex_nodes.append(f"{node.op} {node.target}")

    def uuid(self) -> None:  # no caching: the pass must see every graph
        return None


def sample_as_function(
    op: Any, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Callable[..., Any], list[torch.Tensor]]:
    """An OpInfo sample as a function of its tensors (the other arguments closed over), and those tensors.

    Compiling the function makes the sample's tensors graph inputs and its Python values constants.
    """
    leaves, spec = tree_flatten((inp, args, kwargs))
    where = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    def closure(*tensors: torch.Tensor) -> Any:
        filled = list(leaves)
        for i, t in zip(where, tensors):
            filled[i] = t
        a, b, c = tree_unflatten(filled, spec)
        return op(a, *b, **c)

    return closure, [leaves[i] for i in where]


@contextlib.contextmanager
def record_inductor_graphs() -> Iterator[RealOnlyRecorder]:
    recorder = RealOnlyRecorder()
    with torch._inductor.config.patch(post_grad_custom_post_pass=recorder, fx_graph_cache=False):
        yield recorder


@contextlib.contextmanager
def record_lowered_graphs() -> Iterator[list[torch.fx.GraphModule]]:
    """The real graphs Inductor lowers within the block (what ``GraphLowering`` is given), in order."""
    graphs: list[torch.fx.GraphModule] = []
    init = GraphLowering.__init__

    def recording_init(self: Any, gm: torch.fx.GraphModule, *args: Any, **kwargs: Any) -> None:
        init(self, gm, *args, **kwargs)
        graphs.append(gm)

    GraphLowering.__init__ = recording_init
    try:
        yield graphs
    finally:
        GraphLowering.__init__ = init


def storages(x: Any) -> list[tuple[Any, torch.Tensor]]:
    """(storage identity, tensor) of every plain tensor in x (ComplexTensor: its parts)."""
    out = []
    for t in tree_flatten(x)[0]:
        if isinstance(t, ComplexTensor):
            out += [(StorageWeakRef(t.re.untyped_storage()), t.re), (StorageWeakRef(t.im.untyped_storage()), t.im)]
        elif isinstance(t, torch.Tensor):
            out.append((StorageWeakRef(t.untyped_storage()), t))
    return out


def alias_map(outputs: Any, inputs: Any) -> list[tuple[int, ...]]:
    """For each output tensor: the indices of the inputs it shares memory with, and its view metadata."""
    ins = [s for s, _ in storages(inputs)]
    result = []
    for storage, t in storages(outputs):
        shared = tuple(i for i, s in enumerate(ins) if s == storage)
        meta = (tuple(t.shape), tuple(t.stride()), t.storage_offset()) if shared else ()
        result.append((shared, meta))
    return result


def output_alias_map(outputs: Any) -> list[tuple[int, ...]]:
    """For each output tensor (ComplexTensor: each part): the earlier outputs it shares memory with."""
    found = storages(outputs)
    return [tuple(j for j in range(i) if found[j][0] == s) for i, (s, _) in enumerate(found)]


def to_comparable(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(torch.complex64) if x.component_dtype == torch.bfloat16 else x.to_interleaved()
    return x


def assert_values(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None) -> None:
    a, _ = tree_flatten(actual)
    e, _ = tree_flatten(expected)
    assert len(a) == len(e), f"{len(a)} outputs, expected {len(e)}"
    for x, y in zip(a, e):
        if isinstance(y, torch.Tensor):
            assert isinstance(x, torch.Tensor), f"expected a tensor, got {type(x).__name__}"
            assert type(x) is type(y) or not isinstance(y, ComplexTensor), f"{type(x).__name__} vs {type(y).__name__}"
            assert x.dtype == y.dtype, f"dtype {x.dtype} vs {y.dtype}"
            assert x.shape == y.shape, f"shape {tuple(x.shape)} vs {tuple(y.shape)}"
            assert x.requires_grad == y.requires_grad, f"requires_grad {x.requires_grad} vs {y.requires_grad}"
            torch.testing.assert_close(
                to_comparable(x.detach()), to_comparable(y.detach()), rtol=rtol, atol=atol, equal_nan=True
            )
        else:
            assert x == y, f"{x!r} vs {y!r}"


def check_compiled(
    fn: Callable[..., Any],
    make_inputs: Callable[[], tuple[Any, ...]],
    *,
    real_only: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    compile_kwargs: dict[str, Any] | None = None,
    calls: int = 1,
    expect_graph: bool = True,
) -> RealOnlyRecorder:
    """Run ``fn`` eagerly and torchcx-compiled on identical fresh inputs and compare everything.

    Compared: outputs (values, dtype, shape, requires_grad, Python type), the
    inputs afterwards (side effects), which outputs share memory with which
    inputs, with the same view metadata, and which share memory with each other. Also checks that Inductor
    compiled at least one graph (unless ``expect_graph`` is False: a function
    of views alone has nothing to compile) and, with ``real_only``, that no
    graph it lowered holds a complex value.
    """
    torch._dynamo.reset()
    eager_in = make_inputs()
    compiled_in = make_inputs()
    compiled = torchcx.compile(fn, **(compile_kwargs or {}))
    with record_inductor_graphs() as recorder:
        for _ in range(calls):
            expected = fn(*eager_in)
            actual = compiled(*compiled_in)
    if expect_graph:
        assert recorder.graphs > 0, "nothing was compiled by Inductor"
    assert_values(actual, expected, rtol, atol)
    assert_values(compiled_in, eager_in, rtol, atol)
    assert alias_map(actual, compiled_in) == alias_map(expected, eager_in), "aliasing differs from eager"
    assert output_alias_map(actual) == output_alias_map(expected), "aliasing among outputs differs from eager"
    if real_only:
        assert not recorder.complex_nodes, f"complex values reached Inductor: {recorder.complex_nodes}"
    return recorder
