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
call's tensors asked for, the same on every run of the same build on the same
CPU.

Note [Library scratch in memory figures]
----------------------------------------
Some of those bytes are not the program's: a GEMM library may allocate a
workspace inside one kernel call and free it before the call returns (oneDNN
packs bfloat16 operands into a 100-170 KiB buffer per ``aten::mm`` on an AVX-512
CPU without AMX, and allocates nothing on one with AMX). Its size depends on the
CPU and the library version, not on the program, so ``program_peak_bytes``
leaves it out: it counts the program's own buffers (inputs, Inductor's
temporaries, outputs), which depend only on the compiled graph. An allocation is
scratch when it and its free both happen inside the same call of one ATen op.
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


def _running_peak(deltas: list[int]) -> int:
    held = peak = 0
    for d in deltas:
        held += d  # > 0: an allocation, < 0: a free
        peak = max(peak, held)
    return peak


def _scratch(memory: list[Any], ops: list[Any]) -> set[int]:
    """Indices into ``memory`` of allocations freed inside the same ATen op call, and of their frees.

    Events carry no address, so an allocation is paired with the next free of the same size
    inside the same innermost op call (Note [Library scratch in memory figures]).
    """
    aten = [o for o in ops if o.name().startswith("aten::")]

    def innermost(t: int) -> Any:
        inside = [o for o in aten if o.start_ns() <= t <= o.start_ns() + o.duration_ns()]
        return min(inside, key=lambda o: o.duration_ns()) if inside else None

    owners = [innermost(e.start_ns()) for e in memory]
    scratch: set[int] = set()
    for i, e in enumerate(memory):
        if e.nbytes() <= 0 or owners[i] is None or i in scratch:
            continue
        for j in range(i + 1, len(memory)):
            if owners[j] is not owners[i]:
                break
            if j not in scratch and memory[j].nbytes() == -e.nbytes():
                scratch.update((i, j))
                break
    return scratch


def peak_memory(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, int]:
    """Peak tensor memory of one CPU call of ``fn``, in bytes.

    ``inputs_bytes``; ``transient_peak_bytes`` (what the call allocated, at its peak) and
    ``peak_bytes`` (inputs plus that); ``program_peak_bytes``: the same without library
    scratch (Note [Library scratch in memory figures]), and ``scratch_bytes``, the largest
    such workspace.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn(*args)  # kept alive until the profile ends: the outputs count
    events = sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns())
    memory = [e for e in events if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    ops = [e for e in events if e.name() != "[memory]"]
    del out
    scratch = _scratch(memory, ops)
    inputs = tensor_bytes(args)
    peak = _running_peak([e.nbytes() for e in memory])
    program = _running_peak([e.nbytes() for i, e in enumerate(memory) if i not in scratch])
    return {
        "inputs_bytes": inputs,
        "transient_peak_bytes": peak,
        "peak_bytes": inputs + peak,
        "program_peak_bytes": inputs + program,
        "scratch_bytes": max((memory[i].nbytes() for i in scratch), default=0),
    }
