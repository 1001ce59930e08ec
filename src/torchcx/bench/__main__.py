"""``python -m torchcx.bench [--quick] [--workloads ...] [--modes ...] [--device cpu] [--threads N] [--out DIR]``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from . import report
from .modes import MODES
from .runner import Options, Results, run
from .workloads import WORKLOADS


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
        "--workloads", type=_names, default=list(WORKLOADS), help=f"comma-separated, of: {', '.join(WORKLOADS)}"
    )
    parser.add_argument("--modes", type=_names, default=list(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--device", default="cpu", help="torch device (JAX uses its backend for the same kind)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads, and cores the process may use (JAX's too); default: torch's threads, all cores",
    )
    parser.add_argument("--rounds", type=int, default=None, help="timed samples per mode (default 21, quick 7)")
    parser.add_argument("--out", default="bench-results", help="directory for results.{json,md,txt} and speedups.png")
    parser.add_argument(
        "--render", metavar="JSON", help="run nothing: write the table and chart of a results.json again, to --out"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        with open(args.render) as f:
            results = Results.from_dict(json.load(f))
        print(report.text_table(results))
        for kind, path in report.write(results, args.out).items():
            print(f"{kind}: {path}")
        return 0
    options = Options(
        workloads=args.workloads,
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
