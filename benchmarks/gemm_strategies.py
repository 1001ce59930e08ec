"""The complex GEMM strategies of Note [Complex GEMM strategies] against each other and against eager.

    python benchmarks/gemm_strategies.py [--threads 1] [--rounds 7] [--device cpu]
        [--out benchmarks/results/gemm_strategies_cpu.json]
    python benchmarks/gemm_strategies.py --errors [--out-md docs/linalg.md]

Timing: ``torch.matmul`` of (batch, m, k) by (batch, k, n) for shapes small,
large, skinny (tall, matrix-vector, quantum-gate-like with k = 2 and 4) and
batched, with parts of float32, float64, bfloat16 and float16. Modes, timed in
one process in interleaved rounds (the median of each; a sample is enough
calls to last ``--min-sample-ms``):

* ``eager``: torch.matmul on native complex tensors (complex64 for bfloat16
  and float16 parts: eager has no complex type or kernel for them on CPU, so
  this is what a user converts to);
* ``eager <s>``: torch.matmul on planar ComplexTensors with strategy ``s``
  (``torchcx.config.matmul_strategy``);
* ``compiled <s>``: ``torchcx.compile(torch.matmul)`` with strategy ``s``.

float32/float64 operands of the compiled modes are native complex tensors
(interleaved: the boundary of Note [Interleaved layouts]); bfloat16/float16
ones are planar ComplexTensors. "native" (the vendor complex GEMM) exists for
float32/float64 parts only. The rule of Note [GEMM strategy rule]
(``gemm_strategy`` in src/torchcx/ops/linalg.py) is read off these results:
``summary`` in the JSON lists, per mode, part dtype and shape, the fastest
strategy and each strategy's time over eager's.

Errors (``--errors``): the error of each strategy (eager mode; compiled
graphs compute the same products) against the product of the same rounded
inputs in long double, per part: max over re, im of max|C_p - R_p| / max|R_p|,
so a part much smaller than the other is measured against its own scale. For
random inputs, nearly real ones (imaginary parts 1e-3 of the real ones: the
case 3M's cancellation hurts) and rows/columns of mixed magnitudes, next to
eager's error: the table in docs/linalg.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

import torchcx
from torchcx import ComplexTensor, config
from torchcx.ops.linalg import NATIVE_PARTS, STRATEGIES, gemm_strategy

PARTS = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: name -> (batch, m, k, n)
SHAPES: dict[str, tuple[int, int, int, int]] = {
    "small 32": (1, 32, 32, 32),
    "medium 256": (1, 256, 256, 256),
    "large 1024": (1, 1024, 1024, 1024),
    "tall 4096x64x64": (1, 4096, 64, 64),
    "mv 1024": (1, 1024, 1024, 1),
    "gate 2x2 @ 2x2^17": (1, 2, 2, 1 << 17),
    "gate 4x4 @ 4x2^16": (1, 4, 4, 1 << 16),
    "batched 256x16x16": (256, 16, 16, 16),
    "batched 64x64": (64, 64, 64, 64),
    "batched 16x256": (16, 256, 256, 256),
}
QUICK_SHAPES = ["small 32", "medium 256", "gate 2x2 @ 2x2^17", "batched 16x256"]


def matmul(a: Any, b: Any) -> Any:
    return torch.matmul(a, b)


def compiled(strategy: str) -> Callable[..., Any]:
    """``torchcx.compile(matmul)`` whose graphs use ``strategy``.

    Dynamo caches compiled code per code object, and the strategy is chosen
    when a graph is compiled: each strategy gets a copy of ``matmul``'s code.
    """
    code = matmul.__code__.replace(co_name=f"matmul_{strategy}")
    fn = type(matmul)(code, matmul.__globals__, f"matmul_{strategy}")
    with config.patch(matmul_strategy=strategy):  # a compiled function keeps the settings it was compiled with
        compiled_fn = torchcx.compile(fn, dynamic=False)

    def first_call(a: Any, b: Any) -> Any:
        with config.patch(matmul_strategy=strategy):
            return compiled_fn(a, b)

    first_call.compiled = compiled_fn  # type: ignore[attr-defined]
    return first_call


def operands(part: torch.dtype, shape: tuple[int, int, int, int], device: str, scale: float = 1.0) -> dict[str, Any]:
    """The inputs of every mode, made from the same complex128 values rounded to ``part``."""
    batch, m, k, n = shape
    g = torch.Generator().manual_seed(m * 7 + k * 5 + n * 3 + batch)
    a = torch.randn(batch, m, k, dtype=torch.complex128, generator=g)
    b = torch.randn(batch, k, n, dtype=torch.complex128, generator=g)
    if batch == 1:
        a, b = a[0], b[0]
    a, b = a.to(device), b.to(device)
    planar = [ComplexTensor(x.real.to(part).contiguous(), x.imag.to(part).contiguous()) for x in (a, b)]
    eager_dtype = torch.complex128 if part == torch.float64 else torch.complex64
    native = [p.to_interleaved(eager_dtype) for p in planar]  # the rounded values
    return {
        "planar": planar,
        "native": native,
        "compiled": native if part in NATIVE_PARTS else planar,
        "reference": [x.to(torch.complex128) for x in native],
    }


def sync(device: str) -> None:
    if device != "cpu":
        getattr(torch, device).synchronize()


def timed(fn: Callable[[], Any], device: str, min_sample_s: float) -> float:
    """Seconds per call: enough back-to-back calls to last ``min_sample_s``."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        sync(device)
        elapsed = time.perf_counter() - start
        if elapsed >= min_sample_s:
            return elapsed / calls


