"""Runs the workloads in every mode in one process and collects the results.

Note [Benchmark methodology]
----------------------------
For each workload (``torch._dynamo.reset()`` between workloads):

1. **Reference.** Eager runs first; its first call's observed values (the
   outputs, or what a training step changes: its loss, gradients or updated
   parameters) are the reference.
2. **Start and check.** Each other mode gets its own fresh arguments and makes
   its first call from the same state; that call compiles (Dynamo, AOTAutograd,
   Inductor or XLA) and its observed values are compared with eager's: the
   error of one value is ``max|got - eager| / max|eager|`` (relative to the
   value's scale, so entries near zero do not blow it up), a mode's error the
   largest over its values. Above the workload's tolerance the mode is
   "wrong" (and still timed); an exception anywhere makes it "error" with the
   message's first line, and the run goes on without it.
3. **Warm-up.** A few more calls per mode. Calls after the first may still
   compile (an optimizer step recompiles once its state exists), so a mode's
   compile time is the sum over its first call and warm-up calls of each
   call's excess over the steady-state time. Caches are as they are; the
   results say whether the compile caches (AOTAutograd's, Inductor's FX graph
   cache) hit or missed.
4. **Interleaved timing.** Rounds of one timed sample per mode, the order
   rotated each round and reversed every other round, so that no mode always
   runs after the same one (a rotation alone keeps each mode's predecessor:
   a compiled call right after an eager one can take 1.8x its time after
   itself, caches and branch predictors being the other program's); a
   sample is enough back-to-back calls to last ``min_sample_s`` (each call
   waits for its results), divided by their number. A mode's time is the
   median of its samples: neighbours' load on a shared machine shifts all
   modes alike and the median drops the outliers.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import torch
from torch import Tensor

from . import limits as limits_module
from . import modes
from .modes import COMPILED, DEFAULT_MODES, EAGER, MODES, Instance, Skipped
from .workloads import SCALES, WORKLOADS, Problem, Workload

Log = Callable[[str], None]


@dataclass
class Options:
    """What to run: workload and mode names, the scale of ``SCALES``, and how to time."""

    workloads: Sequence[str] = tuple(WORKLOADS)
    modes: Sequence[str] = DEFAULT_MODES
    scale: str = "full"
    device: str = "cpu"
    threads: int | None = None
    rounds: int = 21  # timed samples per mode
    warmup: int = 3  # calls after the first, before timing
    min_sample_s: float = 0.05  # a sample repeats calls until it lasts this long
    measure_limits: bool = True  # copy bandwidth and GEMM rate, for the roofline

    def check(self) -> None:
        unknown = [w for w in self.workloads if w not in WORKLOADS]
        if unknown:
            raise ValueError(f"unknown workloads {unknown}; the workloads are {', '.join(WORKLOADS)}")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise ValueError(f"unknown modes {unknown}; the modes are {', '.join(MODES)}")
        if self.scale not in SCALES:
            raise ValueError(f"unknown scale {self.scale!r}; the scales are {', '.join(SCALES)}")


@dataclass
class ModeResult:
    """One mode on one workload."""

    status: str  # "ok", "wrong", "error" or "skipped"
    message: str = ""  # the error's first line, or why the mode was skipped
    ms: float | None = None
    samples_ms: list[float] = field(default_factory=list)
    speedup: float | None = None  # eager's time over this mode's
    max_rel_err: float | None = None
    compile_s: float | None = None
    inductor_cache: str | None = None  # the compile caches: "warm", "cold", "h hit, m miss" or "bypassed"
    graph_breaks: int | None = None
    fraction_of_bound: float | None = None
    warnings: list[str] = field(default_factory=list)
    # not in the JSON: what the timing and compile time need
    first_calls_s: list[float] = field(default_factory=list, repr=False)


@dataclass
class WorkloadResult:
    name: str
    title: str
    size: str
    note: str
    bytes: float
    flops: float
    tolerance: float
    bound_ms: float | None
    bound: str | None  # "memory" or "GEMM"
    modes: dict[str, ModeResult]


@dataclass
class Results:
    machine: dict[str, Any]
    limits: dict[str, Any] | None
    options: dict[str, Any]
    workloads: list[WorkloadResult]
    wall_s: float

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for w in data["workloads"]:
            for m in w["modes"].values():
                del m["first_calls_s"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """The results ``as_dict`` (or a results.json) holds, to render them again."""

        def number(x: Any) -> Any:  # results.json writes inf and nan as strings
            return float(x) if isinstance(x, str) and x in ("inf", "-inf", "nan") else x

        workloads = []
        for w in data["workloads"]:
            fields = {k: v for k, v in w.items() if k != "modes"}
            mode_results = {
                name: ModeResult(**{k: number(v) for k, v in m.items() if k in ModeResult.__dataclass_fields__})
                for name, m in w["modes"].items()
            }
            workloads.append(WorkloadResult(**fields, modes=mode_results))
        return cls(data["machine"], data["limits"], data["options"], workloads, data["wall_s"])

    def gaps(self) -> list[str]:
        """Where torchcx is slower than eager or JAX, or not ok, in words."""
        out = []
        for w in self.workloads:
            cx = w.modes.get(modes.TORCHCX)
            if cx is None:
                continue
            if cx.status != "ok":
                out.append(f"{w.name}: torchcx {cx.status}" + (f" ({cx.message})" if cx.message else ""))
                continue
            for other in (EAGER, modes.JAX):
                ref = w.modes.get(other)
                if ref is not None and ref.ms is not None and cx.ms is not None and cx.ms > ref.ms:
                    out.append(f"{w.name}: torchcx {cx.ms:.2f} ms, {other} {ref.ms:.2f} ms ({ref.ms / cx.ms:.2f}x)")
        return out


def first_line(text: str) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= 300 else line[:297] + "..."


def describe_error(error: BaseException) -> str:
    """The error's type and first line; for a backend's failure wrapped by Dynamo, the backend's error."""
    inner = getattr(error, "inner_exception", None)  # BackendCompilerFailed's first line names only the backend
    root = inner if isinstance(inner, BaseException) else error
    return f"{type(root).__name__}: {first_line(str(root))}"


