"""The compiled real graph behind torchcx's boundary, called with the complex graph's arguments
(Note [The compile pipeline], step 4): complex inputs viewed as real and real results as
complex, both without copying; outputs that are views of inputs, or of each other, replayed
on the actual tensors so that they alias exactly as in eager."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
        # Per call, only what varies is looked at (small graphs run in microseconds, and
        # this wrapper is on every call): the complex inputs and how each crosses, and the
        # replay graph's generated code, called without nn.Module's call machinery.
        self._complex_inputs = [(i, s.conj) for i, s in enumerate(spec.inputs) if s.complex_dtype is not None]
        self._real_inputs = [i for i, s in enumerate(spec.inputs) if s.complex_dtype is None]
        self._outputs = [
            (spec.output_slot[i], dtype, spec.output_conj[i]) for i, dtype in enumerate(spec.output_dtypes)
        ]
        self._replay = spec.alias_replay.forward if spec.alias_replay is not None else None
        self._replayed = spec.replayed
        self._repeats = list(spec.repeats.items())

    def __call__(self, *call_args: Any) -> Any:
        spec = self.spec
        # Boxed (one list, which we clear to free inputs early) or, from some of
        # AOTAutograd's backward paths, unboxed.
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        originals = list(args) if self._replay is not None else None
        real_args = list(args)
        for i, conj in self._complex_inputs:
            value = args[i]
            if value.is_conj() != conj:
                # A tangent need not have the conj bit AOTAutograd traced the backward with (that
                # of the forward's output: ihfft returns a conj view): give the graph the same values
                # in the traced form (a copy, only for this input). The copy keeps the tangent's
                # strides, which AOTAutograd has already made those the graph was compiled for
                # (resolve_conj would make it contiguous: a sliced FFT output's tangent failed
                # Inductor's stride assertion).
                value = _with_conj_bit(value, conj)
            real_args[i] = _layout.to_real(value.conj() if conj else value)
        written_back = _resolve_negations(args, real_args, self._real_inputs, spec.mutated)
        args.clear()
        real_outs = self.compiled([*real_args, *spec.constants] if spec.constants else real_args)
        for value, resolved in written_back:
            value.copy_(resolved)
        results: list[Any] = [
            None if slot is None else _from_real(real_outs[slot], dtype, conj) for slot, dtype, conj in self._outputs
        ]
        if originals is not None:
            bases = [
                results[where] if kind == "output" else _from_real(real_outs[where], dtype, conj)
                for (kind, where), dtype, conj in spec.base_sources
            ]
            for i, value in zip(self._replayed, self._replay(*originals, *bases)):
                results[i] = value
        for i, first in self._repeats:
            results[i] = results[first]  # the very tensor, as in eager
        return results


class RealGraphRuntime:
    """A graph with no complex value, compiled by Inductor as it is, called with its negated
    inputs resolved (``_resolve_negations``): ``b.imag`` of a conj input reaches the graph after
    a graph break as a real tensor with a negation bit, and Inductor read its memory, not the
    bit (``sigmoid(b.imag)`` came out as ``sigmoid(-b.imag)``; fuzzing run I, seed 21017; stock
    torch.compile does the same)."""

    def __init__(self, compiled: Callable[..., Any], mutated: frozenset[int]) -> None:
        self._boxed_call = True  # (as BoundaryRuntime's)
        self.compiled = compiled
        self.mutated = mutated

    def __call__(self, *call_args: Any) -> Any:
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        if not any(isinstance(a, Tensor) and a.is_neg() for a in args):
            return self.compiled(args)  # the common case: nothing to resolve, no copy of the list
        real_args = list(args)
        written_back = _resolve_negations(args, real_args, range(len(args)), self.mutated)
        args.clear()
        outs = self.compiled(real_args)
        for value, resolved in written_back:
            value.copy_(resolved)
        return outs


def _resolve_negations(
    args: list[Any], real_args: list[Any], indices: Iterable[int], mutated: frozenset[int]
) -> list[tuple[Tensor, Tensor]]:
    """Put in ``real_args`` the resolved values of the real inputs ``args[i]`` that carry a
    negation bit; return (input, resolved) for those the graph writes, to copy back after it.

    A real input with a lazy negation bit: ``a.imag`` of a conj view is one, and the forward
    saves it for the backward as the view it is. Inductor reads memory, not the bit (the
    gradient of ``a.imag @ a.imag.mT`` came out negated; fuzzing run H, seed 19005): the graph
    gets the values, strided as the input is, and if it writes the input, its new values are
    copied back through the bit.
    """
    written_back: list[tuple[Tensor, Tensor]] = []
    for i in indices:
        value = args[i]
        if isinstance(value, Tensor) and value.is_neg():
            real_args[i] = _resolved_neg(value)
            if i in mutated:
                written_back.append((value, real_args[i]))
    return written_back


def _strided_like(value: Tensor) -> Tensor:
    """Uninitialized memory strided as ``value`` is (contiguous where ``value`` overlaps itself:
    an expanded tangent, which no memory can be strided as)."""
    if _layout.overlaps(value):
        return torch.empty_like(value, memory_format=torch.contiguous_format)
    return torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)


def _resolved_neg(value: Tensor) -> Tensor:
    """``value``'s numbers without its negation bit, in memory strided as ``value`` is."""
    return _strided_like(value).copy_(value)  # copy_ applies the source's negation bit


def _with_conj_bit(value: Tensor, conj: bool) -> Tensor:
    """``value``'s numbers with the conj bit ``conj``, in memory strided as ``value`` is."""
    memory = _strided_like(value)
    # copy_ resolves the source's conj bit; with conj, memory holds the conjugates and the
    # conj view reads them back as value
    memory.copy_(value.conj() if conj else value)
    return memory.conj() if conj else memory


def _from_real(out: Tensor, dtype: torch.dtype | None, conj: bool) -> Tensor:
    """A real graph output as the value it stands for: complex ``dtype`` over its memory (a view)."""
    if dtype is None:
        return out
    value = _layout.from_real(out, dtype)
    if value._base is not None:
        # view_as_complex (float pairs) makes the value an autograd view of the real buffer, and
        # autograd refuses in-place ops on a view made inside AOTAutograd's Function ("Output 0
        # of CompiledFunction is a view and is being modified inplace"); eager's result is no
        # view. The same memory, detached from the real buffer, is what eager returns.
        value = value.detach()
    return value.conj() if conj else value
