"""The benchmark workloads, in the order of the table, and the size sweep's (``SWEEP_WORKLOADS``)."""

from __future__ import annotations

from . import elementwise, fno, inplace, layer, matmul, mlp, nls, quantum, rotary
from ._base import SCALES, JaxCase, Problem, SweepWorkload, Workload

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for module in (elementwise, rotary, fno, nls, mlp, quantum, matmul)
    for w in module.WORKLOADS  # type: ignore[attr-defined]
}

#: The programs ``python -m torchcx.bench --sweep`` times at sizes from 2^10 to 2^24 elements.
SWEEP_WORKLOADS: dict[str, SweepWorkload] = {
    w.name: w
    for module in (elementwise, rotary, inplace, layer, matmul)
    for w in module.SWEEP  # type: ignore[attr-defined]
}

__all__ = ["SCALES", "SWEEP_WORKLOADS", "WORKLOADS", "JaxCase", "Problem", "SweepWorkload", "Workload"]