def relative_error(got: Sequence[Tensor], expected: Sequence[Tensor]) -> float:
    """The largest over the values of ``max|got - expected| / max|expected|`` (inf on a shape mismatch)."""
    if len(got) != len(expected):
        return math.inf
    worst = 0.0
    for a, b in zip(got, expected):
        if a.shape != b.shape:
            return math.inf
        if a.numel() == 0:
            continue
        if not bool(torch.isfinite(a).all()) and not bool(torch.equal(torch.isnan(a), torch.isnan(b))):
            return math.inf
        scale = float(b.abs().nan_to_num(0.0).max())
        diff = float((a - b).abs().nan_to_num(0.0).max())
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst


def _cache_state(inductor: dict[str, int], aot_autograd: dict[str, int]) -> str | None:
    """What the compile caches did for a mode's first calls: AOTAutograd's (whose bundled
    entries, torchcx's, leave Inductor's FX graph cache unused) and Inductor's."""
    hits = inductor.get("fxgraph_cache_hit", 0) + aot_autograd.get("autograd_cache_hit", 0)
    misses = inductor.get("fxgraph_cache_miss", 0) + aot_autograd.get("autograd_cache_miss", 0)
    bypasses = inductor.get("fxgraph_cache_bypass", 0) + aot_autograd.get("autograd_cache_bypass", 0)
    if hits + misses + bypasses == 0:
        return None
    if bypasses and not hits and not misses:
        return "bypassed"
    if hits and not misses:
        return "warm"
    if misses and not hits:
        return "cold"
    return f"{hits} hit, {misses} miss"


