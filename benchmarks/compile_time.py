"""Compile time of torchcx.compile against default torch.compile, caches off.

    python benchmarks/compile_time.py
    python benchmarks/compile_time.py --ops [--baseline] [--repeat N]

For each program, the first call of a freshly compiled function (Dynamo,
AOTAutograd, lowering, Inductor codegen and the C++ compiler) minus one
steady-state call, median of three fresh compilations, with Inductor's caches
disabled for both backends. Results also go to bench-results/compile_time.json.

``--ops`` times single ops instead: ``torch.acos`` and ``torch.exp`` on a 5x5
complex64 tensor, and the first OpInfo sample (complex64) of the ops whose
decompositions are long ``torch.where`` blends, forward and forward+backward.
``--baseline`` adds a column with torchcx's shared subexpressions switched
off (Note [Shared subexpressions] in torchcx/_inductor_patches.py), the
compile time before them. A one-off compilation first pays the process's
one-time costs (the C++ toolchain probes), so that no row carries them.
Results go to benchmarks/results/compile_time_ops.json.

``--all-ops`` times every OpInfo op that supports complex64 on CPU (394 in
torch 2.13), its first complex64 sample, forward+backward where the op has
gradients and forward otherwise, both backends, one compilation each (about
40 minutes on 2 cores). A row that raises or runs past ``--timeout`` seconds
is recorded as such. Results go to
benchmarks/results/compile_time_all_ops.json, the slowest rows are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

import torchcx
from torchcx import _inductor_patches
from torchcx.bench.limits import describe_machine


def chain(x, y):
    return x * y + torch.exp(1j * x.abs())


def rope(xq, xk, freqs_cis):
    # LLaMA's apply_rotary_emb
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class ComplexMLP(torch.nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width, dtype=torch.complex64) for _ in range(3))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            z = layer(z)
            z = torch.polar(torch.relu(z.abs() - 0.1), z.angle())  # modReLU
        return z


def mlp_step(model, z, target):
    loss = (model(z) - target).abs().pow(2).mean()
    loss.backward()
    return loss


def programs():
    g = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(1 << 16, dtype=torch.complex64, generator=g),
        torch.randn(1 << 16, dtype=torch.complex64, generator=g),
    )
    xq, xk = torch.randn(2, 64, 4, 32, generator=g), torch.randn(2, 64, 4, 32, generator=g)
    freqs = torch.polar(torch.ones(64, 16), torch.randn(64, 16, generator=g))
    model = ComplexMLP()
    z, target = (
        torch.randn(32, 64, dtype=torch.complex64, generator=g),
        torch.randn(32, 64, dtype=torch.complex64, generator=g),
    )
    return {
        "elementwise chain": (chain, (x, y)),
        "rotary embedding": (rope, (xq, xk, freqs)),
        "complex MLP fwd+bwd": (lambda m, a, b: mlp_step(m, a, b), (model, z, target)),
    }


def _differentiable(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())


@contextlib.contextmanager
def full_collections() -> Iterator[list[float]]:
    """Seconds Python's cyclic garbage collector spends in full (generation 2) collections
    meanwhile, in the one-element list yielded. In a process holding 300-600 thousand objects
    (torch, Inductor, OpInfo's database) one takes 0.3-0.4 s, and one lands in about half of
    the single-op compiles (2026-12-07): where it lands shifts with every change in how much
    a compile allocates, so two versions are compared net of them too."""
    spent = [0.0]
    started: list[float] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            spent[0] += time.perf_counter() - started.pop()

    gc.callbacks.append(callback)
    try:
        yield spent
    finally:
        gc.callbacks.remove(callback)


def compile_seconds(compiler, fn, args, repeat: int = 3, backward: bool = False) -> float:
    """First call minus a steady call, median of ``repeat`` fresh compilations.

    With ``backward``, a call is the forward and a backward from fixed
    gradients of every differentiable output (AOTAutograd compiles the
    backward graph on the first backward).
    """

    def call(compiled):
        if not backward:
            return compiled(*args)
        inputs = tree_map(lambda a: a.detach().requires_grad_() if _differentiable(a) else a, args)
        out = compiled(*inputs)
        outs = [t for t in tree_leaves(out) if _differentiable(t) and t.requires_grad]
        torch.autograd.backward(outs, [torch.ones_like(t) for t in outs])
        return out

    samples = []
    for _ in range(repeat):
        torch._dynamo.reset()
        compiled = compiler(fn)
        start = time.perf_counter()
        call(compiled)
        first = time.perf_counter() - start
        start = time.perf_counter()
        call(compiled)
        steady = time.perf_counter() - start
        samples.append(first - steady)
    return statistics.median(samples)


#: Ops whose decompositions blend many special-value branches with torch.where
#: (issue #14): their real graphs reuse each intermediate many times.
OPINFO_OPS = "acosh acos atanh asin atan asinh ldexp logaddexp float_power pow sigmoid log1p".split()


def first_sample_program(op: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """(function, arguments) of an OpInfo op's first complex64 sample."""
    sample = next(iter(op.sample_inputs("cpu", torch.complex64, requires_grad=False)))

    def fn(*a, _op=op, _kwargs=sample.kwargs):
        return _op.op(*a, **_kwargs)

    return fn, (sample.input, *sample.args)


def op_programs() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...], bool]]:
    """name -> (function, arguments, with backward)."""
    from torch.testing._internal.common_methods_invocations import op_db

    x = torch.randn(5, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    out: dict[str, tuple[Callable[..., Any], tuple[Any, ...], bool]] = {
        "acos 5x5": (torch.acos, (x,), False),
        "exp 5x5": (torch.exp, (x,), False),
    }
    for backward in (False, True):
        for name in OPINFO_OPS:
            op = next(o for o in op_db if o.name == name and o.variant_test_name == "")
            fn, args = first_sample_program(op)
            out[f"{name} {'fwd+bwd' if backward else 'fwd'}"] = (fn, args, backward)
    # Programs on ComplexTensors reach Inductor as real graphs of their parts (Note [Real
    # graphs get the adjustments too] in torchcx/backend.py).
    for name in ("asin", "sigmoid"):
        for parts in (torch.float32, torch.bfloat16):
            z = torchcx.as_complex_tensor(
                torch.randn(4, 8, dtype=torch.complex64, generator=torch.Generator().manual_seed(0)), parts
            )
            out[f"{name} {str(parts)[6:]} parts fwd"] = (getattr(torch, name), (z,), False)
    return out


@contextlib.contextmanager
def unshared_subexpressions() -> Iterator[None]:
    """torchcx as it compiled before Note [Shared subexpressions] (the baseline column)."""
    saved = _inductor_patches._SHARE_SUBEXPRESSIONS
    _inductor_patches._SHARE_SUBEXPRESSIONS = False
    try:
        yield
    finally:
        _inductor_patches._SHARE_SUBEXPRESSIONS = saved


def pay_one_time_costs() -> None:
    """The process's one-time costs (C++ compiler and ISA probes) paid here, not by a row."""
    torch.compile(lambda a: a.sin() + 1)(torch.randn(8))
    torchcx.compile(lambda a: a * 2)(torch.randn(8, dtype=torch.complex64))


def save_results(filename: str, meta: dict[str, Any], results: dict[str, Any]) -> None:
    """Into benchmarks/results/, with the torch version, threads and load (a shared machine
    inflates every row), and the machine and torchcx commit (rows from two runs compare
    only on the same machine)."""
    meta = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg()[0],
        "machine": describe_machine(torch.device("cpu")),
        **meta,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", filename)
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=2)


