"""``torchcx.explain``: what torchcx did with a function's complex values, for a person to read."""

from __future__ import annotations

import contextlib
import copy
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch._dynamo.utils import counters
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ._boundary.report import ACTIVE_REPORTS, CompileReport, GraphReport
from ._boundary.spec import has_complex
from .backend import compile

__all__ = ["explain", "ExplainReport"]


@dataclass
class ExplainReport:
    """One compilation of a function: Dynamo's graphs and breaks, and each graph torchcx lowered."""

    dynamo_graphs: int = 0
    graph_breaks: list[str] = field(default_factory=list)
    #: Frames Dynamo gave up on, which ran entirely in eager: "function (file line N): why".
    skipped_frames: list[str] = field(default_factory=list)
    graphs: list[GraphReport] = field(default_factory=list)
    #: Rewrites of Dynamo's graphs before AOTAutograd (Notes [Truncated spectra], [Small contractions in place]).
    rewrites: list[str] = field(default_factory=list)
    #: Complex aten ops of one call that ran inside compiled graphs (decomposed, extern or fallback).
    compiled_ops: int = 0
    #: Complex aten ops of one call that ran in eager, outside compiled graphs: op -> count.
    eager_ops: Counter[str] = field(default_factory=Counter)
    #: The same, by op and the source line that ran it: (op, "function (file:line)") -> count.
    eager_sites: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def complex_ops(self) -> int:
        """Aten ops touching a complex value that one call ran, compiled or in eager."""
        return self.compiled_ops + sum(self.eager_ops.values())

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

    def summary(self) -> str:
        """The report's first line: how much of the complex work was compiled, graphs and breaks."""
        eager, total = sum(self.eager_ops.values()), self.complex_ops
        if total == 0:
            work = "no complex ops ran"
        elif self.compiled_ops == 0:
            # The case that once read as success ("real-only, no fallbacks"): say it first.
            work = f"NOTHING complex was compiled: all {total} complex ops ran in eager"
        elif eager == 0:
            work = f"all {total} complex ops compiled"
        else:
            work = f"{self.compiled_ops} of {total} complex ops compiled, {eager} ran in eager"
        dynamo = f"{self.dynamo_graphs} graph(s), {len(self.graph_breaks)} graph break(s)"
        if self.skipped_frames:
            dynamo += f", {len(self.skipped_frames)} skipped frame(s)"
        listed = ":" if self.graph_breaks or self.skipped_frames else ""
        return f"torchcx.explain: {work}; {dynamo}{listed}"

    def __str__(self) -> str:
        lines = [self.summary()]
        for i, reason in enumerate(self.graph_breaks, 1):
            lines.append(f"  break {i}: {reason}")
        for i, reason in enumerate(self.skipped_frames, 1):
            lines.append(f"  skipped frame {i}: {reason}")
        if self.eager_ops:
            lines.append("")
            lines.append("complex ops that ran in eager, outside compiled graphs (most frequent first):")
            width = max(len(f"{op} x{n}") for op, n in self.eager_ops.items())
            for op, n in self.eager_ops.most_common():
                sites = Counter({site: k for (o, site), k in self.eager_sites.items() if o == op})
                where = ", ".join(f"{site} x{k}" for site, k in sites.most_common(3))
                more = f", {len(sites) - 3} more" if len(sites) > 3 else ""
                lines.append(f"  {f'{op} x{n}':<{width}}  at {where}{more}")
        if self.rewrites:
            lines.append("")
            lines.append("rewritten before differentiation (the backward is derived from the rewrite):")
            lines += [f"  {text}" for text in self.rewrites]
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
                impl_width = max(len(impl) for impl in g.lowered.values())
                lines += [
                    f"    {op:<{width}}  -> {impl:<{impl_width}}  ({g.how[op]})"
                    if op in g.how
                    else f"    {op:<{width}}  -> {impl}"
                    for op, impl in sorted(g.lowered.items())
                ]
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
            lines.append("")
            lines.append("(no graph reached Inductor: nothing to compute, or every op ran in eager)")
        return "\n".join(lines)


@contextlib.contextmanager
def _capture() -> Iterator[CompileReport]:
    report = CompileReport()
    ACTIVE_REPORTS.append(report)
    try:
        yield report
    finally:
        ACTIVE_REPORTS.remove(report)


