"""The benchmark workloads, in the order of the table."""

from __future__ import annotations

from . import elementwise, fno, matmul, mlp, nls, quantum, rotary
from ._base import SCALES, JaxCase, Problem, Workload

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for module in (elementwise, rotary, fno, nls, mlp, quantum, matmul)
    for w in module.WORKLOADS  # type: ignore[attr-defined]
}

__all__ = ["SCALES", "WORKLOADS", "JaxCase", "Problem", "Workload"]
