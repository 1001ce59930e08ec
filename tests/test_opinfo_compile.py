"""OpInfo conformance, compiled: every op supporting complex64, compiled with torchcx.compile.

Each sample becomes a closure over its non-tensor arguments, compiled with
``torchcx.compile`` and compared with eager on native complex tensors. Two
figures are recorded per op: whether it passes, and whether the graphs
Inductor lowered for it were real-only (a post-grad hook looks for complex
values; extern kernels such as LAPACK and the vendor FFT take and return real
tensors, so they count as real-only and are listed separately), and a third:
whether every complex op was decomposed (no eager fallback).

CI runs the first sample of every op (one compilation each). The full set:

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
from opinfo_harness import complex_ops, op_id, record, run_samples
from torchcx.explain import _capture

FULL = os.environ.get("TORCHCX_OPINFO_FULL") == "1"
OPS = [op for op in complex_ops() if torch.complex64 in op.supported_dtypes("cpu")]


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


@pytest.mark.parametrize("op", OPS, ids=op_id)
def test_opinfo_compiled(op):
    dtype = torch.complex64
    exp = lookup("compiled", op_id(op), dtype)
    if exp.skip:
        record("compiled", op, dtype, False, f"skipped: {exp.skip}")
        pytest.skip(exp.skip)
    runner = CompiledRunner()
    outcome = run_samples(
        op,
        dtype,
        runner,
        rtol=exp.rtol,
        atol=exp.atol,
        metadata_only=exp.metadata_only,
        max_samples=None if FULL else 1,
    )
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
