"""Shared by the benchmarks that time torchcx with some of its changes switched off
(``kernel_adjustments.py``, ``phase_exponentials.py``): each mode compiled in one process,
then timed interleaved.

Each mode compiles its own function (a distinct code object) with static shapes, and nothing
calls ``torch._dynamo.reset()`` after the first compile: a reset drops every compiled
function's code, and the next call compiles it again with the switches as they are then.
A distinct outer function is not enough where the program breaks its graph inside a function
it calls (``loss.backward()`` in a training step): Dynamo keeps the compiled code of that inner
frame, and of its resume functions, on their code objects, shared by every mode, so a second
mode ran the first mode's code (FNO's step compiled nothing at all in its second mode, the
MLP step one graph of two). Each mode therefore compiles with ``isolate_recompiles=True``
(its own cache entries for every frame it runs), and ``compiled_with`` checks that the
mode's first call compiled at least one graph. The switches stay set until a call compiles
nothing new: the FNO step recompiles on its second call (``zero_grad`` then finds
gradients, a guard of the first graph), and before that was seen (2026-12-06) such a
recompile ran with the switches restored, so a switch that is read while compiling (a module
attribute, unlike ``torchcx.config``'s settings, which ``torchcx.compile`` binds) was off in
the step's steady code.
Each sample is enough calls for ``SAMPLE_S``: the first call after another mode's pays for the
caches and branch predictors that mode left behind (a compiled 2^12-element chain: 74 us
after an eager call, 42 us after itself). The order of the modes changes every round as in
the suite (``torchcx.bench.runner.round_order``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch

import torchcx
from torchcx.bench.runner import round_order, set_threads

SAMPLE_S = 0.02

#: (object, attribute, value while the mode compiles)
Switch = tuple[Any, str, Any]


def parse_options(parser: argparse.ArgumentParser, sample_s: float = SAMPLE_S) -> argparse.Namespace:
    """``parser``'s options with the ones every such benchmark takes (``--rounds``, ``--threads``,
    ``--sample-s``), applied: samples of ``--sample-s`` seconds, torch on ``--threads`` threads
    and the process on as many cores (so JAX's pool too), Inductor's caches off (cold compiles)."""
    global SAMPLE_S
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sample-s", type=float, default=sample_s, help="seconds of back-to-back calls per sample")
    options = parser.parse_args()
    SAMPLE_S = options.sample_s
    set_threads(options.threads)
    torch._inductor.config.force_disable_caches = True
    return options


def problems(workloads: str, sizes: str, sweep_workloads: str) -> dict[str, Any]:
    """The suite's ``workloads`` at full size, and each of ``sweep_workloads`` at 2^k elements for
    each k in ``sizes`` (comma-separated), as the size sweep builds them; by row name."""
    from torchcx.bench.workloads import SWEEP_WORKLOADS, WORKLOADS

    cpu = torch.device("cpu")
    built = {name: WORKLOADS[name].build("full", cpu) for name in workloads.split(",") if name}
    for k in (int(s) for s in sizes.split(",") if s):
        for name in sweep_workloads.split(","):
            built[f"{name} 2^{k}"] = SWEEP_WORKLOADS[name].build(1 << k, cpu)
    return built


def eager_and_switched(
    problems: dict[str, Any], modes: dict[str, Sequence[Switch]]
) -> dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]]:
    """(problem name, mode) -> (function, args) for each problem: its program eager, and compiled
    once per mode with that mode's switches (``compiled_with``), all on one set of arguments."""
    out: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    for name, problem in problems.items():
        args = problem.make_args()
        out[(name, "eager")] = (problem.program, args)
        for mode, switches in modes.items():
            tag = f"{name}_{mode}".replace("-", "_").replace(" ", "_").replace("^", "")
            out[(name, mode)] = (compiled_with(problem.program, args, tag, switches), args)
    return out


def compiled_with(program: Callable[..., Any], args: tuple[Any, ...], tag: str, switches: Sequence[Switch]) -> Any:
    """``program`` compiled by torchcx now (first call included), with ``switches`` set while it compiles."""
    namespace: dict[str, Any] = {}
    exec(f"def {tag}(*args):\n    return program(*args)\n", {"program": program}, namespace)
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in switches]
    for owner, name, value in switches:
        setattr(owner, name, value)
    counter = torch._dynamo.utils.counters["stats"]
    graphs = counter["unique_graphs"]
    try:
        fn = torchcx.compile(namespace[tag], dynamic=False, isolate_recompiles=True)
        fn(*args)
        if counter["unique_graphs"] == graphs:
            raise RuntimeError(f"mode {tag!r} compiled no graph: it would run another mode's code")
        # Calls until one compiles nothing: a call can change what the next guards on (a
        # training step's zero_grad finds gradients from its second call on), and Dynamo's
        # recompile must see the switches too.
        for _ in range(4):
            before = counter["unique_graphs"]
            fn(*args)
            if counter["unique_graphs"] == before:
                break
        else:
            raise RuntimeError(f"mode {tag!r} still compiles new graphs after 5 calls")
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
    return fn


