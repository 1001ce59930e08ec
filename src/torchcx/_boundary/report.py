"""What ``torchcx.explain`` shows of each graph torchcx lowered, built from the boundary spec
and the real graph."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor

from .. import _layout
from ..ops.extern import _op_from_name
from .retrace import RealGraph
from .spec import BoundarySpec, InputSpec, has_complex


@dataclass
class GraphReport:
    """What happened to one graph AOTAutograd handed to torchcx."""

    kind: str  # "inference", "forward" or "backward"
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    lowered: dict[str, str] = field(default_factory=dict)  # complex op -> implementation
    #: complex op -> how its implementation computes it (the registry entry's kind and family)
    how: dict[str, str] = field(default_factory=dict)
    externs: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    complex_nodes_after: list[str] = field(default_factory=list)
    real_graph: fx.GraphModule | None = None

    @property
    def real_only(self) -> bool:
        return not self.complex_nodes_after


@dataclass
class CompileReport:
    graphs: list[GraphReport] = field(default_factory=list)
    #: Rewrites of Dynamo's graphs before AOTAutograd (``_graph_passes``), one line each.
    rewrites: list[str] = field(default_factory=list)


#: The reports being collected (``torchcx.explain`` appends one while it runs a function):
#: every graph torchcx compiles meanwhile is recorded in each.
ACTIVE_REPORTS: list[CompileReport] = []


def record(graph: GraphReport) -> None:
    for report in ACTIVE_REPORTS:
        report.graphs.append(graph)


def record_rewrites(rewrites: list[str]) -> None:
    for report in ACTIVE_REPORTS:
        report.rewrites.extend(rewrites)


def real_graph_report(kind: str, example_inputs: Sequence[Any]) -> GraphReport:
    """The report of a graph with no complex value, which goes to Inductor as it is."""
    return GraphReport(kind=kind, inputs=[_describe_value(v) for v in example_inputs])


def graph_report(kind: str, spec: BoundarySpec, example_inputs: Sequence[Any], real: RealGraph) -> GraphReport:
    """The report of a lowered graph."""
    return GraphReport(
        kind=kind,
        inputs=[_describe_input(spec, i, v, s) for i, (v, s) in enumerate(zip(example_inputs, spec.inputs))],
        outputs=[_describe_output(spec, i, o) for i, o in enumerate(spec.outputs)],
        lowered={op: getattr(e.impl, "__name__", repr(e.impl)) for op, e in real.lowered.items()},
        how={op: e.describe() for op, e in real.lowered.items()},
        externs=_extern_calls(real.gm, real.fallbacks),
        fallbacks=list(real.fallbacks),
        complex_nodes_after=[f"{n.name}: {n.target}" for n in real.gm.graph.nodes if has_complex(n.meta.get("val"))],
        real_graph=real.gm,
    )


def _extern_calls(gm: fx.GraphModule, fallbacks: list[str]) -> list[str]:
    """The aten ops the real graph calls as extern kernels, fallbacks apart.

    Read from the graph rather than from the op tables: an op such as the FFT
    may run as an extern kernel or in real arithmetic (Note [FFT path selection]).
    """
    calls = [str(_op_from_name(n.args[0])) for n in gm.graph.nodes if n.target is torch.ops.torchcx.extern.default]
    return [name for name in calls if name not in fallbacks]


def _describe_input(spec: BoundarySpec, index: int, value: Any, input_spec: InputSpec) -> str:
    mutated = ", mutated in place by the kernel" if index in spec.mutated else ""
    if input_spec.complex_dtype is None:
        return _describe_value(value) + mutated
    layout = _layout.describe(input_spec.complex_dtype)
    conj = ", a conjugated view: imaginary part negated in the kernel" if input_spec.conj else ""
    return f"{_describe_value(value)} read as {layout} (no copy){conj}{mutated}"


def _describe_output(spec: BoundarySpec, index: int, node: Any) -> str:
    val = node.meta.get("val") if isinstance(node, fx.Node) else node
    what = _describe_value(val)
    if index in spec.repeats:
        return f"{what}: the same tensor as output {spec.repeats[index]}"
    if index in spec.aliases:
        return f"{what}: a view of input {spec.aliases[index]}, replayed at run time (no copy)"
    if index in spec.shared_views:
        base = spec.shared_views[index]
        of = f"output {spec.outputs.index(base)}" if base in spec.outputs else "a value the kernel writes"
        return f"{what}: a view of {of}, replayed at run time (no copy)"
    dtype = spec.output_dtypes[index]
    if dtype is not None:
        return f"{what}: written by the kernel as {_layout.describe(dtype)} (no copy)"
    return what


def _describe_value(v: Any) -> str:
    if isinstance(v, Tensor):
        return f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"
    return type(v).__name__
