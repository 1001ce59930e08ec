"""OpInfo conformance, compiled: every op supporting complex64, compiled with torchcx.compile.

Each sample becomes a closure over its non-tensor arguments, compiled with
``torchcx.compile`` and compared with eager on native complex tensors. Two
figures are recorded per op: whether it passes, and whether the graphs
Inductor lowered for it were real-only (a post-grad hook looks for complex
values; extern kernels such as LAPACK and the vendor FFT take and return real
tensors, so they count as real-only and are listed separately), and a third:
whether every complex op was decomposed (no eager fallback).

CI runs the first sample of every op, most ops compiled in groups (Note [Ops
compiled together] in together.py). The full set, one compilation per sample:

    TORCHCX_OPINFO_FULL=1 python -m pytest tests/test_opinfo_compile.py -n 2
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

import torchcx
from compile_harness import record_inductor_graphs, sample_as_function
from expectations import lookup
from opinfo_harness import clone_inputs, complex_ops, op_id, record, run_samples
from together import ALONE_HINT, Groups, attributable, split
from torchcx.explain import _capture

FULL = os.environ.get("TORCHCX_OPINFO_FULL") == "1"
DTYPE = torch.complex64
OPS = [op for op in complex_ops() if DTYPE in op.supported_dtypes("cpu")]


class CompiledRunner:
    """Runs one sample through torchcx.compile and remembers what reached Inductor."""

    def __init__(self) -> None:
        self.complex_nodes: list[str] = []
        self.externs: set[str] = set()
        self.fallbacks: set[str] = set()

    def __call__(self, op: Any, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        closure, tensors = sample_as_function(op, inp, args, kwargs)
        torch._dynamo.reset()
        with record_inductor_graphs() as recorder, _capture() as report:
            out = torchcx.compile(closure)(*tensors)
        self.complex_nodes += recorder.complex_nodes
        for graph in report.graphs:
            self.externs.update(graph.externs)
            self.fallbacks.update(graph.fallbacks)
        return out


def compile_forward_together(ops: list[Any]) -> dict[str, tuple[Any, Any]]:
    """The first samples of ``ops`` through one torchcx-compiled function: op id -> (sample,
    compiled output on a copy of it). An op whose sample raises natively is left out."""
    members = []
    for op in ops:
        sample = next(iter(op.sample_inputs("cpu", DTYPE, requires_grad=False)), None)
        if sample is None:
            continue
        native = clone_inputs((sample.input, sample.args, sample.kwargs))
        try:
            op(native[0], *native[1], **native[2])
        except Exception:  # noqa: BLE001  (it must raise compiled too: compiled alone)
            continue
        members.append((op, sample, *sample_as_function(op, *clone_inputs((sample.input, sample.args, sample.kwargs)))))
    closures = [closure for _, _, closure, _ in members]
    counts = [len(tensors) for _, _, _, tensors in members]

    def every_op(*tensors: torch.Tensor) -> tuple[Any, ...]:
        return tuple(closure(*piece) for closure, piece in zip(closures, split(tensors, counts)))

    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, _capture() as report:
        outputs = torchcx.compile(every_op)(*[t for _, _, _, tensors in members for t in tensors])
    attributable(recorder, report)
    return {op_id(op): (sample, out) for (op, sample, _, _), out in zip(members, outputs)}


def groupable(op: Any) -> bool:
    """Not skipped or expected to fail, and with values to compare: the random and
    uninitialized ops (METADATA_ONLY) are compiled alone. Their OpInfo wrappers seed the
    generator (``torch.manual_seed``, a graph break), and after that break Dynamo gave
    ``cfloat`` of a complex64 tensor a complex128 result in a group holding ``cdouble``,
    ``cfloat`` and ``rand_like``, with the ``eager`` backend too (torch 2.13.0)."""
    exp = lookup("compiled", op_id(op), DTYPE)
    return not FULL and not exp.skip and not exp.xfail and not exp.metadata_only


GROUPS = Groups("compiled", OPS, groupable, compile_forward_together)


@pytest.mark.parametrize("op", GROUPS.params(OPS))
def test_opinfo_compiled(op):
    dtype = DTYPE
    exp = lookup("compiled", op_id(op), dtype)
    if exp.skip:
        record("compiled", op, dtype, False, f"skipped: {exp.skip}")
        pytest.skip(exp.skip)
    runner = CompiledRunner()
    together = GROUPS.result(op)
    if together is not None:  # (the group's graphs were real-only, decomposed, with no extern)
        sample, output = together
        outcome = run_samples(
            op,
            dtype,
            lambda *_: output,
            rtol=exp.rtol,
            atol=exp.atol,
            metadata_only=exp.metadata_only,
            samples=[sample],
        )
    else:
        outcome = run_samples(
            op,
            dtype,
            runner,
            rtol=exp.rtol,
            atol=exp.atol,
            metadata_only=exp.metadata_only,
            max_samples=None if FULL else 1,
        )
    if together is not None and outcome.failure is not None:
        outcome.failure += f" (compiled with its group: {ALONE_HINT})"
    passed = outcome.failure is None
    record("compiled", op, dtype, passed, outcome.failure or "")
    if passed:
        notes = []
        if runner.externs:
            notes.append(f"extern: {', '.join(sorted(runner.externs))}")
        if runner.fallbacks:
            notes.append(f"fallback: {', '.join(sorted(runner.fallbacks))}")
        real_only = not runner.complex_nodes
        record(
            "compiled-real-only",
            op,
            dtype,
            real_only,
            "; ".join(notes) or f"complex in Inductor: {runner.complex_nodes[:3]}",
        )
        # decomposed: no op ran as a fallback (extern kernels by design, e.g. LAPACK, are fine)
        record(
            "compiled-decomposed", op, dtype, not runner.fallbacks, f"fallback: {', '.join(sorted(runner.fallbacks))}"
        )
    if exp.xfail:
        if passed:
            pytest.fail(f"{op_id(op)} passes now: remove it from XFAIL ({exp.xfail})")
        pytest.xfail(exp.xfail)
    assert passed, outcome.failure
