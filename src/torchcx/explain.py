"""``torchcx.explain``: what torchcx did with a function's complex values, for a person to read."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from .backend import _ACTIVE_REPORTS, CompileReport, GraphReport, compile

__all__ = ["explain", "ExplainReport"]


@dataclass
class ExplainReport:
    """One compilation of a function: Dynamo's graphs and breaks, and each graph torchcx lowered."""

    dynamo_graphs: int = 0
    graph_breaks: list[str] = field(default_factory=list)
    graphs: list[GraphReport] = field(default_factory=list)

    @property
    def real_only(self) -> bool:
        """True when no graph Inductor lowered holds a complex value."""
        return all(g.real_only for g in self.graphs)

    @property
    def fallbacks(self) -> list[str]:
        return sorted({op for g in self.graphs for op in g.fallbacks})

    @property
    def externs(self) -> list[str]:
        return sorted({op for g in self.graphs for op in g.externs})

    def __str__(self) -> str:
        lines = [f"torchcx.explain: {self.dynamo_graphs} graph(s), {len(self.graph_breaks)} graph break(s)"]
        for i, reason in enumerate(self.graph_breaks, 1):
            lines.append(f"  break {i}: {reason}")
        for i, g in enumerate(self.graphs, 1):
            lines.append("")
            lines.append(f"[{i}] {g.kind} graph: {'real-only' if g.real_only else 'HOLDS COMPLEX VALUES'}")
            lines.append("  inputs:")
            lines += [f"    {j}: {text}" for j, text in enumerate(g.inputs)]
            if g.outputs:
                lines.append("  outputs:")
                lines += [f"    {j}: {text}" for j, text in enumerate(g.outputs)]
            if g.lowered:
                lines.append("  complex ops and their decompositions:")
                width = max(len(op) for op in g.lowered)
                lines += [f"    {op:<{width}}  -> {impl}" for op, impl in sorted(g.lowered.items())]
            if g.externs:
                lines.append("  extern kernels (native complex kernel on interleaved data):")
                lines += [f"    {op}" for op in sorted(set(g.externs))]
            if g.fallbacks:
                lines.append("  eager fallbacks (no decomposition; native kernel, warned):")
                lines += [f"    {op}" for op in sorted(set(g.fallbacks))]
            if not g.real_only:
                lines.append("  complex values left in the graph:")
                lines += [f"    {n}" for n in g.complex_nodes_after]
        if not self.graphs:
            lines.append("(no graph reached Inductor: nothing to compute, or every op ran in eager)")
        return "\n".join(lines)


@contextlib.contextmanager
def _capture() -> Iterator[CompileReport]:
    report = CompileReport()
    _ACTIVE_REPORTS.append(report)
    try:
        yield report
    finally:
        _ACTIVE_REPORTS.remove(report)


def explain(fn: Callable[..., Any], *args: Any, backward: bool = False, **kwargs: Any) -> ExplainReport:
    """Compile ``fn`` with torchcx on (copies of) ``args`` and report what happened.

    The report lists Dynamo's graph breaks and their reasons, then every graph
    handed to Inductor: its inputs and how complex ones crossed the boundary
    (layout, copies), its outputs, each complex op and the implementation it
    was lowered to, extern kernels and eager fallbacks, and whether the graph
    Inductor lowered is real-only. With ``backward=True`` it also runs a
    backward pass (of the sum of the outputs' absolute values) to report the
    backward graphs (a function that runs its own backward, a training step,
    reports its backward graphs either way). The arguments are copied first, so ``fn``'s side effects
    do not reach them. ``print(report)`` shows it.
    """
    report = ExplainReport()
    dynamo = torch._dynamo.explain(fn)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    report.dynamo_graphs = dynamo.graph_count
    report.graph_breaks = [_break_reason(b) for b in dynamo.break_reasons]
    torch._dynamo.reset()
    call_args, call_kwargs = copy.deepcopy((args, kwargs))
    with _capture() as captured:
        out = compile(fn)(*call_args, **call_kwargs)
        # A training step runs its own backward (its graphs are captured already): none more.
        ran_backward = any(graph.kind == "backward" for graph in captured.graphs)
        if backward and not ran_backward:
            tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
            if tensors:
                sum(t.abs().sum() for t in tensors).backward()
    report.graphs = list(captured.graphs)
    return report


def _break_reason(b: Any) -> str:
    reason = getattr(b, "reason", str(b))
    frames = getattr(b, "user_stack", None) or []
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{reason.strip().splitlines()[0] if reason else reason}{where}"
