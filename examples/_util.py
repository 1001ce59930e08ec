"""What the examples share: side-by-side timing, the output folder, optional plotting, and checks.

Each example asserts its own mathematics or physics through :class:`Checks`
and exits non-zero when a check fails, so that CI can run them as smoke tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Where figures go unless ``--out`` says otherwise (git-ignored).
DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def parser(description: str) -> argparse.ArgumentParser:
    """The command line every example takes: ``--small`` (the CI size) and ``--out``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--small", action="store_true", help="the small size CI runs as a smoke test")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder for figures (default {DEFAULT_OUT})")
    return p


def time_side_by_side(candidates: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median seconds per call of each candidate, after one warm-up call each.

    The calls are interleaved (a, b, a, b, ...) so that a shared, noisy machine
    slows every candidate alike and the ratios stay meaningful.
    """
    for fn in candidates.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def report_times(times: dict[str, float], baseline: str = "eager") -> None:
    """Print each time and its speedup over ``baseline``."""
    for name, seconds in times.items():
        print(f"  {name:<16} {1e3 * seconds:9.2f} ms   speedup {times[baseline] / seconds:5.2f}x")


def pyplot() -> Any:
    """matplotlib.pyplot with a file-only backend, or None (with a message) if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib is not installed: no figure)")
        return None
    return plt


class Checks:
    """Named numerical checks; :meth:`finish` exits non-zero if any failed."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def below(self, what: str, value: float, bound: float) -> None:
        ok = value < bound  # False for nan
        print(f"  {what}: {value:.3g} (must be < {bound:g}) {'ok' if ok else 'FAILED'}")
        if not ok:
            self.failed.append(what)

    def above(self, what: str, value: float, bound: float) -> None:
        ok = value > bound
        print(f"  {what}: {value:.4g} (must be > {bound:g}) {'ok' if ok else 'FAILED'}")
        if not ok:
            self.failed.append(what)

    def finish(self) -> None:
        if self.failed:
            raise SystemExit(f"checks failed: {', '.join(self.failed)}")
        print("all checks passed")