def as_native(x: Any) -> torch.Tensor:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(torch.complex128 if x.component_dtype == torch.float64 else torch.complex64)
    return x


def rel_error(out: Any, reference: torch.Tensor) -> float:
    out = as_native(out).to(torch.complex128)
    return float((out - reference).abs().max() / reference.abs().max().clamp_min(1e-300))


def run_case(part_name: str, shape_name: str, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    part, shape = PARTS[part_name], SHAPES[shape_name]
    x = operands(part, shape, args.device)
    reference = torch.matmul(*x["reference"])
    modes: dict[str, Callable[[], Any]] = {"eager": lambda: torch.matmul(*x["native"])}
    strategies = [s for s in STRATEGIES if s != "native" or part in NATIVE_PARTS]
    for s in strategies:

        def eager_s(s: str = s) -> Any:
            with config.patch(matmul_strategy=s):
                return torch.matmul(*x["planar"])

        modes[f"eager {s}"] = eager_s
    if not args.no_compiled:
        torch._dynamo.reset()
        for s in strategies:
            fn = compiled(s)
            started = time.perf_counter()
            fn(*x["compiled"])
            modes[f"compiled {s}"] = lambda fn=fn.compiled: fn(*x["compiled"])  # type: ignore[attr-defined]
            log(f"    compiled {s}: {time.perf_counter() - started:.1f} s to compile")
    errors = {}
    for name, fn in modes.items():
        out = fn()
        errors[name] = rel_error(out, reference)
        limit = {torch.float64: 1e-12, torch.float32: 1e-4}.get(part, 0.1)
        if name != "eager" and errors[name] > max(limit, 4 * errors["eager"]):
            raise AssertionError(f"{part_name} {shape_name} {name}: error {errors[name]:.2e}")
        for _ in range(2):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in modes}
    names = list(modes)
    for r in range(args.rounds):
        rotated = names[r % len(names) :] + names[: r % len(names)]
        for name in rotated:
            samples[name].append(timed(modes[name], args.device, args.min_sample_ms / 1e3))
    ms = {name: 1e3 * statistics.median(v) for name, v in samples.items()}
    return {
        "part": part_name,
        "shape": shape_name,
        "bmkn": shape,
        "ms": ms,
        "vs_eager": {name: ms["eager"] / t for name, t in ms.items()},
        "error": errors,
        "rule": rule_of(part_name, shape, args.device),
    }


def rule_of(part_name: str, shape: Sequence[int], device: str) -> dict[str, str]:
    """The strategies ``gemm_strategy`` picks for a case, eager and compiled."""
    batch, m, k, n = shape
    part = PARTS[part_name]
    a = torch.empty(batch, m, k, dtype=part, device=device)
    b = torch.empty(batch, k, n, dtype=part, device=device)
    planar = [ComplexTensor(x[0], x[0]) if batch == 1 else ComplexTensor(x, x) for x in (a, b)]
    # The compiled modes' float32/float64 operands are graph inputs: the extern kernel reads them as they are.
    graph_inputs = [ComplexTensor(x.re, x.im) for x in planar]
    for x in graph_inputs:
        if part in NATIVE_PARTS:
            x._packed = (x.re, torch.complex128 if part == torch.float64 else torch.complex64)
    return {
        "eager": gemm_strategy(*planar, part, compiled=False),
        "compiled": gemm_strategy(*graph_inputs, part, compiled=True),
    }


