"""The two FFT paths of Note [FFT paths] against each other and against eager torch.fft.

    python benchmarks/fft_paths.py [--threads 1] [--repeat 15] [--out benchmarks/results/fft_paths_cpu.json]
    python benchmarks/fft_paths.py --accuracy [--out-md docs/fft_accuracy.md]

Timing: ``torch.fft.fft`` of a batch of transforms along the last axis, for
lengths 64 ... 2^20 and several batch sizes (at most 2^22 points in all),
with parts of float32, float64, bfloat16 and float16. Three modes, timed in
one process in interleaved rounds (the median of each):

* ``eager``: torch.fft.fft on a native complex tensor (complex64 for float32,
  bfloat16 and float16 parts: eager has no CPU FFT for the latter two, so this
  is what a user converts to);
* ``vendor``: ``torchcx.compile`` with ``config.fft_path = "vendor"``;
* ``real``: ``torchcx.compile`` with ``config.fft_path = "real"``.

float32/float64 go in and out as native complex tensors (interleaved: the
vendor path's best case, zero-copy); bfloat16/float16 as planar
ComplexTensors (both paths convert). The rule in ``prefer_real``
(src/torchcx/ops/fft.py) is read off these results: ``summary`` in the JSON
lists, per part dtype, the lengths at which the real path was faster at every
batch size.

Accuracy (``--accuracy``): relative L2 error ||y - y_ref|| / ||y_ref|| of both
paths, per part dtype and length, for a batch of 8 standard normal signals
(1 from 2^18 points), against the exact DFT of the same (rounded) input:
SciPy's FFT in long double where SciPy is installed, else NumPy's complex128.
The table in docs/fft.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchcx
from torchcx import ComplexTensor

PARTS = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
LENGTHS = [64, 256, 1024, 4096, 16384, 65536, 1 << 18, 1 << 20]
BATCHES = [1, 16, 256]
MAX_POINTS = 1 << 22
ACCURACY_LENGTHS = [16, 64, 100, 257, 1024, 4096, 4099, 65536, 1 << 20]


def fft(x: torch.Tensor) -> torch.Tensor:
    return torch.fft.fft(x)


# One function per compiled mode: Dynamo caches compiled code per code object,
# and the path is chosen when a graph is compiled.
def fft_vendor(x: torch.Tensor) -> torch.Tensor:
    return torch.fft.fft(x)


def fft_real(x: torch.Tensor) -> torch.Tensor:
    return torch.fft.fft(x)


def make_input(part: torch.dtype, batch: int, n: int) -> tuple[Any, torch.Tensor]:
    """(the input of the compiled modes, the eager input)."""
    g = torch.Generator().manual_seed(n + batch)
    x = torch.randn(batch, n, dtype=torch.complex128, generator=g)
    if part in (torch.float32, torch.float64):
        native = x.to(torch.complex64 if part == torch.float32 else torch.complex128)
        return native, native
    planar = ComplexTensor(x.real.to(part).contiguous(), x.imag.to(part).contiguous())
    return planar, planar.to_interleaved(torch.complex64)


def compiled(path: str) -> Callable[..., Any]:
    with torchcx.config.patch(fft_path=path):  # a compiled function keeps the settings it was compiled with
        fn = torchcx.compile({"vendor": fft_vendor, "real": fft_real}[path])

    def run(x: Any) -> Any:
        with torchcx.config.patch(fft_path=path):
            return fn(x)

    return run


def time_modes(modes: dict[str, tuple[Callable[..., Any], Any]], repeat: int) -> dict[str, float]:
    """Median seconds per call of each mode, measured in interleaved rounds."""
    samples: dict[str, list[float]] = {name: [] for name in modes}
    for fn, arg in modes.values():
        for _ in range(2):
            fn(arg)
    for _ in range(repeat):
        for name, (fn, arg) in modes.items():
            # Each sample is long enough for the timer: repeat the call for >= ~2 ms.
            calls, elapsed = 0, 0.0
            start = time.perf_counter()
            while elapsed < 2e-3:
                fn(arg)
                calls += 1
                elapsed = time.perf_counter() - start
            samples[name].append(elapsed / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def bench(
    parts: list[str], lengths: list[int], batches: list[int], repeat: int, log: Callable[[str], None]
) -> list[dict]:
    records = []
    for part_name in parts:
        part = PARTS[part_name]
        for n in lengths:
            for batch in batches:
                if batch * n > MAX_POINTS:
                    continue
                x, eager_x = make_input(part, batch, n)
                torch._dynamo.reset()
                modes = {"eager": (fft, eager_x), "vendor": (compiled("vendor"), x), "real": (compiled("real"), x)}
                # Both paths must agree with eager before they are timed.
                expected = fft(eager_x)
                for name in ("vendor", "real"):
                    got = modes[name][0](x)
                    got = got.to_interleaved(torch.complex64) if isinstance(got, ComplexTensor) else got
                    err = ((got.to(expected.dtype) - expected).abs().norm() / expected.abs().norm()).item()
                    limit = 2e-2 if part in (torch.float16, torch.bfloat16) else 1e-5
                    assert err < limit, f"{part_name} n={n} batch={batch} {name}: relative error {err:.2e}"
                ms = {k: 1e3 * v for k, v in time_modes(modes, repeat).items()}
                record = {"part": part_name, "n": n, "batch": batch, **{f"{k}_ms": round(v, 4) for k, v in ms.items()}}
                record["real_vs_vendor"] = round(ms["vendor"] / ms["real"], 3)
                records.append(record)
                log(
                    f"{part_name:9s} n={n:<8d} batch={batch:<4d} eager {ms['eager']:9.3f} ms  vendor "
                    f"{ms['vendor']:9.3f} ms  real {ms['real']:9.3f} ms  real faster x{record['real_vs_vendor']:.2f}"
                )
    return records


def summarize(records: list[dict]) -> dict[str, Any]:
    """Per part dtype: the lengths at which the real path beat the vendor path at every batch size."""
    summary: dict[str, Any] = {}
    for part in sorted({r["part"] for r in records}):
        mine = [r for r in records if r["part"] == part]
        lengths = sorted({r["n"] for r in mine})
        always = [n for n in lengths if all(r["real_vs_vendor"] > 1 for r in mine if r["n"] == n)]
        never = [n for n in lengths if all(r["real_vs_vendor"] <= 1 for r in mine if r["n"] == n)]
        summary[part] = {"real_faster_at_every_batch": always, "vendor_faster_at_every_batch": never}
    return summary


# -- accuracy -----------------------------------------------------------------------------------


def relative_error(got: torch.Tensor, reference: Any) -> float:
    """||got - reference|| / ||reference||, in the reference's precision."""
    import numpy as np

    diff = got.detach().to(torch.complex128).numpy().astype(reference.dtype) - reference
    return float(np.linalg.norm(diff) / np.linalg.norm(reference))


