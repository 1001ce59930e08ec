"""OpInfo ops compiled together: one torchcx compilation for a group of ops' first samples.

Note [Ops compiled together]
----------------------------
CI checks the first OpInfo sample of every op through ``torchcx.compile``, forward
(test_opinfo_compile.py) and with gradients (test_autograd_opinfo.py). One compilation
per op costs a Dynamo trace, AOTAutograd, torchcx's retrace, Inductor's code generation
and a C++ compiler run of 1-3 s whatever the kernel's size: those two suites were most
of CI's time. So the ops of a group are compiled as one function instead, each op on its
own copy of its sample and returning its own outputs: the graph is one independent
subgraph per op, and each op's values and gradients are those it has alone (Inductor may
put two ops' loops in one kernel; that is a compilation users get too, and it must be
right as well).

What a test records about its op must still be about that op alone, so a group whose
compilation raises, or whose graphs cannot be attributed op by op (a complex value
reached Inductor, a forward graph without its backward, and for the forward suite,
which records each op's extern kernels and fallbacks, an op that ran as a fallback or an
extern kernel), is not used: its ops are compiled one by one, as without groups, and a
warning says which group and why. Ops are never grouped when their test is skipped or
expected to fail, or when their first sample raises natively (an op must raise compiled
too: alone); in the forward suite, nor when their family calls extern kernels by design
(linalg, fft) or they do (the scans). The gradient suite records no kernel names, so its linalg, FFT and GEMM
ops are grouped too: compiled alone they were 114 of its tests and 284 s of its 387;
grouped, the suite takes 157 s (summed test time, ``-n 2``, cold, 2026-12-05, a Sapphire
Rapids host). ``TORCHCX_OPINFO_ALONE=1`` compiles every op alone.

A group's tests carry its name in their ids (``acos@compiled-3``), and under
pytest-xdist the scheduler of conftest.py sends all of a group's tests to one worker,
so that no group is compiled twice (xdist's own ``--dist loadgroup`` does not group
under pytest 9.2: pytest-dev/pytest-xdist#1386).
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from torch.testing._internal.opinfo.core import OpInfo

from opinfo_harness import _first_line, family, op_id

#: Ops per group: large enough that the fixed cost of a compilation is shared, small
#: enough that a group falling back to one-by-one compilation costs little. 32 rather than
#: 16: the compiled gradients of the same 64 ops took 89 s in groups of 32 against 122 s in
#: groups of 16 (one process, fresh caches, 2026-12-04 slow host).
GROUP_SIZE = 32

#: TORCHCX_OPINFO_ALONE=1 compiles every op alone, as before groups (to tell whether a
#: failure is the op's own).
ALONE = os.environ.get("TORCHCX_OPINFO_ALONE") == "1"
ALONE_HINT = "TORCHCX_OPINFO_ALONE=1 compiles each op alone"

#: Families whose ops call extern kernels by design (LAPACK, the vendor FFT, GEMM):
#: which op called which kernel is part of what their tests record.
ALONE_FAMILIES = ("linalg", "fft")

#: Ops of other families that run as the native kernel by design (Note [Scans run as the
#: native kernel] in torchcx/ops/reductions.py), recorded as such alone as well.
ALONE_OPS = frozenset({"cumsum", "cumprod", "logcumsumexp", "masked.cumsum", "masked.cumprod", "cumulative_trapezoid"})


class Groups:
    """Ops partitioned into groups compiled together, by a function compiling one group.

    ``compile_group(ops)`` returns ``{op id: result}`` for the ops it compiled together
    (an op it left out, e.g. one whose sample raises natively, is compiled alone), or
    raises ``NotTogether`` with the reason they cannot be.
    """

    def __init__(
        self,
        name: str,
        ops: Sequence[OpInfo],
        eligible: Callable[[OpInfo], bool],
        compile_group: Callable[[list[OpInfo]], dict[str, Any]],
        *,
        alone_families: Sequence[str] = ALONE_FAMILIES,
        alone_ops: frozenset[str] = ALONE_OPS,
    ) -> None:
        self.name = name
        self.compile_group = compile_group
        members = [
            op
            for op in ops
            if not ALONE and family(op) not in alone_families and op_id(op) not in alone_ops and eligible(op)
        ]
        self.index = {op_id(op): i // GROUP_SIZE for i, op in enumerate(members)}
        self.groups: dict[int, list[OpInfo]] = {}
        for op in members:
            self.groups.setdefault(self.index[op_id(op)], []).append(op)

    def params(self, ops: Iterable[OpInfo]) -> list[Any]:
        """``ops`` as pytest parameters, those of a group with its name in their id."""
        out = []
        for op in ops:
            k = self.index.get(op_id(op))
            out.append(pytest.param(op, id=op_id(op) if k is None else in_group(op_id(op), f"{self.name}-{k}")))
        return out

    def result(self, op: OpInfo) -> Any | None:
        """The op's result from its group's compilation, or None: compile it alone."""
        k = self.index.get(op_id(op))
        if k is None:
            return None
        return self._compiled(k).get(op_id(op))

    @functools.cache  # noqa: B019  (one Groups per test module, alive for the session)
    def _compiled(self, k: int) -> dict[str, Any]:
        ops = self.groups[k]
        try:
            return self.compile_group(ops)
        except Exception as e:  # noqa: BLE001  (any failure: the ops are compiled alone)
            warnings.warn(
                f"{self.name} group {k} ({', '.join(op_id(op) for op in ops)}) compiled one op at a time: "
                f"{type(e).__name__}: {_first_line(e)}",
                stacklevel=1,
            )
            return {}


#: How a test id names the group whose compilation it shares: ``<id>@<group>`` at the end
#: of the id, the spelling of xdist's loadgroup (read by conftest.py's scheduler).
GROUP_IN_ID = re.compile(r"@([\w.-]+)\]$")


def in_group(test_id: str, group: str) -> str:
    """``test_id`` naming ``group`` (GROUP_IN_ID)."""
    return f"{test_id}@{group}"


class NotTogether(Exception):
    """A group's compilation cannot be attributed op by op (Note [Ops compiled together])."""


def split(flat: Sequence[Any], counts: Sequence[int]) -> list[Sequence[Any]]:
    """``flat`` cut into consecutive pieces of ``counts`` items."""
    pieces, start = [], 0
    for n in counts:
        pieces.append(flat[start : start + n])
        start += n
    return pieces


def attributable(recorder: Any, report: Any, *, backward: bool = False, kernels: bool = True) -> None:
    """Raise NotTogether unless every graph of the group was real-only and, with ``kernels``
    (a suite recording each op's extern kernels and fallbacks), decomposed with no extern
    kernel; with ``backward``, unless a forward graph came with its backward."""
    if recorder.complex_nodes:
        raise NotTogether(f"complex values reached Inductor: {recorder.complex_nodes[:3]}")
    kinds = set()
    for graph in report.graphs:
        kinds.add(graph.kind)
        if kernels and (graph.fallbacks or graph.externs):
            raise NotTogether(f"fallbacks {sorted(graph.fallbacks)}, externs {sorted(graph.externs)}")
    if backward and "forward" in kinds and "backward" not in kinds:
        raise NotTogether(f"a forward graph but no backward graph was compiled: {kinds}")
