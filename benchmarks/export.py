"""Speed of torchcx.export's deployed artifacts against eager PyTorch (docs/export.md).

For each program of tests/export_programs.py at benchmark size: eager PyTorch on the
program as written, the AOTInductor package of ``torchcx.export(...)`` (built with
``torchcx.aoti_compile_and_package``, loaded with ``aoti_load_package``), and an onnxruntime session of its ONNX export
(``target="onnx"``, ``complex_io="real"``), all on one thread, timed round-robin in
one process (median of the rounds). The ONNX column needs the ``export`` extra.

    python benchmarks/export.py [--programs rope-fp32,qft] [--rounds 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from torch.utils._pytree import tree_flatten  # noqa: E402

import torchcx  # noqa: E402
from export_programs import PROGRAMS  # noqa: E402
from test_export import HAS_ONNX, _pairs, run_onnx  # noqa: E402
from torchcx.tensor import ComplexTensor  # noqa: E402


def _timed(fn: Any, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(p.name for p in PROGRAMS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    rows = []
    work = Path(tempfile.mkdtemp(prefix="torchcx-export-bench-"))
    for program in PROGRAMS:
        if program.name not in args.programs.split(","):
            continue
        module, inputs = program.make(False)
        bfloat16 = any(isinstance(a, ComplexTensor) for a in inputs)
        io = "real" if bfloat16 else "complex"
        real_inputs = tuple(_pairs(a) for a in inputs)
        given = real_inputs if io == "real" else inputs
        modes: dict[str, Any] = {}
        with torch.no_grad():
            modes["eager"] = lambda m=module, a=inputs: m(*a)
            start = time.perf_counter()
            ep = torchcx.export(module, inputs, complex_io=io)
            package = torchcx.aoti_compile_and_package(ep, package_path=str(work / f"{program.name}.pt2"))
            aoti_build = time.perf_counter() - start
            runner = torch._inductor.aoti_load_package(package)
            modes["aoti"] = lambda r=runner, a=given: r(*a)
            onnx_build = None
            if HAS_ONNX:
                import onnxruntime as ort

                start = time.perf_counter()
                ep_onnx = torchcx.export(module, inputs, complex_io="real", target="onnx")
                path = str(work / f"{program.name}.onnx")
                torch.onnx.export(ep_onnx, real_inputs, dynamo=True, verbose=False).save(path)
                onnx_build = time.perf_counter() - start
                options = ort.SessionOptions()
                options.intra_op_num_threads = options.inter_op_num_threads = 1
                expected = [_pairs(e) for e in tree_flatten(module(*inputs))[0]]
                try:
                    run_onnx(path, real_inputs, expected)
                    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                    feeds = {
                        meta.name: a.numpy()
                        for meta, a in zip(session.get_inputs(), real_inputs)
                        if a.dtype != torch.bfloat16
                    }
                    if len(feeds) == len(real_inputs):
                        modes["onnxruntime"] = lambda s=session, f=feeds: s.run(None, f)
                    else:  # bfloat16 inputs go through io binding
                        modes["onnxruntime"] = lambda p=path, a=real_inputs, e=expected: run_onnx(p, a, e)
                except Exception as error:  # noqa: BLE001  (reported in the table)
                    print(f"{program.name}: onnxruntime failed: {str(error).splitlines()[0]}")
            for fn in modes.values():  # warm up
                fn()
            repeat = {name: max(1, int(0.05 / max(_timed(fn, 1), 1e-6))) for name, fn in modes.items()}
            times: dict[str, list[float]] = {name: [] for name in modes}
            for _ in range(args.rounds):
                for name, fn in modes.items():
                    times[name].append(_timed(fn, repeat[name]))
        medians = {name: statistics.median(t) for name, t in times.items()}
        row = {
            "program": program.name,
            "eager_ms": medians["eager"] * 1e3,
            "aoti_ms": medians["aoti"] * 1e3,
            "aoti_speedup": medians["eager"] / medians["aoti"],
            "aoti_build_s": aoti_build,
            "onnxruntime_ms": medians["onnxruntime"] * 1e3 if "onnxruntime" in medians else None,
            "onnxruntime_speedup": medians["eager"] / medians["onnxruntime"] if "onnxruntime" in medians else None,
            "onnx_build_s": onnx_build,
        }
        rows.append(row)
        ort_text = (
            f"onnxruntime {row['onnxruntime_ms']:8.3f} ms ({row['onnxruntime_speedup']:.2f}x)"
            if row["onnxruntime_ms"] is not None
            else "onnxruntime -"
        )
        print(
            f"{program.name:18s} eager {row['eager_ms']:8.3f} ms | aoti {row['aoti_ms']:8.3f} ms "
            f"({row['aoti_speedup']:.2f}x, built in {aoti_build:.1f} s) | {ort_text}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": 1, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
