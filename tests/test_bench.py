"""Smoke tests of ``python -m torchcx.bench``: the runner in-process at the smallest sizes.

No timing assertions: only that every mode gets a status, failures are reported
rather than raised, and the table, JSON and chart are written.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from torchcx.bench import Options, Results, modes, report, run
from torchcx.bench.workloads import WORKLOADS, Problem, Workload

STATUSES = {"ok", "wrong", "error", "skipped"}
MODE_KEYS = {
    "status",
    "message",
    "ms",
    "samples_ms",
    "speedup",
    "max_rel_err",
    "compile_s",
    "inductor_cache",
    "graph_breaks",
    "fraction_of_bound",
    "warnings",
}


def _fast(**kwargs: object) -> Options:
    return Options(scale="smoke", rounds=2, warmup=1, min_sample_s=0.0, **kwargs)  # type: ignore[arg-type]


def test_workloads_run_eager_at_smoke_size() -> None:
    for workload in WORKLOADS.values():
        problem = workload.build("smoke", torch.device("cpu"))
        args = problem.make_args()
        assert problem.observe(args, problem.program(*args)), workload.name


def test_suite_writes_table_json_and_chart(tmp_path) -> None:  # noqa: ANN001
    results = run(_fast(workloads=["matmul"], modes=["eager", "torchcx", "jax.jit"]), log=lambda line: None)
    paths = report.write(results, str(tmp_path))

    data = json.loads((tmp_path / "results.json").read_text())
    assert {"machine", "limits", "options", "workloads", "wall_s", "gaps"} <= set(data)
    assert data["limits"]["copy_gb_per_s"] > 0 and data["limits"]["gemm_gflop_per_s"] > 0
    (workload,) = data["workloads"]
    assert workload["name"] == "matmul" and workload["bound"] in ("memory", "GEMM")
    assert list(workload["modes"]) == ["eager", "torchcx", "jax.jit"]
    for name, mode in workload["modes"].items():
        assert set(mode) == MODE_KEYS, name
        assert mode["status"] in STATUSES, name
    eager = workload["modes"]["eager"]
    assert eager["status"] == "ok" and eager["speedup"] == pytest.approx(1.0) and eager["max_rel_err"] == 0
    assert workload["modes"]["torchcx"]["status"] in ("ok", "wrong", "error")
    if importlib.util.find_spec("jax") is None:
        assert workload["modes"]["jax.jit"]["status"] == "skipped"

    table = (tmp_path / "results.txt").read_text()
    assert "matmul" in table and "torchcx" in table and "copy bandwidth" in table
    assert "| matmul |" in (tmp_path / "results.md").read_text()
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "speedups.png").stat().st_size > 0
    else:
        assert "matplotlib" in paths["chart_skipped"]


def test_failing_and_wrong_modes_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mode that raises is an error with its first line, a wrong result is timed and marked, the run goes on."""
    double = Workload(
        "double",
        "x * 2",
        lambda scale, device: Problem(
            program=lambda x: x * 2,
            make_args=lambda: (torch.ones(8, device=device),),
            size="8",
            bytes=64,
            flops=8,
            tolerance=1e-6,
        ),
    )
    monkeypatch.setitem(WORKLOADS, "double", double)
    start = modes.start

    def failing_start(mode: str, problem: Problem, device: torch.device) -> modes.Instance:
        if mode == modes.TORCH_COMPILE:
            raise RuntimeError("boom\nsecond line")
        if mode == modes.TORCHCX:
            return modes.TorchInstance(lambda x: x * 3, problem, device)
        return start(mode, problem, device)

    monkeypatch.setattr(modes, "start", failing_start)
    results = run(
        _fast(workloads=["double", "double"], modes=["eager", "torch.compile", "torchcx"], measure_limits=False),
        log=lambda line: None,
    )
    assert len(results.workloads) == 2
    for workload in results.workloads:
        failed, wrong = workload.modes["torch.compile"], workload.modes["torchcx"]
        assert (failed.status, failed.message, failed.ms) == ("error", "RuntimeError: boom", None)
        assert wrong.status == "wrong" and wrong.max_rel_err == pytest.approx(0.5) and wrong.ms is not None
    assert any("torchcx wrong" in gap for gap in results.gaps())
    table = report.text_table(results)
    assert "error: RuntimeError: boom" in table
    # --render: the JSON holds everything the table needs
    assert report.text_table(Results.from_dict(json.loads(json.dumps(report.as_json(results))))) == table