def _start(
    mode: str, problem: Problem, device: torch.device, reference: list[Tensor] | None, warmup: int
) -> tuple[ModeResult, Instance | None, list[Tensor] | None]:
    """Make a mode's instance, its first call (checked against ``reference``) and its warm-up calls."""
    from torch._dynamo.utils import counters

    counters.clear()
    result = ModeResult(status="ok")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            instance = modes.start(mode, problem, device)
            start = time.perf_counter()
            out = instance()
            result.first_calls_s.append(time.perf_counter() - start)
            # clone: a stateful program updates the observed parameters in place later
            observed = [t.clone() for t in instance.observe(out)]
            for _ in range(warmup):
                start = time.perf_counter()
                instance()
                result.first_calls_s.append(time.perf_counter() - start)
        except Skipped as e:
            return ModeResult(status="skipped", message=str(e)), None, None
        except Exception as e:  # a failing mode is a result, not the end of the run
            return ModeResult(status="error", message=describe_error(e)), None, None
    result.warnings = sorted({first_line(str(w.message)) for w in caught})
    if mode in COMPILED and mode != modes.JAX:
        result.inductor_cache = _cache_state(counters["inductor"], counters["aot_autograd"])
        result.graph_breaks = sum(counters["graph_break"].values())
    if reference is not None:
        result.max_rel_err = relative_error(observed, reference)
        if not result.max_rel_err <= problem.tolerance:
            result.status = "wrong"
            result.message = f"max rel err {result.max_rel_err:.3g} > tolerance {problem.tolerance:.3g}"
    return result, instance, observed


T = TypeVar("T")


def round_order(modes: Sequence[T], r: int) -> list[T]:
    """The order of round ``r`` (Note [Benchmark methodology], step 4): rotated by ``r`` and
    reversed in odd rounds, so that each mode's predecessor changes from round to round."""
    shift = r % len(modes) if modes else 0
    rotated = [*modes[shift:], *modes[:shift]]
    return rotated[::-1] if r % 2 else rotated


def _time_interleaved(instances: dict[str, Instance], results: dict[str, ModeResult], options: Options) -> None:
    """Fill ``samples_ms`` and ``ms`` of each mode (Note [Benchmark methodology], step 4)."""
    inner = {}
    for mode in instances:
        per_call = min(results[mode].first_calls_s[-1], statistics.median(results[mode].first_calls_s[1:] or [1.0]))
        inner[mode] = max(1, min(1000, math.ceil(options.min_sample_s / max(per_call, 1e-6))))
    order = list(instances)
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(options.rounds):
            for mode in round_order(order, r):
                if results[mode].status == "error":
                    continue
                try:
                    start = time.perf_counter()
                    for _ in range(inner[mode]):
                        instances[mode]()
                    results[mode].samples_ms.append((time.perf_counter() - start) / inner[mode] * 1e3)
                except Exception as e:
                    results[mode].status, results[mode].message = "error", describe_error(e)
    for mode, result in results.items():
        if result.status != "error" and result.samples_ms:
            result.ms = statistics.median(result.samples_ms)
            if mode in COMPILED:  # Note [Benchmark methodology], step 3
                result.compile_s = sum(max(0.0, t - result.ms / 1e3) for t in result.first_calls_s)
        else:
            result.samples_ms = []


def run_workload(
    workload: Workload, options: Options, device: torch.device, machine_limits: limits_module.Limits | None, log: Log
) -> WorkloadResult:
    torch._dynamo.reset()
    try:
        problem = workload.build(options.scale, device)
    except Exception as e:  # e.g. a device without bfloat16: this workload only is lost
        log(f"  building the workload failed: {describe_error(e)}")
        failed = ModeResult(status="error", message=describe_error(e))
        return WorkloadResult(workload.name, workload.title, "", "", 0.0, 0.0, 0.0, None, None, {EAGER: failed})
    bound_ms, bound = machine_limits.bound_ms(problem.bytes, problem.flops) if machine_limits else (None, None)
    results: dict[str, ModeResult] = {}
    instances: dict[str, Instance] = {}
    reference: list[Tensor] | None = None
    # eager first: it is the reference of every other mode
    for mode in [EAGER, *(m for m in options.modes if m != EAGER)]:
        log(f"  {mode:<16} starting")
        result, instance, observed = _start(mode, problem, device, reference, options.warmup)
        if mode == EAGER:
            if instance is None:  # the program itself fails: nothing to compare with
                log(f"  eager failed: {result.message}")
                return _workload_result(workload, problem, bound_ms, bound, {EAGER: result})
            reference = observed
            result.max_rel_err = 0.0
        results[mode] = result
        if instance is not None:
            instances[mode] = instance
        log(f"  {mode:<16} {_describe_start(result)}")
    log(f"  timing {len(instances)} modes, {options.rounds} rounds")
    _time_interleaved(instances, results, options)
    eager_ms = results[EAGER].ms
    for result in results.values():
        if result.ms is not None and eager_ms is not None:
            result.speedup = eager_ms / result.ms
        if result.ms is not None and bound_ms is not None:
            result.fraction_of_bound = bound_ms / result.ms
    log("  " + " | ".join(_describe_time(m, r) for m, r in results.items()))
    if EAGER not in options.modes:
        del results[EAGER]
    return _workload_result(workload, problem, bound_ms, bound, results)