def main_ops(baseline: bool, repeat: int, only: str | None = None) -> None:
    results = {}
    head = f"{'program':<20} {'torch.compile':>14}"
    if baseline:
        head += f" {'torchcx before':>15}"
    print(head + f" {'torchcx':>9} {'ratio':>6}")
    for name, (fn, args, backward) in op_programs().items():
        if only is not None and only not in name:
            continue
        row = {"torch.compile_s": compile_seconds(torch.compile, fn, args, repeat, backward)}
        line = f"{name:<20} {row['torch.compile_s']:13.2f}s"
        if baseline:
            with unshared_subexpressions():
                row["torchcx_before_s"] = compile_seconds(torchcx.compile, fn, args, repeat, backward)
            line += f" {row['torchcx_before_s']:14.2f}s"
        row["torchcx_s"] = compile_seconds(torchcx.compile, fn, args, repeat, backward)
        row["ratio"] = row["torchcx_s"] / row["torch.compile_s"]
        results[name] = row
        print(line + f" {row['torchcx_s']:8.2f}s {row['ratio']:6.2f}", flush=True)
    if only is None:  # (a partial run does not replace the results file)
        save_results("compile_time_ops.json", {"repeat": repeat}, results)


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def expire(signum, frame):
        raise _Timeout(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160] if text else ''}"


