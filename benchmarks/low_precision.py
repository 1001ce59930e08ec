"""Complex numbers with bfloat16/float16 parts against complex64: speed, peak memory and accuracy.

    python benchmarks/low_precision.py [--threads 1] [--rounds 15] [--out benchmarks/results/low_precision_cpu.json]
    python benchmarks/low_precision.py --accuracy [--out benchmarks/results/low_precision_accuracy.json]

Timing (the default mode): three workloads, each compiled with ``torchcx.compile``
and timed in one process in interleaved rounds (one sample per mode per round,
the order rotated each round; a mode's time is the median of its samples, a
sample is as many calls as last ``--min-sample-ms``):

* ``rope``: LLaMA's ``apply_rotary_emb`` on q and k (B=4, T=512, H=8, D=64,
  bfloat16 activations, ``torch.polar`` frequencies). ``complex64`` is LLaMA's
  code as written (``view_as_complex(xq.float().reshape(..., -1, 2))`` times
  complex64 ``freqs_cis``, ``view_as_real(...).flatten(3).type_as(xq)``);
  ``bfloat16`` is the same code with ``freqs_cis`` a ComplexTensor with
  bfloat16 parts and the activations paired without ``.float()`` (by
  ``torchcx.complex`` of the two halves: Dynamo cannot trace
  ``view_as_complex`` of a bfloat16 tensor, see docs/low-precision.md).
* ``matmul``: ``torch.matmul`` of two 16x256x256 complex batches: complex64
  (native tensors in and out) vs bfloat16 parts (ComplexTensors in and out).
* ``fft``: ``torch.fft.fft`` of 16 signals of 4096 points, complex64 vs
  bfloat16 parts, each on the real-arithmetic path (``fft_path="real"``) and
  on the vendor path (``fft_path="vendor"``: pocketfft/MKL, which has no
  bfloat16 complex kernel, so bfloat16 parts are converted to complex64 and
  back around it).

Every mode's output is checked against complex128 arithmetic before it is
timed (relative L2 error under a bound for its dtype).

Peak memory: each mode's call runs once more under ``torch.profiler``
(``torchcx.bench.memory.peak_memory``: the most tensor memory the call holds
at once, inputs included, from the CPU allocator's records, not RSS).

Accuracy (``--accuracy``): relative L2 error ``||y - y_ref|| / ||y_ref||`` per
component dtype (bfloat16, float16, and the complex64/float32 baseline) for
matmul (n = 64 ... 1024), FFT (64 ... 2^16, both paths), RoPE and 20 steps of
a split-step solver of the nonlinear Schrödinger equation on a sech soliton.
Against two references: ``vs_c128``, complex128 arithmetic on the unrounded
(float64) data, the error a user sees; and ``vs_c64``, the complex64 result on
the same data, i.e. how far the low-precision result is from what complex64
would have given. Matmul and FFT also report ``vs_c128_same_input``: complex128
arithmetic on the inputs as rounded to the dtype, the error of the arithmetic
alone. Computed eagerly (torchcx's ComplexTensor ops: float32 arithmetic
rounded once per op), except the NLS solver, which is also run compiled (a
compiled graph rounds only what it stores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
from torchcx import ComplexTensor
from torchcx.bench.memory import peak_memory

C64, C128 = torch.complex64, torch.complex128
LOWP = {"bfloat16": torch.bfloat16, "float16": torch.float16}
#: unit roundoff of each part dtype, for the tables (2^-(mantissa bits + 1))
UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24}

# -- the workloads --------------------------------------------------------------------------------

ROPE_SHAPE = (4, 512, 8, 64)  # B, T, H, D


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """LLaMA's rotary frequencies, computed in float64 (converted to each mode's dtype after)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64)[: dim // 2] / dim))
    t = torch.arange(end, dtype=torch.float64)
    return torch.polar(torch.ones(end, dim // 2, dtype=torch.float64), torch.outer(t, freqs))


def reshape_for_broadcast(freqs_cis: Any, x: Any) -> Any:
    return freqs_cis.view(1, x.shape[1], 1, x.shape[-1])


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LLaMA's code as written (complex64 arithmetic)."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def as_pairs(x: torch.Tensor) -> ComplexTensor:
    """``x``'s consecutive pairs as complex numbers with ``x``'s dtype as parts (no copy).

    ``view_as_complex`` in user code does this for float32, but Dynamo runs
    it on fake tensors with PyTorch's own check, which refuses bfloat16.
    """
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    return torchcx.complex(pairs[..., 0], pairs[..., 1])


def apply_rotary_emb_lowp(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The same with low-precision complex arithmetic: no ``.float()``, parts of xq's dtype."""
    xq_, xk_ = as_pairs(xq), as_pairs(xk)
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def matmul(a: Any, b: Any) -> Any:
    return torch.matmul(a, b)


def fft(x: Any) -> Any:
    return torch.fft.fft(x)


def compiled(fn: Callable[..., Any], tag: str, **config: Any) -> Callable[..., Any]:
    """``torchcx.compile`` of a copy of ``fn`` whose graphs are compiled under ``config``.

    Dynamo caches compiled code per code object and a compiled function keeps the
    settings torchcx.compile was called with: each mode gets its own copy.
    """
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    with torchcx.config.patch(**config):
        compiled_fn = torchcx.compile(type(fn)(code, fn.__globals__, code.co_name), dynamic=False)

    def call(*args: Any) -> Any:
        with torchcx.config.patch(**config):
            return compiled_fn(*args)

    return call


def c128(x: Any) -> torch.Tensor:
    """Any complex (native or ComplexTensor) or real tensor as a native complex128 / float64 one."""
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(C128)
    return x.to(C128 if x.is_complex() else torch.float64)


def rel_l2(got: Any, ref: torch.Tensor) -> float:
    got = c128(got)
    return ((got - ref).abs().norm() / ref.abs().norm()).item()


def planar(x: torch.Tensor, part: torch.dtype) -> ComplexTensor:
    """``x`` (complex128) as a ComplexTensor with contiguous ``part`` parts."""
    return ComplexTensor(x.real.to(part).contiguous(), x.imag.to(part).contiguous())


#: A mode: (compiled callable, its arguments, the complex128 reference of its output, error bound).
Mode = tuple[Callable[..., Any], tuple[Any, ...], Any, float]


def rope_modes() -> dict[str, Mode]:
    b, t, h, d = ROPE_SHAPE
    g = torch.Generator().manual_seed(0)
    xq = torch.randn(b, t, h, d, generator=g).bfloat16()
    xk = torch.randn(b, t, h, d, generator=g).bfloat16()
    freqs = precompute_freqs_cis(d, t)
    # reference: exact frequencies, the same (bfloat16) activations, complex128 arithmetic
    ref = apply_rotary_emb(xq.double(), xk.double(), freqs.to(C128))
    ref = torch.cat([r.double() for r in ref])
    return {
        "complex64": (compiled(apply_rotary_emb, "c64"), (xq, xk, freqs.to(C64)), ref, 1e-2),
        "bfloat16": (
            compiled(apply_rotary_emb_lowp, "bf16"),
            (xq, xk, planar(freqs, torch.bfloat16)),
            ref,
            2e-2,
        ),
    }


def matmul_modes() -> dict[str, Mode]:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(16, 256, 256, dtype=C128, generator=g)
    b = torch.randn(16, 256, 256, dtype=C128, generator=g)
    ref = a @ b
    return {
        "complex64": (compiled(matmul, "c64"), (a.to(C64), b.to(C64)), ref, 1e-5),
        "bfloat16": (
            compiled(matmul, "bf16"),
            (planar(a, torch.bfloat16), planar(b, torch.bfloat16)),
            ref,
            2e-2,
        ),
    }


def fft_modes() -> dict[str, Mode]:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(16, 4096, dtype=C128, generator=g)
    ref = torch.fft.fft(x)
    modes: dict[str, Mode] = {}
    for path in ("real", "vendor"):
        modes[f"complex64 {path}"] = (compiled(fft, f"c64_{path}", fft_path=path), (x.to(C64),), ref, 1e-5)
        modes[f"bfloat16 {path}"] = (
            compiled(fft, f"bf16_{path}", fft_path=path),
            (planar(x, torch.bfloat16),),
            ref,
            2e-2,
        )
    return modes


WORKLOADS: dict[str, Callable[[], dict[str, Mode]]] = {"rope": rope_modes, "matmul": matmul_modes, "fft": fft_modes}

# -- measuring ------------------------------------------------------------------------------------


def output_error(out: Any, ref: torch.Tensor) -> float:
    if isinstance(out, tuple):  # rope: (xq_out, xk_out), real
        out = torch.cat([o.double() for o in out])
    return rel_l2(out, ref)


def time_modes(modes: dict[str, Mode], rounds: int, min_sample_s: float) -> dict[str, float]:
    """Median seconds per call of each mode, in interleaved rounds (order rotated each round)."""
    names = list(modes)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            fn, args = modes[name][0], modes[name][1]
            calls, start = 0, time.perf_counter()
            while True:
                fn(*args)
                calls += 1
                elapsed = time.perf_counter() - start
                if elapsed >= min_sample_s:
                    break
            samples[name].append(elapsed / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def bench(rounds: int, min_sample_s: float, workloads: list[str], log: Callable[[str], None]) -> list[dict]:
    records = []
    for workload in workloads:
        torch._dynamo.reset()
        modes = WORKLOADS[workload]()
        compile_s = {}
        for name, (fn, args, ref, bound) in modes.items():
            start = time.perf_counter()
            out = fn(*args)  # compiles
            compile_s[name] = time.perf_counter() - start
            err = output_error(out, ref)
            assert err < bound, f"{workload} {name}: relative error {err:.2e} over {bound:.0e}"
            modes[name] = (fn, args, err, bound)
        seconds = time_modes(modes, rounds, min_sample_s)
        for name, (fn, args, err, _) in modes.items():
            memory = peak_memory(fn, args)
            record = {
                "workload": workload,
                "mode": name,
                "ms": round(1e3 * seconds[name], 4),
                "rel_err_vs_c128": err,
                "first_call_s": round(compile_s[name], 2),
                **memory,
            }
            records.append(record)
            log(
                f"{workload:7s} {name:18s} {record['ms']:9.3f} ms  peak {memory['peak_bytes'] / 2**20:7.2f} MiB  "
                f"(inputs {memory['inputs_bytes'] / 2**20:6.2f})  err {err:.1e}"
            )
    return records


def ratios(records: list[dict]) -> list[dict]:
    """bfloat16 over complex64 per workload (and FFT path): time and peak memory."""
    by = {(r["workload"], r["mode"]): r for r in records}
    pairs = [("rope", "bfloat16", "complex64"), ("matmul", "bfloat16", "complex64")]
    pairs += [("fft", f"bfloat16 {p}", f"complex64 {p}") for p in ("real", "vendor")]
    pairs += [("fft", "bfloat16 real", "complex64 vendor")]
    out = []
    for workload, lowp, base in pairs:
        if (workload, lowp) in by and (workload, base) in by:
            a, b = by[(workload, lowp)], by[(workload, base)]
            out.append(
                {
                    "workload": workload,
                    "bf16": lowp,
                    "c64": base,
                    "speedup": round(b["ms"] / a["ms"], 3),
                    "peak_memory_ratio": round(a["peak_bytes"] / b["peak_bytes"], 3),
                }
            )
    return out


# -- accuracy -------------------------------------------------------------------------------------

MATMUL_SIZES = [64, 128, 256, 512, 1024]
FFT_LENGTHS = [64, 256, 1024, 4096, 16384, 65536]
PARTS = {"float32": torch.float32, **LOWP}


def matmul_accuracy() -> list[dict]:
    rows = []
    for n in MATMUL_SIZES:
        g = torch.Generator().manual_seed(n)
        a = torch.randn(n, n, dtype=C128, generator=g)
        b = torch.randn(n, n, dtype=C128, generator=g)
        ref, c64 = a @ b, (a.to(C64) @ b.to(C64)).to(C128)
        for name, part in PARTS.items():
            if part == torch.float32:  # the baseline: native complex64
                ra, rb = a.to(C64), b.to(C64)
                got = ra @ rb
            else:
                ra, rb = planar(a, part), planar(b, part)
                got = torch.matmul(ra, rb)
            rows.append(
                {
                    "op": "matmul",
                    "n": n,
                    "part": name,
                    "vs_c128": rel_l2(got, ref),
                    "vs_c128_same_input": rel_l2(got, c128(ra) @ c128(rb)),
                    "vs_c64": rel_l2(got, c64) if part != torch.float32 else 0.0,
                }
            )
    return rows


def fft_accuracy() -> list[dict]:
    rows = []
    for n in FFT_LENGTHS:
        g = torch.Generator().manual_seed(n)
        x = torch.randn(max(1, 8 * 4096 // n), n, dtype=C128, generator=g)
        ref, c64 = torch.fft.fft(x), torch.fft.fft(x.to(C64)).to(C128)
        for name, part in PARTS.items():
            inp = x.to(C64) if part == torch.float32 else planar(x, part)
            same_input = torch.fft.fft(c128(inp))
            for path in ("real", "vendor"):
                with torchcx.config.patch(fft_path=path):
                    # complex64 goes through torchcx too so that both paths are measured
                    got = torch.fft.fft(planar(x, part))
                rows.append(
                    {
                        "op": "fft",
                        "n": n,
                        "part": name,
                        "path": path,
                        "vs_c128": rel_l2(got, ref),
                        "vs_c128_same_input": rel_l2(got, same_input),
                        "vs_c64": rel_l2(got, c64),
                    }
                )
    return rows


def rope_accuracy() -> list[dict]:
    b, t, h, d = ROPE_SHAPE
    g = torch.Generator().manual_seed(0)
    xq64 = torch.randn(b, t, h, d, dtype=torch.float64, generator=g)
    xk64 = torch.randn(b, t, h, d, dtype=torch.float64, generator=g)
    freqs = precompute_freqs_cis(d, t)
    ref = torch.cat(apply_rotary_emb(xq64, xk64, freqs.to(C128)))
    rows = []
    for act_name, act in (("float32", torch.float32), *LOWP.items()):
        xq, xk = xq64.to(act), xk64.to(act)
        # complex64 frequencies, LLaMA's code (output rounded to the activations' dtype)
        c64 = torch.cat([o.double() for o in apply_rotary_emb(xq, xk, freqs.to(C64))])
        rows.append(
            {"op": "rope", "activations": act_name, "freqs": "complex64", "vs_c128": rel_l2(c64, ref), "vs_c64": 0.0}
        )
        if act in LOWP.values():
            got = torch.cat([o.double() for o in apply_rotary_emb_lowp(xq, xk, planar(freqs, act))])
            rows.append(
                {
                    "op": "rope",
                    "activations": act_name,
                    "freqs": f"{act_name} parts",
                    "vs_c128": rel_l2(got, ref),
                    "vs_c64": rel_l2(got, c64),
                }
            )
    return rows


NLS_POINTS, NLS_STEPS, NLS_DT, NLS_L = 1024, 20, 0.01, 40.0


def nls_step(psi: Any, linear: Any) -> Any:
    """One split step: the linear part in Fourier space, then the nonlinear phase.

    ``exp(1j * phase)`` of a bfloat16 phase would be complex64 (torch promotes
    bfloat16 * 1j to complex64), so the phase factor is built from its parts:
    torchcx.complex(cos, sin) keeps the part dtype (and is the same for
    float32/float64 parts).
    """
    psi = torch.fft.ifft(linear * torch.fft.fft(psi))
    phase = psi.abs() ** 2 * NLS_DT
    return psi * torchcx.complex(torch.cos(phase), torch.sin(phase))


def nls_step_native(psi: torch.Tensor, linear: torch.Tensor) -> torch.Tensor:
    """The textbook form, for native complex64/complex128 tensors."""
    psi = torch.fft.ifft(linear * torch.fft.fft(psi))
    return psi * torch.exp(1j * psi.abs() ** 2 * NLS_DT)


def nls_accuracy() -> list[dict]:
    x = (torch.arange(NLS_POINTS, dtype=torch.float64) - NLS_POINTS // 2) * (NLS_L / NLS_POINTS)
    k = 2 * math.pi * torch.fft.fftfreq(NLS_POINTS, d=NLS_L / NLS_POINTS, dtype=torch.float64)
    psi0 = (1 / torch.cosh(x)).to(C128)
    linear = torch.exp(-0.5j * k**2 * NLS_DT)

    def run(step: Callable[..., Any], psi: Any, lin: Any) -> Any:
        for _ in range(NLS_STEPS):
            psi = step(psi, lin)
        return psi

    ref = run(nls_step_native, psi0, linear)
    c64 = run(nls_step_native, psi0.to(C64), linear.to(C64))
    c64_compiled = run(compiled(nls_step_native, "c64"), psi0.to(C64), linear.to(C64))
    rows = [
        {"op": "nls", "part": "float32", "mode": "eager", "vs_c128": rel_l2(c64, ref), "vs_c64": 0.0},
        {"op": "nls", "part": "float32", "mode": "compiled", "vs_c128": rel_l2(c64_compiled, ref), "vs_c64": 0.0},
    ]
    for name, part in LOWP.items():
        args = (planar(psi0, part), planar(linear, part))
        for mode in ("eager", "compiled"):
            with torchcx.config.patch(fft_path="real"):
                step = nls_step if mode == "eager" else compiled(nls_step, f"{name}", fft_path="real")
                got = run(step, *args)
            assert got.component_dtype == part, (name, mode, got.dtype)
            base = c64 if mode == "eager" else c64_compiled
            rows.append(
                {
                    "op": "nls",
                    "part": name,
                    "mode": mode,
                    "vs_c128": rel_l2(got, ref),
                    "vs_c64": rel_l2(got, c128(base)),
                }
            )
    return rows


# -- output ---------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "torch": torch.__version__,
        "torchcx": getattr(torchcx, "__version__", None),
        "commit": commit,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "load_average": [round(v, 2) for v in os.getloadavg()],
    }


def print_bench(records: list[dict], summary: list[dict]) -> None:
    print("\n| workload | mode | time (ms) | peak memory (MiB) | of which inputs | rel. error vs c128 |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in records:
        print(
            f"| {r['workload']} | {r['mode']} | {r['ms']:.3f} | {r['peak_bytes'] / 2**20:.2f} | "
            f"{r['inputs_bytes'] / 2**20:.2f} | {r['rel_err_vs_c128']:.1e} |"
        )
    print("\n| workload | bfloat16 mode | complex64 mode | bf16 speedup | bf16 / c64 peak memory |")
    print("| --- | --- | --- | ---: | ---: |")
    for s in summary:
        print(f"| {s['workload']} | {s['bf16']} | {s['c64']} | x{s['speedup']:.2f} | {s['peak_memory_ratio']:.2f} |")


def print_accuracy(rows: dict[str, list[dict]]) -> None:
    def e(v: float) -> str:
        return f"{v:.1e}"

    print("\nmatmul (n x n): relative L2 error")
    print("| n | part | vs c128 | vs c128, same input | vs c64 |\n| ---: | --- | ---: | ---: | ---: |")
    for r in rows["matmul"]:
        print(f"| {r['n']} | {r['part']} | {e(r['vs_c128'])} | {e(r['vs_c128_same_input'])} | {e(r['vs_c64'])} |")
    print("\nfft: relative L2 error")
    print("| n | part | path | vs c128 | vs c128, same input | vs c64 |\n| ---: | --- | --- | ---: | ---: | ---: |")
    for r in rows["fft"]:
        print(
            f"| {r['n']} | {r['part']} | {r['path']} | {e(r['vs_c128'])} | {e(r['vs_c128_same_input'])} | "
            f"{e(r['vs_c64'])} |"
        )
    print("\nrope: relative L2 error of the output (in the activations' dtype)")
    print("| activations | freqs | vs c128 | vs c64 freqs |\n| --- | --- | ---: | ---: |")
    for r in rows["rope"]:
        print(f"| {r['activations']} | {r['freqs']} | {e(r['vs_c128'])} | {e(r['vs_c64'])} |")
    print(f"\nnls ({NLS_STEPS} steps, {NLS_POINTS} points): relative L2 error")
    print("| part | mode | vs c128 | vs c64 |\n| --- | --- | ---: | ---: |")
    for r in rows["nls"]:
        print(f"| {r['part']} | {r['mode']} | {e(r['vs_c128'])} | {e(r['vs_c64'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a loaded machine)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved timing rounds")
    parser.add_argument("--min-sample-ms", type=float, default=20.0, help="shortest timing sample")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--accuracy", action="store_true", help="the accuracy report instead of timings")
    parser.add_argument("--out", default=None, help="JSON output (default: benchmarks/results/low_precision_*.json)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    info = machine_info()
    print(f"torch {info['torch']}, {info['threads']} threads, load {info['load_average']}")
    results_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    if args.accuracy:
        out = args.out or os.path.join(results_dir, "low_precision_accuracy.json")
        rows = {}
        for op, fn in (("matmul", matmul_accuracy), ("fft", fft_accuracy), ("rope", rope_accuracy)):
            rows[op] = fn()
        rows["nls"] = nls_accuracy()
        print_accuracy(rows)
        payload: dict[str, Any] = {"info": info, "unit_roundoff": UNIT_ROUNDOFF, **rows}
    else:
        out = args.out or os.path.join(results_dir, "low_precision_cpu.json")
        records = bench(args.rounds, args.min_sample_ms / 1e3, args.workloads, print)
        summary = ratios(records)
        print_bench(records, summary)
        info["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
        payload = {"info": info, "rounds": args.rounds, "records": records, "summary": summary}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(payload, f, indent=1)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