def summarize(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode (eager, compiled), part dtype and shape: the fastest strategy and the rule's choice."""
    summary: dict[str, Any] = {}
    for case in cases:
        for mode in ("eager", "compiled"):
            times = {name.split(" ", 1)[1]: t for name, t in case["ms"].items() if name.startswith(mode + " ")}
            if not times:
                continue
            best = min(times, key=times.get)  # type: ignore[arg-type]
            chosen = case["rule"][mode]
            summary.setdefault(mode, {}).setdefault(case["part"], {})[case["shape"]] = {
                "fastest": best,
                "rule": chosen,
                "rule_over_fastest": times.get(chosen, float("nan")) / times[best],
                "vs_eager": {s: case["ms"]["eager"] / t for s, t in times.items()},
            }
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    for mode, by_part in summary.items():
        print(f"\n{mode}: speed over eager complex matmul (higher is faster); * fastest, [rule's choice]")
        strategies = list(STRATEGIES)
        print(f"  {'part':9} {'shape':22} " + " ".join(f"{s:>8}" for s in strategies))
        for part, by_shape in by_part.items():
            for shape, entry in by_shape.items():
                cells = []
                for s in strategies:
                    v = entry["vs_eager"].get(s)
                    text = "-" if v is None else f"{v:.2f}" + ("*" if s == entry["fastest"] else "")
                    cells.append(f"[{text}]" if s == entry["rule"] else text)
                print(f"  {part:9} {shape:22} " + " ".join(f"{c:>8}" for c in cells))


# -- errors ----------------------------------------------------------------------------------


def error_inputs(kind: str, part: torch.dtype, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Complex128 operands (already rounded to ``part``) of one error experiment."""
    a = torch.randn(n, n, dtype=torch.complex128, generator=g)
    b = torch.randn(n, n, dtype=torch.complex128, generator=g)
    if kind == "nearly real":
        # Im(A) and Im(B) small: Im(C) = ArBi + AiBr is about 1e-3 of ArBr, which
        # 3M subtracts from (Ar + Ai)(Br + Bi) to get it (its cancellation).
        small = 1e-3 if part in (torch.float32, torch.float64) else 2**-5
        a = torch.complex(a.real, small * a.imag)
        b = torch.complex(b.real, small * b.imag)
    elif kind == "mixed magnitudes":
        # rows of A and columns of B spanning 10^-span .. 10^span: sums mix magnitudes
        span = {torch.float16: 1.0, torch.bfloat16: 2.0}.get(part, 4.0)
        rows = 10 ** torch.empty(n, 1, dtype=torch.float64).uniform_(-span, span, generator=g)
        cols = 10 ** torch.empty(1, n, dtype=torch.float64).uniform_(-span, span, generator=g)
        a, b = a * rows, b * cols
    rounded = [torch.complex(x.real.to(part).double(), x.imag.to(part).double()) for x in (a, b)]
    return rounded[0], rounded[1]


def exact_product(a: torch.Tensor, b: torch.Tensor) -> tuple[Any, Any]:
    """(re, im) of ``a @ b`` in NumPy's long double (64-bit significand on x86), the float64 parts' reference."""
    import numpy as np

    ar, ai, br, bi = (t.numpy().astype(np.longdouble) for t in (a.real, a.imag, b.real, b.imag))
    return ar @ br - ai @ bi, ar @ bi + ai @ br


def partwise_error(out: torch.Tensor, reference: tuple[Any, Any]) -> float:
    """max over re and im of max|C_p - R_p| / max|R_p|: each part against its own scale."""
    import numpy as np

    errors = []
    for got, ref in zip((out.real, out.imag), reference):
        diff = np.abs(got.double().numpy().astype(np.longdouble) - ref)
        errors.append(float(diff.max() / max(np.abs(ref).max(), 1e-300)))
    return max(errors)


ERROR_KINDS = ["random", "nearly real", "mixed magnitudes"]


def error_table(sizes: list[int], kinds: list[str]) -> tuple[list[dict[str, Any]], str]:
    """(rows, markdown) of the error of each strategy (eager mode) and of eager, per part dtype and input kind."""
    rows = []
    for part_name, part in PARTS.items():
        for kind in kinds:
            for n in sizes:
                g = torch.Generator().manual_seed(n)
                a, b = error_inputs(kind, part, n, g)
                reference = exact_product(a, b)
                eager_dtype = torch.complex128 if part == torch.float64 else torch.complex64
                results = {"eager": a.to(eager_dtype) @ b.to(eager_dtype)}
                if part not in NATIVE_PARTS:
                    # eager has no complex kernel for these parts: complex64, rounded to the parts
                    eager = results["eager"]
                    results["eager"] = torch.complex(eager.real.to(part).float(), eager.imag.to(part).float())
                pa, pb = (ComplexTensor(x.real.to(part), x.imag.to(part)) for x in (a, b))
                for s in STRATEGIES:
                    if s == "native" and part not in NATIVE_PARTS:
                        continue
                    with config.patch(matmul_strategy=s):
                        results[s] = as_native(pa @ pb)
                row: dict[str, Any] = {"part": part_name, "kind": kind, "n": n}
                for name, out in results.items():
                    row[name] = partwise_error(out, reference)
                rows.append(row)
    names = ["eager", *STRATEGIES]
    lines = [
        "| part | inputs | n | " + " | ".join(names) + " | 3m / eager |",
        "| --- | --- | --- | " + " | ".join("---:" for _ in names) + " | ---: |",
    ]
    for row in rows:
        cells = [f"{row[s]:.1e}" if s in row else "-" for s in names]
        ratio = row["3m"] / max(row["eager"], 1e-300)
        lines.append(f"| {row['part']} | {row['kind']} | {row['n']} | " + " | ".join(cells) + f" | {ratio:.1f} |")
    return rows, "\n".join(lines)


# -- main ------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "processor": platform.processor() or platform.machine(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-sample-ms", type=float, default=20.0)
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--quick", action="store_true", help=f"shapes {QUICK_SHAPES} only")
    parser.add_argument("--no-compiled", action="store_true", help="eager modes only")
    parser.add_argument("--errors", action="store_true", help="the error table instead of timings")
    parser.add_argument("--out", default=None, help="JSON results (default benchmarks/results/gemm_*_<device>.json)")
    parser.add_argument("--out-md", default=None, help="with --errors: also write the markdown table here")
    parser.add_argument(
        "--summarize", metavar="JSON", help="the summary of earlier results with today's rule (rewritten to --out)"
    )
    args = parser.parse_args()
    if args.summarize:
        with open(args.summarize) as f:
            results = json.load(f)
        for case in results["cases"]:
            case["rule"] = rule_of(case["part"], case["bmkn"], args.device)
        results["summary"] = summarize(results["cases"])
        print_summary(results["summary"])
        if args.out:  # the same measurements with today's rule
            with open(args.out, "w") as f:
                json.dump(results, f, indent=1)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    info = machine()
    print(f"torch {info['torch']}, {info['threads']} threads, device {args.device}, load {info['load_average']}")
    if args.errors:
        rows, table = error_table([64, 512], ERROR_KINDS)
        print(table)
        out = args.out or "benchmarks/results/gemm_errors.json"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump({"machine": info, "rows": rows}, f, indent=1)
        if args.out_md:
            with open(args.out_md, "w") as f:
                f.write(table + "\n")
        return
    shapes = QUICK_SHAPES if args.quick else args.shapes
    cases = []
    started = time.perf_counter()
    for part in args.parts:
        for shape in shapes:
            print(f"  {part} {shape} ...", flush=True)
            case = run_case(part, shape, args, log=lambda line: print(line, flush=True))
            cases.append(case)
            print(
                "    "
                + ", ".join(f"{name} {t:.3f} ms" for name, t in case["ms"].items())
                + f"  (rule: {case['rule']})",
                flush=True,
            )
    summary = summarize(cases)
    print_summary(summary)
    info["load_average_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    out = args.out or f"benchmarks/results/gemm_strategies_{args.device}.json"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"machine": info, "cases": cases, "summary": summary}, f, indent=1)
    print(f"\n{out} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