def main_all_ops(timeout: int, only: str | None = None) -> None:
    """Every complex64 OpInfo op's first sample, with gradients where it has them (issue #14)."""
    import warnings

    from torch.testing._internal.common_methods_invocations import op_db

    warnings.filterwarnings("ignore")
    ops = [op for op in op_db if torch.complex64 in op.supported_dtypes("cpu")]
    results: dict[str, dict[str, Any]] = {}
    print(f"{'op':<36} {'pass':<8} {'torch.compile':>14} {'torchcx':>9} {'ratio':>6}")
    for op in ops:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if only is not None and only not in name:
            continue
        backward = op.supports_autograd
        row: dict[str, Any] = {"pass": "fwd+bwd" if backward else "fwd"}
        try:
            fn, args = first_sample_program(op)
        except Exception as e:  # noqa: BLE001 (an op without complex64 samples is recorded, not fatal)
            row["error"] = "samples: " + _first_line(e)
            results[name] = row
            continue
        for mode, compiler in (("torch.compile", torch.compile), ("torchcx", torchcx.compile)):
            try:
                with _time_limit(timeout), full_collections() as collected:
                    row[f"{mode}_s"] = compile_seconds(compiler, fn, args, 1, backward)
                row[f"{mode}_full_collections_s"] = collected[0]  # (included in the time above)
            except Exception as e:  # noqa: BLE001 (a failing row is data: it says which op and why)
                row[f"{mode}_error"] = _first_line(e)
            finally:
                torch._dynamo.reset()
        if "torch.compile_s" in row and "torchcx_s" in row:
            row["ratio"] = row["torchcx_s"] / row["torch.compile_s"]
        results[name] = row
        cells = [f"{row[k]:.2f}s" if k in row else "error" for k in ("torch.compile_s", "torchcx_s")]
        print(
            f"{name:<36} {row['pass']:<8} {cells[0]:>14} {cells[1]:>9} {row.get('ratio', float('nan')):6.2f}",
            flush=True,
        )
    timed = {k: r for k, r in results.items() if "torchcx_s" in r}
    over = {k: r for k, r in timed.items() if r["torchcx_s"] > 5}
    # issue 14: within 3x of the default backend, or under 2 s
    slow = {k: r for k, r in timed.items() if r["torchcx_s"] > 2 and r.get("ratio", math.inf) > 3}
    net = {
        k
        for k, r in slow.items()
        if r["torchcx_s"] - r.get("torchcx_full_collections_s", 0.0) > 2
        and (r["torchcx_s"] - r.get("torchcx_full_collections_s", 0.0))
        > 3 * (r.get("torch.compile_s", 0.0) - r.get("torch.compile_full_collections_s", 0.0))
    }
    print(
        f"\n{len(timed)} of {len(results)} ops compiled by torchcx; over 5 s: {len(over)}; over 2 s and 3x: {len(slow)}"
        f" ({len(net)} net of full garbage collections)"
    )
    for k, r in sorted(timed.items(), key=lambda kv: -kv[1]["torchcx_s"])[:15]:
        print(
            f"  {k:<36} {r['pass']:<8} {r['torchcx_s']:6.2f}s (torch.compile {r.get('torch.compile_s', math.nan):.2f}s)"
        )
    for k, r in results.items():
        if "torchcx_s" not in r:
            print(f"  not timed: {k}: {r.get('torchcx_error') or r.get('error')}")
    if only is None:
        meta = {"timeout_s": timeout, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        save_results("compile_time_all_ops.json", meta, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", action="store_true", help="time single ops (issue #14) instead of programs")
    parser.add_argument("--all-ops", action="store_true", help="time every complex64 OpInfo op (issue #14)")
    parser.add_argument(
        "--timeout", type=int, default=120, help="with --all-ops: seconds per row before it counts as failed"
    )
    parser.add_argument("--baseline", action="store_true", help="with --ops: also time without shared subexpressions")
    parser.add_argument("--repeat", type=int, default=None, help="fresh compilations per row (default 3, --ops 1)")
    parser.add_argument(
        "--only", default=None, help="with --ops or --all-ops: only the rows whose name contains this (not saved)"
    )
    options = parser.parse_args()
    torch._inductor.config.force_disable_caches = True
    pay_one_time_costs()  # (else the first row carries them: the chain's default compile read 17 s)
    if options.all_ops:
        main_all_ops(options.timeout, options.only)
        return
    if options.ops:
        main_ops(options.baseline, options.repeat or 1, options.only)
        return
    results = {}
    print(f"{'program':<22} {'torch.compile':>14} {'torchcx':>9} {'ratio':>6}")
    for name, (fn, args) in programs().items():
        default = compile_seconds(torch.compile, fn, args, options.repeat or 3)
        ours = compile_seconds(torchcx.compile, fn, args, options.repeat or 3)
        results[name] = {"torch.compile_s": default, "torchcx_s": ours, "ratio": ours / default}
        print(f"{name:<22} {default:13.2f}s {ours:8.2f}s {ours / default:6.2f}")
    os.makedirs("bench-results", exist_ok=True)
    with open("bench-results/compile_time.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
