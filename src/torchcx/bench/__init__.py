"""``python -m torchcx.bench``: complex workloads timed eager, with torch.compile, torchcx, PyTorch's
in-tree complex wrapper and JAX, side by side in one process.

Each workload (``workloads/``) is idiomatic user code with a JAX twin; the
runner (``runner.py``, Note [Benchmark methodology]) checks every mode's result
against eager, times the modes interleaved and reports each one's speedup over
eager, compile time and fraction of the machine's limits (``limits.py``);
``report.py`` writes the table, JSON and chart.
"""

from __future__ import annotations

from .runner import ModeResult, Options, Results, WorkloadResult, run

__all__ = ["ModeResult", "Options", "Results", "WorkloadResult", "run"]
