"""The compiled real graph behind torchcx's boundary, called with the complex graph's arguments
(Note [The compile pipeline], step 4): complex inputs viewed as real and real results as
complex, both without copying; outputs that are views of inputs, or of each other, replayed
on the actual tensors so that they alias exactly as in eager."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch._inductor.output_code import OutputCode

from .. import _layout
from .spec import BoundarySpec, InputSpec


class _TorchcxOutputCode(OutputCode):
    """What the two runtimes share: an Inductor ``CompiledFxGraph`` (``compiled``) behind
    torchcx's call, saved whole in AOTAutograd's cache and loaded from it (Note [torchcx graphs
    in AOTAutograd's cache], in backend.py).

    ``prepare_for_serialization`` and ``post_compile`` are the ``OutputCode`` protocol the
    bundled cache entry calls: before pickling, and after loading in a new process. Fields
    derived from the pickled ones (per-call shortcuts, bound methods) are rebuilt by
    ``_derive``.
    """

    compiled: Any
    #: (op, warning) for each op that runs as its native kernel: a graph loaded from the
    #: cache warns as the compilation did (Note [Extern kernels])
    fallback_warnings: list[tuple[str, str]]

    def __init__(self, compiled: Any, fallback_warnings: Sequence[tuple[str, str]] = ()) -> None:
        self.compiled = compiled
        self.fallback_warnings = list(fallback_warnings)
        self._derive()

    def _derive(self) -> None:
        # An instance attribute: AOTAutograd wraps the backward in torch._dynamo.disable,
        # whose functools.wraps copies the instance's __dict__, not class attributes;
        # without it the wrapper is called unboxed (with a warning on every backward).
        self._boxed_call = True

    #: The attributes pickled (the others are rebuilt by ``_derive``).
    _SAVED: tuple[str, ...] = ("compiled", "fallback_warnings")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k in self._SAVED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._derive()

    # OutputCode is a dataclass, whose __eq__ compares its fields (and so makes instances
    # unhashable): two compiled graphs are the same only if they are the same object.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def prepare_for_serialization(self) -> None:
        # called on a shallow copy (BundledOutputCodeLoadable.pre_save): the graph in use keeps
        # its callable
        self.compiled = copy.copy(self.compiled)
        self.compiled.prepare_for_serialization()

    def post_compile(self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any) -> None:
        from torch._inductor.codecache import FxGraphCache

        from .._inductor_patches import inductor_patches
        from .retrace import warn_fallback

        # Reloading the graph's module builds (or finds on disk) its kernels: as the compile
        # built them (Note [Kernels built together]), so the libraries it left are found.
        with inductor_patches():
            graph, _ = FxGraphCache.cache_hit_post_compile(self.compiled, {}, constants)
        if graph is None:
            raise RuntimeError("torchcx: the code of a graph loaded from AOTAutograd's cache could not be reloaded")
        self.compiled = graph
        self._post_compile_graph(example_inputs, constants, graph_kwargs)
        for op, message in self.fallback_warnings:
            warn_fallback(op, message)

    def _post_compile_graph(self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any) -> None:
        self.compiled.post_compile(example_inputs, constants, graph_kwargs)


class BoundaryRuntime(_TorchcxOutputCode):
    """``compiled`` (the real graph's Inductor callable) with the boundary around it: what of
    the ``BoundarySpec`` a call needs, which (unlike the spec, made of the graph's nodes)
    pickles."""

    _SAVED = (
        *_TorchcxOutputCode._SAVED,
        "inputs",
        "constants",
        "mutated",
        "output_slot",
        "output_dtypes",
        "output_conj",
        "alias_replay",
        "replayed",
        "repeats",
        "base_sources",
        "output_strides",
        "regenerated",
    )

    def __init__(
        self,
        compiled: Any,
        spec: BoundarySpec,
        fallback_warnings: Sequence[tuple[str, str]] = (),
        output_strides: list[Any] | None = None,
        regenerated: dict[int, tuple[tuple[int, ...], torch.dtype]] | None = None,
    ) -> None:
        self.inputs: list[InputSpec] = list(spec.inputs)
        self.constants = list(spec.constants)
        self.mutated = spec.mutated
        self.output_slot = dict(spec.output_slot)
        self.output_dtypes = list(spec.output_dtypes)
        self.output_conj = list(spec.output_conj)
        self.alias_replay = spec.alias_replay
        self.replayed = spec.replayed
        self.repeats = dict(spec.repeats)
        self.base_sources = list(spec.base_sources)
        #: the complex outputs' strides, as reported to AOTAutograd when compiled (None where
        #: symbolic: AOTAutograd's traced strides), reported again when loaded from the cache
        self.output_strides = [
            s if s is None or all(isinstance(v, int) for v in s) else None for s in output_strides or []
        ]
        #: replayed output -> (shape, dtype): AOTAutograd regenerates each of the replayed outputs
        #: and reads only its shape (Note [Views AOTAutograd regenerates], in backend.py)
        self.regenerated = dict(regenerated or {})
        super().__init__(compiled, fallback_warnings)

    def _derive(self) -> None:
        super()._derive()
        # Per call, only what varies is looked at (small graphs run in microseconds, and
        # this wrapper is on every call): the complex inputs and how each crosses, and the
        # replay graph's generated code, called without nn.Module's call machinery.
        self._complex_inputs = [
            (i, s.conj, _layout.real_view(s.complex_dtype)) for i, s in enumerate(self.inputs) if s.complex_dtype
        ]
        self._real_inputs = [i for i, s in enumerate(self.inputs) if s.complex_dtype is None]
        self._outputs = [
            (self.output_slot[i], dtype, self.output_conj[i]) for i, dtype in enumerate(self.output_dtypes)
        ]
        self._placeholders = [
            (i, torch.empty(shape, dtype=dtype, device="meta")) for i, (shape, dtype) in self.regenerated.items()
        ]
        replay = None if self.regenerated else self.alias_replay
        if replay is not None and hasattr(replay, "real_recompile"):
            # Loaded from AOTAutograd's cache, the replay graph is a lazy GraphModule, whose
            # ``forward`` until recompiled is a stub that checks for recompilation and then calls
            # the module through nn.Module's __call__, on every call (about 8 us of the in-place
            # update's 50-70 us at 2^10 elements). Its generated forward is what we keep.
            replay.real_recompile()
        self._replay = replay.forward if replay is not None else None
        self._repeats = list(self.repeats.items())

    def _post_compile_graph(self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any) -> None:
        from .retrace import real_example_inputs

        context = torch._guards.TracingContext.try_get()
        # The real graph reports its outputs' strides; AOTAutograd reads the complex ones.
        with torch._guards.TracingContext.report_output_strides():
            if graph_kwargs.get("is_backward"):
                # given the forward's arguments, as AOTAutograd gives a stock backward
                self.compiled.post_compile(example_inputs, constants, graph_kwargs)
                return
            real_inputs = [*real_example_inputs(self.inputs, example_inputs), *self.constants]
            self.compiled.post_compile(real_inputs, constants, graph_kwargs)
        if context is not None and context.output_strides is not None:
            context.output_strides.extend(self.output_strides)

    def __call__(self, *call_args: Any) -> Any:
        # Boxed (one list, which we clear to free inputs early) or, from some of
        # AOTAutograd's backward paths, unboxed.
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        originals = list(args) if self._replay is not None else None
        real_args = list(args)
        for i, conj, real_view in self._complex_inputs:
            value = args[i]
            if value.is_conj() != conj:
                # A tangent need not have the conj bit AOTAutograd traced the backward with (that
                # of the forward's output: ihfft returns a conj view): give the graph the same values
                # in the traced form (a copy, only for this input). The copy keeps the tangent's
                # strides, which AOTAutograd has already made those the graph was compiled for
                # (resolve_conj would make it contiguous: a sliced FFT output's tangent failed
                # Inductor's stride assertion).
                value = _with_conj_bit(value, conj)
            real_args[i] = real_view(value.conj() if conj else value)
        written_back = _resolve_negations(args, real_args, self._real_inputs, self.mutated)
        args.clear()
        real_outs = self.compiled([*real_args, *self.constants] if self.constants else real_args)
        for value, resolved in written_back:
            value.copy_(resolved)
        results: list[Any] = [
            None if slot is None else _from_real(real_outs[slot], dtype, conj) for slot, dtype, conj in self._outputs
        ]
        for i, placeholder in self._placeholders:
            results[i] = placeholder
        if originals is not None:
            bases = [
                results[where] if kind == "output" else _from_real(real_outs[where], dtype, conj)
                for (kind, where), dtype, conj in self.base_sources
            ]
            for i, value in zip(self.replayed, self._replay(*originals, *bases)):
                results[i] = value
        for i, first in self._repeats:
            results[i] = results[first]  # the very tensor, as in eager
        return results


class RealGraphRuntime(_TorchcxOutputCode):
    """A graph with no complex value, compiled by Inductor as it is, called with its negated
    inputs resolved (``_resolve_negations``): ``b.imag`` of a conj input reaches the graph after
    a graph break as a real tensor with a negation bit, and Inductor read its memory, not the
    bit (``sigmoid(b.imag)`` came out as ``sigmoid(-b.imag)``; fuzzing run I, seed 21017; stock
    torch.compile does the same)."""

    _SAVED = (*_TorchcxOutputCode._SAVED, "mutated")

    def __init__(self, compiled: Any, mutated: frozenset[int]) -> None:
        self.mutated = mutated
        super().__init__(compiled)

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
