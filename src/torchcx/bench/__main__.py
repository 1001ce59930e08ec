"""``python -m torchcx.bench [--quick] [--workloads ...] [--modes ...] [--device cpu] [--threads N] [--out DIR]``.

``--sweep [--sizes 10,14,18]``: the size sweep (``sweep.py``) instead of the suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from . import report, sweep
from .modes import DEFAULT_MODES, MODES
from .runner import Options, Results, run
from .workloads import SWEEP_WORKLOADS, WORKLOADS


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m torchcx.bench",
        description="Complex workloads timed eager, with torch.compile, torchcx, PyTorch's in-tree complex "
        "wrapper and JAX, checked against eager; writes a table, JSON and a chart.",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer gates and steps, fewer rounds")
    parser.add_argument(
        "--workloads",
        type=_names,
        default=None,
        help=f"comma-separated, of: {', '.join(WORKLOADS)}; with --sweep, of: {', '.join(SWEEP_WORKLOADS)}",
    )
    parser.add_argument(
        "--modes",
        type=_names,
        default=list(DEFAULT_MODES),
        help=f"comma-separated, of: {', '.join(MODES)} (default: all but {', '.join(sorted(set(MODES) - set(DEFAULT_MODES)))})",
    )
    parser.add_argument("--device", default="cpu", help="torch device (JAX uses its backend for the same kind)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads, and cores the process may use (JAX's too); default: torch's threads, all cores",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed samples per mode (default 21, quick 7; --sweep: 11, quick 5)"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="directory for results.{json,md,txt} and speedups.png (default bench-results); with --sweep, for "
        "sweep.{json,md,txt}, sweep.png and sweep-<workload>.png (default bench-results/sweep)",
    )
    parser.add_argument(
        "--render",
        metavar="JSON",
        help="run nothing: write the table and chart of a results.json (with --sweep, a sweep.json) again, to --out",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="time the sweep's workloads at sizes from 2^10 to 2^24 elements instead of the suite",
    )
    parser.add_argument(
        "--sizes",
        type=sweep.parse_sizes,
        default=None,
        help="with --sweep: exponents of 2, comma-separated or ranges stepping by 2 "
        f"(default {','.join(map(str, sweep.DEFAULT_LOG2))}; --quick: {','.join(map(str, sweep.QUICK_LOG2))})",
    )
    args = parser.parse_args(argv)
    if args.sizes is not None and not args.sweep:
        parser.error("--sizes needs --sweep")
    return args


def main_sweep(args: argparse.Namespace) -> int:
    out = args.out or "bench-results/sweep"
    if args.render:
        with open(args.render) as f:
            results = sweep.SweepResults.from_dict(json.load(f))
    else:
        options = sweep.SweepOptions(
            workloads=args.workloads or list(SWEEP_WORKLOADS),
            log2_sizes=args.sizes or (sweep.QUICK_LOG2 if args.quick else sweep.DEFAULT_LOG2),
            modes=args.modes,
            device=args.device,
            threads=args.threads,
            rounds=args.rounds or (5 if args.quick else 11),
            min_sample_s=0.02 if args.quick else 0.05,
            quick=args.quick,
        )
        try:
            options.check()
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        results = sweep.run(options, log=lambda line: print(line, flush=True))
        print()
    print(sweep.text_table(results))
    for kind, path in sweep.write(results, out).items():
        print(f"{kind}: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.sweep:
        return main_sweep(args)
    args.out = args.out or "bench-results"
    if args.render:
        with open(args.render) as f:
            results = Results.from_dict(json.load(f))
        print(report.text_table(results))
        for kind, path in report.write(results, args.out).items():
            print(f"{kind}: {path}")
        return 0
    options = Options(
        workloads=args.workloads or list(WORKLOADS),
        modes=args.modes,
        scale="quick" if args.quick else "full",
        device=args.device,
        threads=args.threads,
        rounds=args.rounds or (7 if args.quick else 21),
        min_sample_s=0.02 if args.quick else 0.05,
    )
    try:
        options.check()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results = run(options, log=lambda line: print(line, flush=True))
    print()
    print(report.text_table(results))
    paths = report.write(results, args.out)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