def exact_fft(x: torch.Tensor) -> Any:
    """The DFT of ``x`` in extended precision (SciPy's pocketfft in long double), else NumPy's complex128.

    (MKL's own complex128 FFT, which torch calls, is off by 1e-14 at lengths with a
    large prime factor: no reference for the float64 rows.)
    """
    import numpy as np

    try:
        import scipy.fft

        return scipy.fft.fft(x.numpy().astype(np.clongdouble), axis=-1)
    except ImportError:
        return np.fft.fft(x.numpy(), axis=-1)


def accuracy(parts: list[str], lengths: list[int]) -> list[dict]:
    rows = []
    for part_name in parts:
        part = PARTS[part_name]
        for n in lengths:
            g = torch.Generator().manual_seed(n)
            x = torch.randn(8 if n < (1 << 18) else 1, n, dtype=torch.complex128, generator=g)
            planar = ComplexTensor(x.real.to(part), x.imag.to(part))
            reference = exact_fft(planar.to_interleaved(torch.complex128))  # of the rounded input
            row: dict[str, Any] = {"part": part_name, "n": n}
            for path in ("vendor", "real"):
                with torchcx.config.patch(fft_path=path):
                    got = torch.fft.fft(planar)
                row[path] = relative_error(got.to_interleaved(torch.complex128), reference)
            if part in (torch.float32, torch.float64):
                row["eager"] = relative_error(torch.fft.fft(planar.to_interleaved()), reference)
            rows.append(row)
    return rows


def accuracy_markdown(rows: list[dict]) -> str:
    lines = []
    for part in dict.fromkeys(r["part"] for r in rows):
        mine = [r for r in rows if r["part"] == part]
        lines.append(f"**{part} parts**\n")
        lines.append("| n | vendor | real | real / vendor |")
        lines.append("| ---: | ---: | ---: | ---: |")
        for r in mine:
            lines.append(f"| {r['n']} | {r['vendor']:.2e} | {r['real']:.2e} | {r['real'] / r['vendor']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accuracy", action="store_true", help="the accuracy table instead of timings")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--lengths", type=int, nargs="+", default=None)
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/fft_paths_cpu.json")
    parser.add_argument("--out-md", default=None, help="with --accuracy: also write the markdown table here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.accuracy:
        rows = accuracy(args.parts, args.lengths or ACCURACY_LENGTHS)
        table = accuracy_markdown(rows)
        print(table)
        if args.out_md:
            with open(args.out_md, "w") as f:
                f.write(table)
        return
    start = machine()
    records = bench(
        args.parts, args.lengths or LENGTHS, args.batches, args.repeat, lambda line: print(line, flush=True)
    )
    result = {
        "machine": start,
        "load_average_after": os.getloadavg(),
        "program": "torch.fft.fft(x) along the last axis, x of shape (batch, n)",
        "records": records,
        "summary": summarize(records),
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["summary"], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
