"""``python -m torchcx.bench --sweep``: the same programs timed from 2^10 to 2^24 elements.

A compiled program that beats eager at one size and loses at another is a bug
at the second size; the sweep runs each of ``SWEEP_WORKLOADS`` from
cache-resident (2^10 elements) to DRAM-sized (2^24), every mode at every size,
and its report opens with the **worst** torchcx ratio of the whole sweep.

Each point (one workload at one size) is run exactly as the suite runs a
workload (``runner.run_workload``, Note [Benchmark methodology]): eager first
as the reference, every other mode checked against it, the modes timed
interleaved in one process. The results are the suite's ``WorkloadResult``
per point, with every sample, so that the suite's tables (``report.py``) can
render them too; this module adds the tables across sizes, the worst ratios and
a chart of speedup against size per workload.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from . import limits as limits_module
from . import report
from .modes import EAGER, JAX, MODES, TORCH_COMPILE, TORCHCX
from .runner import Log, Options, Results, WorkloadResult, run_workload, set_threads
from .workloads import SWEEP_WORKLOADS, Workload

#: The default exponents: powers of 4 from 2^10 (L1-resident) to 2^24 (DRAM).
DEFAULT_LOG2 = (10, 12, 14, 16, 18, 20, 22, 24)
#: ``--quick``.
QUICK_LOG2 = (10, 14, 18)


@dataclass
class SweepOptions:
    """What the sweep runs: workload names of ``SWEEP_WORKLOADS``, sizes as exponents of 2, modes, timing."""

    workloads: Sequence[str] = tuple(SWEEP_WORKLOADS)
    log2_sizes: Sequence[int] = DEFAULT_LOG2
    modes: Sequence[str] = MODES
    device: str = "cpu"
    threads: int | None = None
    rounds: int = 11
    warmup: int = 3
    min_sample_s: float = 0.05
    measure_limits: bool = True
    quick: bool = False  # shorter limit measurements

    def check(self) -> None:
        unknown = [w for w in self.workloads if w not in SWEEP_WORKLOADS]
        if unknown:
            raise ValueError(f"unknown sweep workloads {unknown}; they are {', '.join(SWEEP_WORKLOADS)}")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise ValueError(f"unknown modes {unknown}; the modes are {', '.join(MODES)}")
        if not self.log2_sizes:
            raise ValueError("no sizes to sweep")
        for name in self.workloads:
            low = SWEEP_WORKLOADS[name].min_log2
            small = [e for e in self.log2_sizes if e < low]
            if small:
                raise ValueError(f"{name} starts at 2^{low} elements, not 2^{min(small)}")
        too_large = [e for e in self.log2_sizes if e > 30]
        if too_large:
            raise ValueError(f"sizes up to 2^30 elements, not 2^{max(too_large)}")

    def runner_options(self) -> Options:
        return Options(
            workloads=(),
            modes=self.modes,
            device=self.device,
            threads=self.threads,
            rounds=self.rounds,
            warmup=self.warmup,
            min_sample_s=self.min_sample_s,
            measure_limits=self.measure_limits,
        )


@dataclass
class Point:
    """One workload at ``2**log2_n`` elements."""

    workload: str
    log2_n: int
    result: WorkloadResult


@dataclass
class Ratio:
    """torchcx's speedup over ``against`` (``against``'s time / torchcx's time) at one point."""

    against: str
    ratio: float
    workload: str
    log2_n: int


