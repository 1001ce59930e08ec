"""Peak tensor memory of one call, from the CPU allocator's own records.

``peak_memory(fn, args)`` runs ``fn(*args)`` once under ``torch.profiler`` with
``profile_memory=True``, which records every allocation and free of PyTorch's
CPU allocator (c10's: eager ops and the buffers and outputs of Inductor's
generated code alike; not Python objects, not the compiler's own memory). The
running sum of those events, in time order, peaks at the most tensor memory
the call held at once beyond what existed before it (its outputs and
temporaries); ``peak_bytes`` adds the inputs' storages, so it is the call's
whole tensor footprint.

Allocator bookkeeping rather than RSS: RSS on a shared machine moves with the
allocator's caching and other threads, while this counts exactly the bytes the
call's tensors asked for, the same on every run (so a test may bound it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..tensor import ComplexTensor


def tensor_bytes(args: Any) -> int:
    """Bytes of the distinct storages behind the tensors in ``args`` (ComplexTensors: both parts)."""
    seen: dict[int, int] = {}

    def visit(x: Any) -> None:
        if isinstance(x, ComplexTensor):
            visit(x.re)
            visit(x.im)
        elif isinstance(x, torch.Tensor):
            storage = x.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        elif isinstance(x, (tuple, list)):
            for item in x:
                visit(item)

    visit(args)
    return sum(seen.values())


def peak_memory(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, int]:
    """``inputs_bytes``, ``transient_peak_bytes`` and their sum ``peak_bytes`` of one CPU call of ``fn``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn(*args)  # kept alive until the profile ends: the outputs count
    events = [
        e
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    events.sort(key=lambda e: e.start_ns())
    held = peak = 0
    for e in events:
        held += e.nbytes()  # > 0: an allocation, < 0: a free
        peak = max(peak, held)
    del out
    inputs = tensor_bytes(args)
    return {"inputs_bytes": inputs, "transient_peak_bytes": peak, "peak_bytes": inputs + peak}
