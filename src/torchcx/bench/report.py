"""The results as a text table, Markdown tables, JSON and a PNG bar chart of speedups."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from .modes import EAGER, MODES, TORCHCX
from .runner import ModeResult, Results, WorkloadResult


def _ms(r: ModeResult) -> str:
    return f"{r.ms:.2f}" if r.ms is not None else "-"


def _speedup(r: ModeResult) -> str:
    return f"{r.speedup:.2f}x" if r.speedup is not None else "-"


def _err(r: ModeResult) -> str:
    if r.max_rel_err is None:
        return "-"
    return "0" if r.max_rel_err == 0 else f"{r.max_rel_err:.1e}"


def _compile(r: ModeResult) -> str:
    return f"{r.compile_s:.1f}" if r.compile_s is not None else "-"


def _fraction(r: ModeResult) -> str:
    return f"{100 * r.fraction_of_bound:.1f}%" if r.fraction_of_bound is not None else "-"


def _status(r: ModeResult) -> str:
    return f"{r.status}: {r.message}" if r.message else r.status


def _bound(w: WorkloadResult) -> str:
    return f"{w.bound_ms:.2f} ms ({w.bound})" if w.bound_ms is not None else "not measured"


def _modes(results: Results) -> list[str]:
    present = {m for w in results.workloads for m in w.modes}
    return [m for m in MODES if m in present]


def _threads(n: int) -> str:
    return f"{n} torch thread{'s' if n != 1 else ''}"


def machine_line(results: Results) -> str:
    m = results.machine
    memory = f", {m['memory_gib']} GiB" if m.get("memory_gib") else ""
    load = ""
    if m.get("load_average_1min") is not None:
        load = f"; load average {m['load_average_1min']} at the start, {m.get('load_average_1min_end')} at the end"
    gpu = f" ({m['gpu']})" if m.get("gpu") else ""
    return (
        f"{m['cpu']}, {m['cores']} cores ({m['cores_used']} used){memory}, {_threads(m['torch_threads'])}; "
        f"torchcx {m.get('torchcx', '?')}, torch {m['torch']}, jax {m['jax'] or 'not installed'}, "
        f"Python {m['python']}, device {m['device']}{gpu}{load}"
    )


def limits_line(results: Results) -> str:
    if results.limits is None:
        return "machine limits: not measured"
    lim = results.limits
    return (
        f"copy bandwidth {lim['copy_gb_per_s']:.1f} GB/s ({lim['copy_bytes'] >> 20} MiB buffers), "
        f"float32 GEMM {lim['gemm_gflop_per_s']:.1f} GFLOP/s ({lim['gemm_n']}x{lim['gemm_n']})"
    )


def text_table(results: Results) -> str:
    """The table printed at the end of a run."""
    header = ("mode", "ms", "vs eager", "max rel err", "compile s", "compile cache", "% of bound", "status")
    widths = (16, 9, 9, 11, 9, 14, 10, 0)
    fmt = "  ".join(f"{{:{'<' if i in (0, 5, 7) else '>'}{w}}}" if w else "{}" for i, w in enumerate(widths))
    lines = [machine_line(results), limits_line(results), ""]
    for w in results.workloads:
        note = f"; {w.note}" if w.note else ""
        lines.append(f"{w.name}: {w.title} [{w.size}{note}], bound {_bound(w)}")
        lines.append("  " + fmt.format(*header))
        for mode, r in w.modes.items():
            row = (mode, _ms(r), _speedup(r), _err(r), _compile(r), r.inductor_cache or "-", _fraction(r), _status(r))
            lines.append("  " + fmt.format(*row))
        lines.append("")
    gaps = results.gaps()
    lines.append("torchcx gaps (slower than eager or JAX, or not ok):" if gaps else "torchcx gaps: none")
    lines += [f"  {g}" for g in gaps]
    lines.append(f"wall time {results.wall_s:.0f} s")
    return "\n".join(lines)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown(results: Results) -> str:
    """A summary table (speedups over eager) and a detailed one, for the README."""
    modes = _modes(results)
    others = [m for m in modes if m != EAGER]
    lines = [
        _md_row(["workload", "size", "eager ms", *others, "bound", "torchcx % of bound"]),
        _md_row(["---", "---", "---:", *("---:" for _ in others), "---:", "---:"]),
    ]
    for w in results.workloads:
        eager = w.modes.get(EAGER)
        cells = [w.name, w.size + (f" ({w.note})" if w.note else ""), _ms(eager) if eager else "-"]
        for mode in others:
            r = w.modes.get(mode)
            if r is None:
                cells.append("-")
            elif r.status in ("error", "skipped"):
                cells.append(r.status)
            else:
                cells.append(_speedup(r) + (" (wrong)" if r.status == "wrong" else ""))
        cx = w.modes.get(TORCHCX)
        cells += [_bound(w), _fraction(cx) if cx else "-"]
        lines.append(_md_row(cells))
    lines += [
        "",
        _md_row(
            ["workload", "mode", "ms", "vs eager", "max rel err", "compile s", "compile cache", "% of bound", "status"]
        ),
        _md_row(["---", "---", "---:", "---:", "---:", "---:", "---", "---:", "---"]),
    ]
    for w in results.workloads:
        for mode, r in w.modes.items():
            cache = r.inductor_cache or "-"
            cells = [w.name, mode, _ms(r), _speedup(r), _err(r), _compile(r), cache, _fraction(r), _status(r)]
            lines.append(_md_row(cells))
    return "\n".join(lines)


def as_json(results: Results) -> dict[str, Any]:
    data = results.as_dict()
    data["gaps"] = results.gaps()
    return data


def chart(results: Results, path: str) -> str | None:
    """A PNG of each mode's speedup over eager, one group per workload, log scale.

    Returns why no chart was written (matplotlib missing), or None.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install 'torchcx[bench]'): no chart"
    modes = [m for m in _modes(results) if m != EAGER]
    names = [w.name for w in results.workloads]
    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(names) + 2), 4.8))
    speedups = [r.speedup for w in results.workloads for r in w.modes.values() if r.speedup]
    low = min([0.5, *speedups]) / 1.5
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, mode in enumerate(modes):
        color = colors[j % len(colors)]
        xs, heights = [], []
        for i, w in enumerate(results.workloads):
            r = w.modes.get(mode)
            if r is None:
                continue
            x = i + (j - (len(modes) - 1) / 2) * width
            if r.speedup is not None:
                xs.append(x)
                heights.append(r.speedup)
                # timed, but its result is not eager's: say so on the bar
                label = f"{r.speedup:.2g}x" + (" wrong" if r.status == "wrong" else "")
                ax.text(x, r.speedup * 1.03, label, rotation=90, ha="center", va="bottom", fontsize=6)
            else:  # error or skipped: no bar, the status where it would stand
                ax.text(x, low * 1.1, r.status, rotation=90, ha="center", va="bottom", fontsize=7, color=color)
        ax.bar(xs, heights, width, color=color, label=mode)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylim(bottom=low, top=max([2.0, *speedups]) * 2.5)  # room for the labels
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("speedup over eager (log scale)")
    m = results.machine
    load = f", load average {m['load_average_1min']}" if m.get("load_average_1min") is not None else ""
    ax.set_title(f"torchcx.bench: {m['cpu']}, {m['cores']} cores, {_threads(m['torch_threads'])}{load}", fontsize=10)
    ax.legend(fontsize=8, ncols=len(modes))
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def write(results: Results, out_dir: str) -> dict[str, str]:
    """Write results.json, results.md, results.txt and speedups.png to ``out_dir``; the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {
        "json": os.path.join(out_dir, "results.json"),
        "markdown": os.path.join(out_dir, "results.md"),
        "table": os.path.join(out_dir, "results.txt"),
    }
    with open(paths["json"], "w") as f:
        json.dump(_finite(as_json(results)), f, indent=2)
    with open(paths["markdown"], "w") as f:
        f.write(markdown(results) + "\n")
    with open(paths["table"], "w") as f:
        f.write(text_table(results) + "\n")
    png = os.path.join(out_dir, "speedups.png")
    why_not = chart(results, png)
    if why_not is None:
        paths["chart"] = png
    else:
        paths["chart_skipped"] = why_not
    return paths


def _finite(value: Any) -> Any:
    """``value`` with inf and nan floats as strings: strict JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
