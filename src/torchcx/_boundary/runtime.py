"""The compiled real graph behind torchcx's boundary, called with the complex graph's arguments
(Note [The compile pipeline], step 4): complex inputs viewed as real and real results as
complex, both without copying; outputs that are views of inputs, or of each other, replayed
on the actual tensors so that they alias exactly as in eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .. import _layout
from .spec import BoundarySpec


class BoundaryRuntime:
    """``compiled`` (the real graph's Inductor callable) with the boundary ``spec`` around it."""

    def __init__(self, compiled: Callable[..., Any], spec: BoundarySpec) -> None:
        # An instance attribute: AOTAutograd wraps the backward in torch._dynamo.disable,
        # whose functools.wraps copies the instance's __dict__, not class attributes;
        # without it the wrapper is called unboxed (with a warning on every backward).
        self._boxed_call = True
        self.compiled = compiled
        self.spec = spec

    def __call__(self, *call_args: Any) -> Any:
        spec = self.spec
        # Boxed (one list, which we clear to free inputs early) or, from some of
        # AOTAutograd's backward paths, unboxed.
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        originals = list(args) if spec.alias_replay is not None else None
        real_args = []
        for value, input_spec in zip(args, spec.inputs):
            if input_spec.complex_dtype is None:
                real_args.append(value)
                continue
            if value.is_conj() != input_spec.conj:
                # A tangent need not have the conj bit AOTAutograd traced the backward with (that
                # of the forward's output: ihfft returns a conj view): give the graph the same values
                # in the traced form (a copy, only for this input).
                value = value.conj().resolve_conj().conj() if input_spec.conj else value.resolve_conj()
            real_args.append(_layout.to_real(value.conj() if input_spec.conj else value))
        args.clear()
        real_outs = self.compiled([*real_args, *spec.constants])
        results: list[Any] = []
        for i, dtype in enumerate(spec.output_dtypes):
            slot = spec.output_slot[i]
            results.append(None if slot is None else _from_real(real_outs[slot], dtype, spec.output_conj[i]))
        if originals is not None:
            assert spec.alias_replay is not None
            bases = [
                results[where] if kind == "output" else _from_real(real_outs[where], dtype, conj)
                for (kind, where), dtype, conj in spec.base_sources
            ]
            replayed = iter(spec.alias_replay(*originals, *bases))
            results = [next(replayed) if slot is None else r for r, slot in zip(results, spec.output_slot.values())]
        return results


def _from_real(out: Tensor, dtype: torch.dtype | None, conj: bool) -> Tensor:
    """A real graph output as the value it stands for: complex ``dtype`` over its memory (a view)."""
    if dtype is None:
        return out
    value = _layout.from_real(out, dtype)
    return value.conj() if conj else value