def _calls_per_sample(fn: Callable[..., Any], args: tuple[Any, ...]) -> int:
    start = time.perf_counter()
    fn(*args)
    return max(1, min(1000, round(SAMPLE_S / max(time.perf_counter() - start, 1e-6))))


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_interleaved(
    modes: dict[Hashable, tuple[Callable[..., Any], tuple[Any, ...]]], rounds: int
) -> tuple[dict[Hashable, list[float]], dict[Hashable, list[float]]]:
    """Seconds per call and minor page faults per call, one sample per mode per round."""
    calls = {key: _calls_per_sample(fn, args) for key, (fn, args) in modes.items()}
    samples: dict[Hashable, list[float]] = {key: [] for key in modes}
    faults: dict[Hashable, list[float]] = {key: [] for key in modes}
    for r in range(rounds):
        for key in round_order(list(modes), r):
            fn, args = modes[key]
            before, start = _faults(), time.perf_counter()
            for _ in range(calls[key]):
                fn(*args)
            samples[key].append((time.perf_counter() - start) / calls[key])
            faults[key].append((_faults() - before) / calls[key])
    return samples, faults


def switched_suite(
    description: str, modes: dict[str, Sequence[Switch]], workloads: str, sizes: str, sweep_workloads: str
) -> tuple[argparse.Namespace, dict[str, Any], dict[Hashable, list[float]], dict[Hashable, list[float]]]:
    """The run such a benchmark makes: its options (``--workloads``, ``--sizes``,
    ``--sweep-workloads`` with these defaults, and ``parse_options``'), the problems, and each
    problem compiled once per mode and timed with eager, interleaved: (options, problems,
    seconds per call, page faults per call) by (problem, mode)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default=workloads)
    parser.add_argument("--sizes", default=sizes, help="exponents: the sweep workloads at 2^k elements too")
    parser.add_argument("--sweep-workloads", default=sweep_workloads)
    options = parse_options(parser)
    built = problems(options.workloads, options.sizes, options.sweep_workloads)
    samples, faults = time_interleaved(eager_and_switched(built, modes), options.rounds)
    return options, built, samples, faults


def median_table(
    built: dict[str, Any], samples: dict[Hashable, list[float]], names: Sequence[str], ratios: dict[str, Any]
) -> list[str]:
    """Markdown rows: per problem, each mode's median (fastest) ms per call, then one column per
    ``ratios`` entry (title -> function of the medians by mode, a ratio printed as ``1.234x``)."""
    lines = [
        "| workload | " + " | ".join(names) + "".join(f" | {title}" for title in ratios) + " |",
        "| --- |" + " ---: |" * (len(names) + len(ratios)),
    ]
    for name in built:
        ms = {m: statistics.median(samples[(name, m)]) * 1e3 for m in names}
        cells = " | ".join(f"{ms[m]:.3g} ({min(samples[(name, m)]) * 1e3:.3g})" for m in names)
        extra = "".join(f" | {ratio(ms):.3f}x" for ratio in ratios.values())
        lines.append(f"| {name} | {cells}{extra} |")
    return lines


def print_switched_suite(
    description: str,
    modes: dict[str, Sequence[Switch]],
    workloads: str,
    sizes: str,
    sweep_workloads: str,
    ratios: dict[str, Any],
) -> None:
    """``switched_suite``'s run, printed as ``median_table``'s rows with these ``ratios``."""
    options, built, samples, _ = switched_suite(description, modes, workloads, sizes, sweep_workloads)
    print(f"{options.threads} thread(s), median (fastest) of {options.rounds} rounds, ms per call")
    print("\n".join(median_table(built, samples, ("eager", *modes), ratios)))