def explain(fn: Callable[..., Any], *args: Any, backward: bool = False, **kwargs: Any) -> ExplainReport:
    """Compile ``fn`` with torchcx on (copies of) ``args`` and report what happened.

    The first line says how many of the aten ops that touch a complex value
    ran inside compiled graphs, out of all those one call runs, and how many
    graphs and graph breaks Dynamo made. The report then lists Dynamo's graph
    breaks and their reasons, the complex ops that ran in eager (between
    graphs, in frames Dynamo skipped) with the source lines that ran them, then every graph
    handed to Inductor: its inputs and how complex ones crossed the boundary
    (layout, copies), its outputs, each complex op and the implementation it
    was lowered to, extern kernels and eager fallbacks, and whether the graph
    Inductor lowered is real-only. A graph whose inputs require gradients has
    its backward graph lowered with it, and reported. With ``backward=True`` it
    also runs a backward pass (of the sum of the outputs' absolute values; none
    for a function that runs its own, a training step), and counts the complex
    ops the backward runs in eager too. ``fn`` runs several times (in
    Dynamo's explain, compiled, in eager and compiled again to count), each time
    on fresh copies of the arguments, so its side effects do not reach them.
    ``print(report)`` shows it.
    """
    report = ExplainReport()
    dynamo = torch._dynamo.explain(fn)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    report.dynamo_graphs = dynamo.graph_count
    report.graph_breaks = [_break_reason(b) for b in dynamo.break_reasons]
    torch._dynamo.reset()
    # a graph loaded from AOTAutograd's cache is not lowered, so there would be nothing to report
    no_aot_cache = torch._functorch.config.patch(enable_autograd_cache=False)
    compiled = no_aot_cache(compile(fn))
    call_args, call_kwargs = copy.deepcopy((args, kwargs))
    # Dynamo's explain lists no frame it skipped (a graph break in a loop skips the whole
    # frame): its messages are in the "unimplemented" counter, read around this first call.
    unimplemented = Counter(counters["unimplemented"])
    grads = _leaf_gradients((call_args, call_kwargs))
    with _capture() as captured:
        out = compiled(*call_args, **call_kwargs)
        # A training step runs its own backward (its leaves' gradients changed): none more.
        # (Its backward graphs tell nothing: torchcx lowers them with the forward.)
        run_backward = backward and all(t.grad is grad for t, grad in grads)
        if run_backward:
            _backward(out)
    report.graphs = list(captured.graphs)
    report.rewrites = list(captured.rewrites)
    report.skipped_frames = _skipped_frames(Counter(counters["unimplemented"]) - unimplemented)

    # Graphs say what was compiled, not what was not: count the complex ops of one call in
    # eager PyTorch, then those the compiled function still runs in eager. The second count
    # is taken on a warm call, so that no compilation happens under the counting mode.
    everything = _count_complex_ops(fn, args, kwargs, run_backward)
    outside = _count_complex_ops(compiled, args, kwargs, run_backward)
    # Dynamo's eager code between graphs can run an op eager PyTorch did not (a view it
    # rebuilds): such ops count as eager, and never make the compiled count negative.
    report.compiled_ops = sum((everything.ops - outside.ops).values())
    report.eager_ops = outside.ops
    report.eager_sites = outside.sites
    return report


def _backward(out: Any, counter: _ComplexOpCounter | None = None) -> None:
    """Backward of the sum of the outputs' absolute values, its ops counted by ``counter``."""
    tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    leaves = _leaves(tensors)
    if not leaves:
        return
    # The gradient of sum(|t|) is sgn(t): computed here, outside the counter, and passed in,
    # so that the backward runs the function's ops only (explain's abs is not eager work).
    with torch.no_grad():
        grads = [torch.sgn(t.detach()) for t in tensors]
    # Gradients returned, not accumulated: explain leaves no .grad on a module's parameters,
    # and gradient accumulation (detach, add_ into .grad) is no work of the function's.
    with counter if counter is not None else contextlib.nullcontext():
        torch.autograd.grad(tensors, leaves, grads, allow_unused=True)


def _leaf_gradients(values: Any) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """(leaf, its ``.grad`` now) for the tensors requiring grad in ``values`` and the parameters
    of the modules there."""
    out = []
    for value in tree_flatten(values)[0]:
        for t in value.parameters() if isinstance(value, torch.nn.Module) else [value]:
            if isinstance(t, torch.Tensor) and t.requires_grad and t.grad_fn is None:
                out.append((t, t.grad))
    return out