@dataclass
class SweepResults:
    machine: dict[str, Any]
    limits: dict[str, Any] | None
    options: dict[str, Any]
    points: list[Point]
    wall_s: float
    titles: dict[str, str] = field(default_factory=dict)

    def as_results(self) -> Results:
        """The points as the suite's ``Results`` (one "workload" per point, named ``name@2^k``)."""
        return Results(self.machine, self.limits, self.options, [p.result for p in self.points], self.wall_s)

    def workloads(self) -> list[str]:
        return list(dict.fromkeys(p.workload for p in self.points))

    def modes(self) -> list[str]:
        present = {m for p in self.points for m in p.result.modes}
        return [m for m in MODES if m in present]

    def ratios(self, against: str) -> list[Ratio]:
        """torchcx's ratio against ``against`` at every point where both were timed."""
        out = []
        for p in self.points:
            cx, ref = p.result.modes.get(TORCHCX), p.result.modes.get(against)
            if cx is None or ref is None or cx.ms is None or ref.ms is None or cx.ms <= 0:
                continue
            out.append(Ratio(against, ref.ms / cx.ms, p.workload, p.log2_n))
        return out

    def worst(self, against: str) -> Ratio | None:
        return min(self.ratios(against), key=lambda r: r.ratio, default=None)

    def torchcx_not_ok(self) -> list[str]:
        out = []
        for p in self.points:
            cx = p.result.modes.get(TORCHCX)
            if cx is not None and cx.status != "ok":
                out.append(f"{p.workload} 2^{p.log2_n}: {cx.status}" + (f" ({cx.message})" if cx.message else ""))
        return out

    def summary(self) -> list[str]:
        """The lines the report opens with: the worst torchcx ratios of the whole sweep, and what failed."""
        lines = []
        total = len(self.points)
        for against in (EAGER, TORCH_COMPILE):
            worst = self.worst(against)
            if worst is None:
                lines.append(f"WORST torchcx vs {against}: not measured")
                continue
            ratios = self.ratios(against)
            below = sum(r.ratio < 1.0 for r in ratios)
            lines.append(
                f"WORST torchcx vs {against}: {worst.ratio:.2f}x ({worst.workload} at 2^{worst.log2_n} elements); "
                f"below 1.0x at {below} of {len(ratios)} points"
            )
        not_ok = self.torchcx_not_ok()
        lines.append(
            f"torchcx not ok at {len(not_ok)} of {total} points" + (": " + "; ".join(not_ok) if not_ok else "")
        )
        lines.append(
            f"(ratio = the other mode's time / torchcx's time, median of {self.options.get('rounds')} samples)"
        )
        return lines

    def as_dict(self) -> dict[str, Any]:
        results = self.as_results().as_dict()
        points = []
        for p, w in zip(self.points, results["workloads"]):
            points.append({"workload": p.workload, "log2_n": p.log2_n, "n": 1 << p.log2_n, **w})
        worst = {against: asdict(r) if (r := self.worst(against)) else None for against in (EAGER, TORCH_COMPILE)}
        return {
            "machine": self.machine,
            "limits": self.limits,
            "options": self.options,
            "titles": self.titles,
            "summary": self.summary(),
            "worst": worst,
            "torchcx_not_ok": self.torchcx_not_ok(),
            "points": points,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepResults:
        """The results ``as_dict`` (or a sweep.json) holds, to render them again."""
        workloads = [{k: v for k, v in p.items() if k not in ("workload", "log2_n", "n")} for p in data["points"]]
        results = Results.from_dict({**data, "workloads": workloads})
        points = [Point(p["workload"], p["log2_n"], w) for p, w in zip(data["points"], results.workloads)]
        return cls(data["machine"], data["limits"], data["options"], points, data["wall_s"], data.get("titles", {}))


def parse_sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated exponents of 2 (``10,14,18``) or ranges (``10-24`` every 2)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "-" in part:
            low, high = (int(x) for x in part.split("-", 1))
            out += range(low, high + 1, 2)
        else:
            out.append(int(part.removeprefix("2^")))
    return sorted(set(out))


def _point_workload(name: str, log2_n: int) -> Workload:
    sweep_workload = SWEEP_WORKLOADS[name]
    return Workload(
        f"{name}@2^{log2_n}",
        sweep_workload.title,
        lambda scale, device: sweep_workload.build(1 << log2_n, device),
    )


def run(options: SweepOptions, log: Log = print) -> SweepResults:
    """Every selected sweep workload at every selected size in every selected mode."""
    options.check()
    set_threads(options.threads)
    started = time.perf_counter()
    device = torch.device(options.device)
    machine = limits_module.describe_machine(device)
    sizes = ", ".join(f"2^{e}" for e in options.log2_sizes)
    log(
        f"torchcx.bench --sweep: {len(options.workloads)} workloads x sizes {sizes} x {len(options.modes)} modes, "
        f"{machine['cpu']}, {machine['cores']} cores, {machine['torch_threads']} torch threads, device {device}"
    )
    if JAX in options.modes and machine["jax"] is None:
        log("  JAX is not installed: the jax.jit mode is skipped (pip install 'torchcx[bench]')")
    machine_limits = None
    if options.measure_limits:
        log("measuring the machine's limits")
        machine_limits = limits_module.measure(device, quick=options.quick)
        log(
            f"  copy bandwidth {machine_limits.copy_gb_per_s:.1f} GB/s, "
            f"float32 GEMM {machine_limits.gemm_gflop_per_s:.1f} GFLOP/s"
        )
    runner_options = options.runner_options()
    points = []
    count = len(options.workloads) * len(options.log2_sizes)
    for name in options.workloads:
        for log2_n in options.log2_sizes:
            log(f"[{len(points) + 1}/{count}] {name} at 2^{log2_n} elements: {SWEEP_WORKLOADS[name].title}")
            result = run_workload(_point_workload(name, log2_n), runner_options, device, machine_limits, log)
            points.append(Point(name, log2_n, result))
    torch._dynamo.reset()
    machine["load_average_1min_end"] = limits_module.load_average()
    return SweepResults(
        machine=machine,
        limits=machine_limits.as_dict() if machine_limits else None,
        options={k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        points=points,
        wall_s=time.perf_counter() - started,
        titles={name: SWEEP_WORKLOADS[name].title for name in options.workloads},
    )


# -- report ----------------------------------------------------------------------------------------------------


def _cell(results: SweepResults, point: Point, mode: str) -> str:
    r = point.result.modes.get(mode)
    if r is None:
        return "-"
    if mode == EAGER:
        return f"{r.ms:.3g} ms" if r.ms is not None else r.status
    if r.speedup is None:
        return r.status
    return f"{r.speedup:.2f}x" + (" wrong" if r.status == "wrong" else "")


def _vs_compile(point: Point) -> str:
    cx, tc = point.result.modes.get(TORCHCX), point.result.modes.get(TORCH_COMPILE)
    if cx is None or tc is None or cx.ms is None or tc.ms is None:
        return "-"
    return f"{tc.ms / cx.ms:.2f}x"


def _rows(results: SweepResults, name: str) -> tuple[list[str], list[list[str]]]:
    modes = results.modes()
    header = ["n", "size", *(f"{m} ms" if m == EAGER else m for m in modes)]
    with_ratio = TORCHCX in modes and TORCH_COMPILE in modes
    if with_ratio:
        header.append("torchcx vs torch.compile")
    rows = []
    for p in results.points:
        if p.workload != name:
            continue
        row = [f"2^{p.log2_n}", p.result.size, *(_cell(results, p, m) for m in modes)]
        if with_ratio:
            row.append(_vs_compile(p))
        rows.append(row)
    return header, rows


def text_table(results: SweepResults) -> str:
    """The sweep's report as text: the worst ratios first, then a table per workload (speedups over eager)."""
    lines = [*results.summary(), "", report.machine_line(results.as_results())]
    lines += [report.limits_line(results.as_results()), ""]
    for name in results.workloads():
        header, rows = _rows(results, name)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines.append(f"{name}: {results.titles.get(name, '')} (speedup over eager; eager's time)")
        for row in [header, *rows]:
            lines.append(
                "  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            )
        lines.append("")
    lines.append(f"wall time {results.wall_s:.0f} s")
    return "\n".join(lines)


def markdown(results: SweepResults) -> str:
    """The worst ratios, a table per workload, and every point in the suite's detailed table."""
    lines = ["**" + results.summary()[0] + "**", "", "**" + results.summary()[1] + "**", ""]
    lines += [f"{line}" for line in results.summary()[2:]]
    lines += ["", report.machine_line(results.as_results()), ""]
    for name in results.workloads():
        header, rows = _rows(results, name)
        lines += [f"### {name}: {results.titles.get(name, '')}", ""]
        lines.append(report._md_row(header))
        lines.append(report._md_row(["---", "---", *("---:" for _ in header[2:])]))
        lines += [report._md_row(row) for row in rows]
        lines.append("")
    lines += ["### Every point", "", report.markdown(results.as_results())]
    return "\n".join(lines)


def chart(results: SweepResults, out_dir: str) -> tuple[list[str], str | None]:
    """``sweep-<workload>.png`` per workload and ``sweep.png`` with all of them: speedup over eager against size.

    Returns the paths written and why no chart was written (matplotlib missing), or None.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        return [], "matplotlib is not installed (pip install 'torchcx[bench]'): no chart"
    names = results.workloads()
    modes = [m for m in results.modes() if m != EAGER]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    m = results.machine
    machine = f"{m['cpu']}, {m['cores']} cores, {report._threads(m['torch_threads'])}"
    paths = []

    def draw(ax: Any, name: str) -> None:
        speedups = [1.0]
        for j, mode in enumerate(modes):
            xs, ys, wrong = [], [], []
            for p in results.points:
                r = p.result.modes.get(mode)
                if p.workload == name and r is not None and r.speedup is not None:
                    xs.append(1 << p.log2_n)
                    ys.append(r.speedup)
                    if r.status == "wrong":
                        wrong.append((1 << p.log2_n, r.speedup))
            speedups += ys
            color = colors[j % len(colors)]
            style = {"linewidth": 2.2} if mode == TORCHCX else {"linewidth": 1.2}
            ax.plot(xs, ys, marker="o", markersize=3.5, color=color, label=mode, **style)
            if wrong:  # timed, but its result is not eager's
                ax.plot(*zip(*wrong), linestyle="none", marker="x", markersize=9, color="red")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylim(min(speedups) / 1.4, max(speedups) * 1.4)
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("elements")
        ax.set_ylabel("speedup over eager")
        ax.set_title(f"{name}\n{results.titles.get(name, '')}", fontsize=8)
        ax.grid(which="both", alpha=0.3)

    for name in names:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        draw(ax, name)
        ax.legend(fontsize=8)
        fig.suptitle(f"torchcx.bench --sweep: {machine}", fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"sweep-{name}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    height = 3.6 * rows + 0.9  # inches: 0.9 for the title and the legend
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, height), squeeze=False)
    for ax, name in zip(axes.flat, names):
        draw(ax, name)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    worst = results.worst(EAGER)
    headline = f"\nworst torchcx vs eager {worst.ratio:.2f}x ({worst.workload}, 2^{worst.log2_n})" if worst else ""
    fig.suptitle(f"torchcx.bench --sweep: {machine}{headline}", fontsize=10, y=1 - 0.05 / height)
    fig.legend(
        handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.45 / height), ncols=len(modes), fontsize=9
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.7 / height))
    path = os.path.join(out_dir, "sweep.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
    return paths, None


def write(results: SweepResults, out_dir: str) -> dict[str, str]:
    """Write sweep.json, sweep.md, sweep.txt and the charts to ``out_dir``; the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {
        "json": os.path.join(out_dir, "sweep.json"),
        "markdown": os.path.join(out_dir, "sweep.md"),
        "table": os.path.join(out_dir, "sweep.txt"),
    }
    with open(paths["json"], "w") as f:
        json.dump(report._finite(results.as_dict()), f, indent=2)
    with open(paths["markdown"], "w") as f:
        f.write(markdown(results) + "\n")
    with open(paths["table"], "w") as f:
        f.write(text_table(results) + "\n")
    charts, why_not = chart(results, out_dir)
    if why_not is None:
        paths["chart"] = os.path.join(out_dir, "sweep.png")
        paths["charts"] = ", ".join(charts)
    else:
        paths["chart_skipped"] = why_not
    return paths
