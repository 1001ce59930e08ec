"""Whether torchcx's ops compute values or are traced into a graph, and what a lowering remembers.

Note [Traced or computed]
-------------------------
Some implementations do different work when traced: an extern kernel (LAPACK, the
vendor FFT) becomes a ``torchcx::extern`` call in the graph instead of running, the
GEMM strategy rule takes its compiled column, a constant (a DFT matrix) is lifted into
the graph. They ask ``tracing()``, which is true in exactly two cases, both stated
rather than guessed from the operands' types:

* torchcx's compile boundary is lowering a graph (``lowering()``, entered by the
  retrace of ``_boundary/retrace.py`` for ``torchcx.compile`` and ``torchcx.export``);
* a fake-tensor or proxy tracer is on PyTorch's dispatch-mode stack: Dynamo, AOTAutograd
  or ``torch.export`` tracing a program that holds ComplexTensors itself (planar
  inputs under a stock backend), where torchcx's ops run inside their trace.

A meta tensor holds no values either, in eager: ``without_values`` adds that case for
the ops that would otherwise read data (extern kernels, the GEMM strategies).

The lowering also owns the packed-form memo (Note [Packed form] in ``_layout.py``):
which ComplexTensors were unpacked from which boundary or extern tensor. It lives
as long as one retrace, so no tensor carries it after, and eager tensors never do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

_MODES = (torch._C._TorchDispatchModeKey.FAKE, torch._C._TorchDispatchModeKey.PROXY)


@dataclass
class Lowering:
    """The state of one retrace: the packed-form memo, keyed by object identity. The
    keys' objects are held in the values, so an id is not reused while the memo lives."""

    #: id(ComplexTensor) -> (the ComplexTensor, its packed tensor, complex dtype)
    packed: dict[int, tuple[Any, Tensor, torch.dtype]] = field(default_factory=dict)
    #: id(re part) -> (re, im, packed tensor, complex dtype): a ComplexTensor of these very
    #: parts remembers the packed tensor too
    parts: dict[int, tuple[Tensor, Tensor, Tensor, torch.dtype]] = field(default_factory=dict)


_CURRENT: ContextVar[Lowering | None] = ContextVar("torchcx_lowering", default=None)


@contextlib.contextmanager
def lowering() -> Iterator[Lowering]:
    """Ops run inside are traced into a graph torchcx is lowering (Note [Traced or computed])."""
    state = Lowering()
    token = _CURRENT.set(state)
    try:
        yield state
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def computing() -> Iterator[None]:
    """Ops run inside compute values, even during a lowering (constants built for a graph)."""
    token = _CURRENT.set(None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Lowering | None:
    """The lowering in progress, if any."""
    return _CURRENT.get()


def tracing() -> bool:
    """Whether ops are being traced into a graph rather than computing values."""
    return _CURRENT.get() is not None or any(torch._C._get_dispatch_mode(key) is not None for key in _MODES)


def without_values(*tensors: Tensor) -> bool:
    """Whether an op on ``tensors`` must not read their data: traced, or meta tensors."""
    return tracing() or any(t.is_meta for t in tensors)