def _leaves(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors requiring grad that ``tensors`` were computed from (the ones backward fills)."""
    leaves = {id(t): t for t in tensors if t.grad_fn is None}
    nodes, seen = [t.grad_fn for t in tensors if t.grad_fn is not None], set()
    while nodes:
        node = nodes.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # an AccumulateGrad node: a leaf's
        if isinstance(variable, torch.Tensor):
            leaves[id(variable)] = variable
        nodes += [next_node for next_node, _ in node.next_functions]
    return list(leaves.values())


def _count_complex_ops(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], backward: bool
) -> _ComplexOpCounter:
    """The complex ops one call of ``fn`` (and its backward) runs outside compiled graphs."""
    call_args, call_kwargs = copy.deepcopy((args, kwargs))
    counter = _ComplexOpCounter()
    with counter:
        out = fn(*call_args, **call_kwargs)
    if backward:
        _backward(out, counter)
    return counter


#: Where compiled graphs run: AOTAutograd's runtime wrappers call each compiled forward and
#: backward (and torchcx's boundary code, Inductor's kernels and extern kernels under them).
_COMPILED_REGION = (
    str(Path(torch._functorch.__file__).parent / "_aot_autograd") + "/",
    str(Path(torch._functorch.__file__).parent / "aot_autograd.py"),
)
#: Frames that are not the user's: PyTorch's and this module's.
_NOT_USER = (str(Path(torch.__file__).parent) + "/", __file__)
#: Dynamo's name for the code that resumes a function after a graph break.
_RESUME = re.compile(r"torch_dynamo_resume_in_(.+)_at_\d+")


class _ComplexOpCounter(TorchDispatchMode):
    """Counts the aten ops touching a complex value that run outside compiled graphs.

    A compiled graph's ops do not dispatch one by one: only the Python around
    the graphs (eager regions, skipped frames) and the boundary code of the
    compiled graphs reach a dispatch mode. The latter runs under AOTAutograd's
    runtime wrappers and is recognized by its stack.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.sites: Counter[tuple[str, str]] = Counter()

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # Dynamo runs no compiled code (and compiles nothing) under a dispatch mode unless the
        # mode ignores compilation: then compiled graphs run, and the mode sees the rest.
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if has_complex((args, kwargs, out)):
            site = _eager_site(sys._getframe(1))
            if site is not None:
                self.ops[str(func)] += 1
                self.sites[(str(func), site)] += 1
        return out


def _eager_site(frame: FrameType | None) -> str | None:
    """Where an op ran: the user's source line, the backward node, or None inside a compiled graph."""
    site = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_COMPILED_REGION):
            return None
        if site is None and not filename.startswith(_NOT_USER):
            resumed = _RESUME.fullmatch(frame.f_code.co_name)
            name = resumed.group(1) if resumed else frame.f_code.co_name
            site = f"{name} ({filename}:{frame.f_lineno})"
        frame = frame.f_back
    # The autograd engine runs an eager backward formula with no Python frame of its own:
    # the user's frame found above would be the line that called backward. Name the node.
    node = torch._C._current_autograd_node()
    if node is not None:
        return f"backward of {node.name()}"
    return site or "?"


def _skipped_frames(messages: Counter[str]) -> list[str]:
    """Each frame Dynamo's messages say it skipped, as "function (file line N): why"."""
    frames = []
    for message in messages:
        skipped = re.search(r"frame skipped: ([^\n]+)", message)
        if skipped is None:
            continue
        # A message opens with the graph break that started it, then each one raised while
        # handling it ("*** While handling this graph break, another ... ***"): the last one
        # skipped the frame, the first one is what the user can remove.
        first = message.strip().splitlines()[0]
        why = message.split("***")[-1].strip().splitlines()[0]
        after = f" (after: {first})" if why != first else ""
        frames.append(f"{skipped.group(1)}: {why}{after}")
    return frames


def _break_reason(b: Any) -> str:
    reason = getattr(b, "reason", str(b))
    frames = getattr(b, "user_stack", None) or []
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{reason.strip().splitlines()[0] if reason else reason}{where}"
