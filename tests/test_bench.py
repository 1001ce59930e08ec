"""Smoke tests of ``python -m torchcx.bench`` and its ``--sweep``: the runner in-process at the smallest sizes.

No timing assertions: only that every mode gets a status, failures are reported
rather than raised, and the table, JSON and chart are written.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from torchcx.bench import Options, Results, modes, report, run, sweep
from torchcx.bench import __main__ as bench_main
from torchcx.bench.workloads import SWEEP_WORKLOADS, WORKLOADS, Problem, Workload

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


# -- the size sweep (python -m torchcx.bench --sweep) ----------------------------------------------------------


def test_suite_sizes_are_the_issues_with_the_large_ones_beside_them() -> None:
    cpu = torch.device("cpu")
    for name in ("rope-fp32", "rope-bf16"):
        assert WORKLOADS[name].build("full", cpu).size.endswith("B=4 T=512 H=8 D=64"), name
        assert WORKLOADS[name].build("quick", cpu).size.endswith("B=4 T=512 H=8 D=64"), name
        assert WORKLOADS[f"{name}-large"].build("full", cpu).size.endswith("B=4 T=2048 H=8 D=64"), name
    assert WORKLOADS["nls"].build("full", cpu).size.startswith("complex64 64x4096")
    assert WORKLOADS["nls-b16"].build("full", cpu).size.startswith("complex64 16x4096")


def test_sweep_shapes_have_n_elements() -> None:
    cpu = torch.device("cpu")
    for workload in SWEEP_WORKLOADS.values():
        for log2_n in (workload.min_log2, 10, 11, 20):
            problem = workload.build(1 << log2_n, cpu)
            main = problem.make_args()[0]
            assert main.numel() == 1 << log2_n, (workload.name, log2_n, problem.size)
    # 2^20 is issue #7's rotary size
    assert SWEEP_WORKLOADS["rope-fp32"].build(1 << 20, cpu).size.endswith("B=4 T=512 H=8 D=64")
    with pytest.raises(ValueError, match="powers of two"):
        SWEEP_WORKLOADS["crelu"].build(3 << 10, cpu)


def test_inplace_view_stays_bounded_and_checks_aliasing() -> None:
    problem = SWEEP_WORKLOADS["inplace-view"].build(1 << 10, torch.device("cpu"))
    x, phase, y = problem.make_args()
    assert problem.make_args()[0] is not x  # each mode gets its own x
    bound = float(y.abs().max()) / 2**0.5 + float(x.abs().max()) + float(y.abs().max()) / 2**0.5
    for _ in range(2000):
        out = problem.program(x, phase, y)
    assert float(x.abs().max()) <= bound
    assert float(problem.observe((x, phase, y), out)[-1]) == 1.0
    assert float(problem.observe((x, phase, y), out.clone())[-1]) == 0.0  # a copy is not eager's aliasing


def test_sweep_sizes_option() -> None:
    assert sweep.parse_sizes("10,14,18") == [10, 14, 18]
    assert sweep.parse_sizes("10-16, 2^20") == [10, 12, 14, 16, 20]
    assert bench_main.parse_args(["--sweep", "--quick"]).sizes is None
    with pytest.raises(SystemExit):
        bench_main.parse_args(["--sizes", "10"])
    with pytest.raises(ValueError, match="unknown sweep workloads"):
        sweep.SweepOptions(workloads=["nls"]).check()
    with pytest.raises(ValueError, match="starts at"):
        sweep.SweepOptions(log2_sizes=[2]).check()


def test_sweep_runs_every_workload_and_writes_table_json_and_charts(tmp_path, capsys) -> None:  # noqa: ANN001
    """Every sweep workload at a tiny size (two for one), eager and torchcx: the report, JSON and charts parse."""
    options = sweep.SweepOptions(
        log2_sizes=[6], modes=["eager", "torchcx"], rounds=2, warmup=1, min_sample_s=0.0, measure_limits=False
    )
    results = sweep.run(options, log=lambda line: None)
    more = sweep.run(
        sweep.SweepOptions(
            workloads=["inplace-view"],
            log2_sizes=[4],
            modes=["eager", "torchcx"],
            rounds=2,
            warmup=1,
            min_sample_s=0.0,
            measure_limits=False,
        ),
        log=lambda line: None,
    )
    results.points += more.points
    assert [(p.workload, p.log2_n) for p in results.points] == [
        *((name, 6) for name in SWEEP_WORKLOADS),
        ("inplace-view", 4),
    ]
    for p in results.points:
        assert list(p.result.modes) == ["eager", "torchcx"]
        eager, cx = p.result.modes["eager"], p.result.modes["torchcx"]
        assert eager.status == "ok" and eager.speedup == pytest.approx(1.0), p.workload
        assert cx.status in STATUSES and len(cx.samples_ms) == (2 if cx.ms is not None else 0), p.workload
    assert results.points[-1].result.modes["torchcx"].status == "ok"  # aliasing and values as eager's

    paths = sweep.write(results, str(tmp_path))
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert {"machine", "options", "summary", "worst", "points", "torchcx_not_ok", "wall_s"} <= set(data)
    point = data["points"][0]
    assert (point["workload"], point["log2_n"], point["n"]) == ("elementwise", 6, 64)
    assert set(point["modes"]["torchcx"]) == MODE_KEYS
    worst = results.worst("eager")
    assert worst is not None and worst.ratio == min(r.ratio for r in results.ratios("eager"))
    assert data["worst"]["eager"]["ratio"] == pytest.approx(worst.ratio)

    table = (tmp_path / "sweep.txt").read_text()
    assert table.startswith(f"WORST torchcx vs eager: {worst.ratio:.2f}x ({worst.workload} at 2^{worst.log2_n}")
    assert "WORST torchcx vs torch.compile: not measured" in table
    assert "rope-bf16-freqs" in table and "2^6" in table
    md = (tmp_path / "sweep.md").read_text()
    assert md.startswith("**WORST torchcx vs eager") and "| 2^6 |" in md and "| crelu@2^6 |" in md
    if importlib.util.find_spec("matplotlib") is not None:
        for name in [*SWEEP_WORKLOADS, None]:
            png = tmp_path / (f"sweep-{name}.png" if name else "sweep.png")
            assert png.stat().st_size > 0
    else:
        assert "matplotlib" in paths["chart_skipped"]

    # --sweep --render: the JSON holds everything the report needs
    rendered = sweep.SweepResults.from_dict(data)
    assert sweep.text_table(rendered) == sweep.text_table(results)
    capsys.readouterr()
    out = tmp_path / "again"
    assert bench_main.main(["--sweep", "--render", str(tmp_path / "sweep.json"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("WORST torchcx vs eager")
    assert (out / "sweep.txt").read_text() == table