def _workload_result(
    workload: Workload, problem: Problem, bound_ms: float | None, bound: str | None, results: dict[str, ModeResult]
) -> WorkloadResult:
    return WorkloadResult(
        name=workload.name,
        title=workload.title,
        size=problem.size,
        note=problem.note,
        bytes=problem.bytes,
        flops=problem.flops,
        tolerance=problem.tolerance,
        bound_ms=bound_ms,
        bound=bound,
        modes=results,
    )


def _describe_start(r: ModeResult) -> str:
    if r.status in ("error", "skipped"):
        return f"{r.status}: {r.message}"
    parts = [f"first call {r.first_calls_s[0]:.2f} s"]
    if r.inductor_cache:
        parts.append(f"compile cache {r.inductor_cache}")
    if r.graph_breaks:
        parts.append(f"{r.graph_breaks} graph breaks")
    if r.max_rel_err is not None:
        parts.append(f"max rel err {r.max_rel_err:.2g}")
    return ", ".join(parts) + f": {r.status}"


def _describe_time(mode: str, r: ModeResult) -> str:
    if r.ms is None:
        return f"{mode} {r.status}"
    return f"{mode} {r.ms:.2f} ms" + (f" ({r.speedup:.2f}x)" if r.speedup is not None and mode != EAGER else "")


def set_threads(threads: int | None) -> None:
    """Run torch with ``threads`` threads and confine the process to that many cores.

    XLA's CPU client sizes its thread pool by the machine's cores and has no
    setting for it, so the process (every thread of it, and those it starts
    later) is confined to the first ``threads`` cores it may use: then every
    mode, JAX included, computes on the same cores.
    """
    if threads is None:
        return
    torch.set_num_threads(threads)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        for task in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(task), cpus)


def run(options: Options, log: Log = print) -> Results:
    """Every selected workload in every selected mode (Note [Benchmark methodology])."""
    options.check()
    set_threads(options.threads)
    started = time.perf_counter()
    device = torch.device(options.device)
    machine = limits_module.describe_machine(device)
    log(
        f"torchcx.bench: {len(options.workloads)} workloads x {len(options.modes)} modes, scale {options.scale}, "
        f"{machine['cpu']}, {machine['cores']} cores, {machine['torch_threads']} torch threads, device {device}"
    )
    if modes.JAX in options.modes and machine["jax"] is None:
        log("  JAX is not installed: the jax.jit mode is skipped (pip install 'torchcx[bench]')")
    machine_limits = None
    if options.measure_limits:
        log("measuring the machine's limits")
        machine_limits = limits_module.measure(device, quick=options.scale != "full")
        log(
            f"  copy bandwidth {machine_limits.copy_gb_per_s:.1f} GB/s, "
            f"float32 GEMM {machine_limits.gemm_gflop_per_s:.1f} GFLOP/s"
        )
    workloads = []
    for i, name in enumerate(options.workloads):
        workload = WORKLOADS[name]
        log(f"[{i + 1}/{len(options.workloads)}] {name}: {workload.title}")
        workloads.append(run_workload(workload, options, device, machine_limits, log))
    torch._dynamo.reset()
    machine["load_average_1min_end"] = limits_module.load_average()
    return Results(
        machine=machine,
        limits=machine_limits.as_dict() if machine_limits else None,
        options={k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()},
        workloads=workloads,
        wall_s=time.perf_counter() - started,
    )
