"""The ``torchcx`` torch.compile backend: complex programs lowered to real-only Inductor graphs.

Note [The compile pipeline]
---------------------------
1. Dynamo captures the user's function as an FX graph over native complex
   tensors (Dynamo itself handles complex values fine).
2. Inductor's ``compile_fx`` runs AOTAutograd on that graph, still in complex
   space: functionalization (in-place ops and views become functional ops;
   mutations of inputs become a ``copy_`` into the input at the end), autograd
   with PyTorch's own complex derivative formulas (eager's
   conjugate-Wirtinger convention), the partitioner and Inductor's
   decompositions. Being PyTorch's own machinery, it gives eager's semantics
   of mutation, aliasing and gradients.
3. Each graph it produces (inference, forward or backward) reaches
   ``_lower_and_compile`` instead of Inductor's inner compiler. The graph is
   functional, so only values matter (an inference graph's identical ops are
   merged first: Note [Loop-invariant values computed once]). Its boundary is
   read off it as data (``_boundary/spec.py``: how inputs cross, which outputs
   are computed and which replayed, what is written); then it is retraced (``_boundary/
   retrace.py``): every complex placeholder becomes a real tensor over the same
   memory (Note [Interleaved layouts]), every complex op runs through torchcx's
   op tables, complex results are packed back. The retraced graph holds no
   complex tensor; it goes to Inductor's ``compile_fx_inner``. Ops with no
   decomposition run as extern kernels (Note [Extern kernels]), with one
   warning naming the op (an error when strict). ``_boundary/report.py``
   records what happened for ``torchcx.explain``.
4. At run time a thin wrapper (``_boundary/runtime.py``) views complex inputs
   as real and real results as complex, both without copying. Outputs that are
   views of inputs are not computed by the kernel: they are replayed as views
   of the actual inputs, so they alias exactly as in eager.

Note [Real graphs get the adjustments too]
------------------------------------------
A graph with no complex value has nothing to lower, yet it is still torchcx's: a
program on ComplexTensors (planar parts, bfloat16 or float16 parts) reaches step 3
as a real graph, AOTAutograd having traced each subclass into its parts through
torchcx's op tables. Such graphs used to go to ``compile_fx_inner`` without the
Inductor adjustments of ``_inductor_patches``, and paid for what those work
around: ``torch.asin`` with bfloat16 parts traced its special-value blends as a
tree (Note [Shared subexpressions]), 46.6 s to compile against 5.7 s with them
(benchmarks/compile_time.py --ops --only parts); a group of 16 such ops, 184 s against 27 s (tests/test_lowp.py). Every graph the
backend compiles gets them now, a real program compiled with ``backend="torchcx"``
included: none changes what a graph computes, but Note [Accurate expm1], which
makes ``expm1`` agree with eager (a real ``expm1(1e-30)`` compiled through torchcx
was 0).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor
from torch.utils._pytree import tree_flatten

from . import config
from ._boundary.report import (
    CompileReport,
    GraphReport,
    graph_report,
    real_graph_report,
    record,
    record_rewrites,
)
from ._boundary.retrace import retrace
from ._boundary.runtime import BoundaryRuntime, RealGraphRuntime
from ._boundary.spec import BoundarySpec, boundary_spec, complex_output_strides, has_complex, written_inputs
from ._graph_passes import (
    aliases_dropped,
    gradients_in_input_layout,
    imaginary_exponentials,
    logical_masks,
    moves_on_words,
    native_gradients,
    push_conversions_into_cat,
    restore_addcdiv,
    scalar_factors_after_transforms,
    small_contractions_in_place,
    truncated_spectra,
)
from ._inductor_patches import inductor_patches, quiet_complex_warning, source_hash
from ._kernel_batches import one_library_per_graph
from .ops.extern import _op_from_name
from .tensor import ComplexTensor

__all__ = ["compile", "torchcx_backend", "CompileReport", "GraphReport"]


# -- entry points ----------------------------------------------------------------------------


def torchcx_backend(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    strict: bool | None = None,
    dynamic: bool | None = None,
    settings: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """The ``"torchcx"`` backend: ``torch.compile(f, backend="torchcx")``.

    ``mode`` and ``options`` are Inductor's (as for the default backend). ``settings``
    (``torchcx.config.compile_settings()``, the current ones if not given) hold for
    every graph of this compilation (Note [Settings are part of what was compiled]).
    """
    from torch._inductor.compile_fx import compile_fx

    patches: dict[str, Any] = {}
    if mode and mode != "default":
        from torch._inductor import list_mode_options

        patches.update(list_mode_options(mode, dynamic))
    patches.update(options or {})
    settings = config.compile_settings() if settings is None else settings
    inner = functools.partial(_lower_and_compile, strict=config.strict if strict is None else strict, settings=settings)
    # (the settings take effect in _lower_and_compile, AOTAutograd's complex-space tracing
    # here running no torchcx op; truncated_spectra alone rewrites Dynamo's graph, below)
    restore_addcdiv(gm)  # Note [Dynamo's addcdiv]
    rewrites: list[str] = []
    small_contractions_in_place(gm, rewrites)  # Note [Small contractions in place]
    native_gradients(gm, rewrites)  # Note [Native gradients]
    if settings["truncated_spectra"]:
        truncated_spectra(gm, rewrites)  # Note [Truncated spectra]
    record_rewrites(rewrites)
    # Note [Backward lowered with the forward]
    early_backward = torch._functorch.config.patch(force_non_lazy_backward_lowering=True)
    with (
        _aot_cache(example_inputs, settings, inner.keywords["strict"], patches),
        quiet_complex_warning(),
        early_backward,
    ):
        return compile_fx(
            gm,
            example_inputs,
            inner_compile=inner,
            config_patches=patches or None,
            decompositions=_complex_space_decompositions(),
        )


# Note [torchcx graphs in AOTAutograd's cache]
# ---------------------------------------------
# Inductor's FX graph cache alone leaves most of a second process's compile in place:
# Dynamo, AOTAutograd's tracing and torchcx's lowering run again before Inductor finds the
# real graph it compiled (quantum, 30 gates: 10.6 s of 11.1 s from a warm Inductor cache).
# AOTAutograd's own cache skips all but Dynamo; torchcx uses it, with these adjustments.
#
# * Bundled entries. AOTAutograd's default entry holds the FX graph cache key of the
#   compiled forward and backward and reloads them by it, which would return the bare real
#   graph without torchcx's boundary around it. Its bundled entry
#   (``bundled_autograd_cache``) pickles the compiled objects themselves: BoundaryRuntime
#   and RealGraphRuntime are ``OutputCode``s that pickle their Inductor graph and what of
#   the boundary a call needs, and reload the graph's code in ``post_compile``. Nothing is
#   saved where the flag is off (a runtime has no FX graph cache key), so no entry can
#   ever be loaded without its boundary.
# * The key. AOTAutograd keys an entry on Dynamo's graph, the inputs and the configs, not on
#   the inner compiler: a stock torch.compile of the same function saved an entry that
#   torchcx then loaded, unlowered. ``_aot_cache`` adds torchcx's identity to
#   ``torch.compiler.config.cache_key_tag``, which is part of the key: its version, a hash
#   of its source, every torchcx setting and ``strict``. The functions torchcx's passes put
#   in Dynamo's graph (``einsum_small_in_place``, the truncated transforms) and the
#   subclasses' constructors (a program that builds a ComplexTensor) are marked cacheable,
#   keyed by the same identity (Inductor's ``unsafe_marked_cacheable_functions``): without
#   them AOTAutograd bypasses its cache.
# * Training graphs. AOTAutograd saves their entry once it has compiled the backward, which
#   torchcx lowers with the forward, inside this compilation and so with the bundled flag
#   on (Note [Backward lowered with the forward]).
# * Inductor's FX graph cache kept. With the bundled flag on, compile_fx skips the FX graph
#   cache; torchcx's inner compile turns the flag off around ``compile_fx_inner``, so a
#   program whose entry is missing (a forward never differentiated saves none) still finds
#   its real graphs there.
#
# Off where AOTAutograd's cache is (``torch._functorch.config.enable_autograd_cache``,
# ``TORCHINDUCTOR_AUTOGRAD_CACHE=0``, ``torch.compiler.config.force_disable_caches``) or
# Inductor's FX graph cache is. The extern-kernel warnings a graph gave when lowered are
# given again when it is loaded; ``torchcx.explain`` compiles with the cache off, so that
# it reports a lowering it saw. tests/test_compile_cache.py checks, in new processes, that
# a second process loads instead of lowering, with eager's values and aliasing, and that a
# training step is lowered again, with eager's gradients.


@contextlib.contextmanager
def _aot_cache(
    example_inputs: Sequence[Any], settings: dict[str, Any], strict: bool, inductor_patches: dict[str, Any]
) -> Iterator[None]:
    """Note [torchcx graphs in AOTAutograd's cache] for one compilation: torchcx's identity in
    the key, its functions marked cacheable (in ``inductor_patches``, compile_fx's), bundled
    entries (for a graph AOTAutograd will differentiate, also when its backward is compiled).
    Nothing where the cache is off."""
    from torch._functorch._aot_autograd.autograd_cache import should_use_local_autograd_cache
    from torch._inductor.utils import should_use_remote_fx_graph_cache

    fx_cache = torch._inductor.config.fx_graph_cache or should_use_remote_fx_graph_cache()
    if not (should_use_local_autograd_cache() and fx_cache):
        yield
        return
    from ._graph_passes import DYNAMO_GRAPH_FUNCTIONS
    from .tensor import RealView

    identity = hashlib.sha256(
        repr((source_hash(), sorted(settings.items()), strict, sorted(config.all_settings().items()))).encode()
    ).hexdigest()
    # the subclasses' constructors are in the graph of a program that builds them
    in_graphs = (*DYNAMO_GRAPH_FUNCTIONS, ComplexTensor, RealView)
    inductor_patches["unsafe_marked_cacheable_functions"] = {
        **torch._inductor.config.unsafe_marked_cacheable_functions,
        **{f"{f.__module__}.{f.__name__}": identity for f in in_graphs},
    }
    tag = f"{torch.compiler.config.cache_key_tag}|torchcx-{identity}"
    with (
        torch.compiler.config.patch(cache_key_tag=tag),
        torch._functorch.config.patch(bundled_autograd_cache=True),
    ):
        yield


#: Inductor decompositions that torchcx's tables replace in complex space: ``add``
#: of two complex tensors becomes a real add over ``view(dtype)`` of interleaved
#: memory (a trick for Inductor's own complex fallback), ``angle`` special-cases nan,
#: ``lerp`` compares a Python complex weight with 0.5 (a TypeError), ``sgn`` divides
#: by ``abs`` as a complex division (nan for a subnormal |z|; torchcx's divides the
#: parts by the real |z|).
_REPLACED_DECOMPOSITIONS = ("add", "angle", "lerp", "sgn")


def _complex_space_decompositions() -> dict[Any, Callable[..., Any]]:
    """The decompositions AOTAutograd applies before lowering (step 2 of the pipeline)."""
    from torch._inductor.decomposition import select_decomp_table

    replaced = {getattr(torch.ops.aten, name) for name in _REPLACED_DECOMPOSITIONS}
    table = {
        # Replaced only for complex arguments: a graph with no complex value skips the
        # lowering and goes to Inductor as it is, whose lowering asserts that every
        # op in its own table was decomposed (``sgn``/``lerp`` of real tensors failed).
        op: (_unless_complex(fn) if getattr(op, "overloadpacket", None) in replaced else fn)
        for op, fn in select_decomp_table().items()
    }
    table[torch.ops.aten.view_as_complex.default] = _view_as_complex_of_bfloat16
    return table


def _unless_complex(decomposition: Callable[..., Any]) -> Callable[..., Any]:
    """``decomposition``, declined (``NotImplemented``: the op stays) when an argument is complex."""

    def decompose(*args: Any, **kwargs: Any) -> Any:
        values = tree_flatten((args, kwargs))[0]
        if any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex()) for v in values):
            return NotImplemented
        return decomposition(*args, **kwargs)

    return decompose


def _view_as_complex_of_bfloat16(x: Tensor) -> Any:
    """``view_as_complex`` of a bfloat16 pair: a ComplexTensor of its two halves.

    Torch has no complex dtype with bfloat16 parts, so the native op raises,
    yet autograd calls it: the backward of ``view_as_real`` (which ``.real``,
    ``.imag`` and ``view_as_real`` of a ComplexTensor with bfloat16 parts
    record) is ``view_as_complex(grad)``. Other dtypes keep the native op.
    """
    if x.dtype != torch.bfloat16:
        return NotImplemented
    return ComplexTensor(x.select(-1, 0), x.select(-1, 1))


class _Backend:
    """torchcx_backend with options bound; compares equal when the options do (Dynamo caches on it)."""

    def __init__(self, strict: bool, mode: str | None, options: dict[str, Any] | None, dynamic: bool | None) -> None:
        self.strict, self.mode, self.options, self.dynamic = strict, mode, options, dynamic
        self.settings = config.compile_settings()  # Note [Settings are part of what was compiled]

    def __call__(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        return torchcx_backend(
            gm,
            example_inputs,
            mode=self.mode,
            options=self.options,
            strict=self.strict,
            dynamic=self.dynamic,
            settings=self.settings,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Backend) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.strict, self.mode, self.dynamic, *self.settings.values()))


def compile(  # noqa: A001  (mirrors torch.compile)
    fn: Callable[..., Any] | None = None,
    *,
    strict: bool = False,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    **torch_compile_kwargs: Any,
) -> Any:
    """``torch.compile`` with complex values lowered to real-only Inductor graphs.

    Works on functions and ``nn.Module``s, as a call or a decorator
    (``@torchcx.compile`` or ``@torchcx.compile(strict=True)``). ``fullgraph``,
    ``dynamic``, ``mode``, ``options`` and the other ``torch.compile`` keywords
    pass through. An op torchcx cannot decompose runs as the native kernel with
    one warning naming it; ``strict=True`` makes that an error.
    """
    if fn is None:
        return lambda f: compile(f, strict=strict, mode=mode, options=options, **torch_compile_kwargs)
    backend = _Backend(strict, mode, options, torch_compile_kwargs.get("dynamic"))
    return torch.compile(fn, backend=backend, **torch_compile_kwargs)


# -- lowering one functional graph -----------------------------------------------------------


def _graph_kind(kwargs: dict[str, Any]) -> str:
    if kwargs.get("is_backward"):
        return "backward"
    return "inference" if kwargs.get("is_inference") else "forward"


# Note [Backward lowered with the forward]
# -----------------------------------------
# AOTAutograd lowers a training graph's backward at the first ``backward()`` by default.
# torchcx lowers it right after the forward (``force_non_lazy_backward_lowering``), while
# the forward's C++ kernels build in the background (Note [Kernels built together]: a
# module binds its kernels at their first call, not when it is loaded): Inductor's code
# generation for the backward, in Python, overlaps the forward's g++ run, and the
# backward's g++ run the forward's on a second core. Single ops, forward and backward,
# cold (2 cores, medians of 4 processes alternating with the lazy lowering, 2026-12-06):
# ``sub`` 1.82 -> 1.05 s, ``sin`` 2.36 -> 1.71 s, ``acos`` 4.15 -> 2.45 s, ``bmm``
# 2.77 -> 1.84 s. A forward that is never differentiated pays the backward's lowering
# (not its g++ run, which is never waited for): a program run for inference should run
# under ``torch.no_grad()`` or ``torch.inference_mode()``, where AOTAutograd makes no
# backward.
#
# Lowered with the forward, the backward would reuse the buffers of saved tensors for its
# results ("donated buffers"), and ``backward(retain_graph=True)`` or ``create_graph=True``
# then raises. Lowered lazily, AOTAutograd knows at the first ``backward()`` whether the
# graph is kept and donates only if it is not (a later ``retain_graph=True`` raises there
# too). torchcx donates none: eager's semantics whatever the calls (the saved buffers
# are freed as the backward ends anyway; the FNO step measured the same within 1%).
# A backward that fails to lower now fails the forward's compilation, as stock
# ``torch.compile`` does for a graph that saves sizes for its backward.


def _lower_and_compile(
    gm: fx.GraphModule, example_inputs: Sequence[Any], *, strict: bool, settings: dict[str, Any], **kwargs: Any
) -> Callable[..., Any]:
    """torchcx's inner compiler: lower complex to real, then Inductor's compile_fx_inner.

    ``settings`` hold in the graph's lowering (Note [Settings are part of what was compiled]).
    """
    with config.patch(**settings):
        return _lower_and_compile_now(gm, example_inputs, strict=strict, **kwargs)


#: The forward's example inputs, per compilation (its TracingContext), for the backward lowered
#: after it (Note [Gradients in their inputs' layout]).
_FORWARD_INPUTS: weakref.WeakKeyDictionary[Any, Sequence[Any]] = weakref.WeakKeyDictionary()


def _libraries(kind: str) -> contextlib.AbstractContextManager[None]:
    """A forward's kernels as one library: its backward is lowered next (Note [Kernels built
    together] in _kernel_batches.py)."""
    return one_library_per_graph() if kind == "forward" else contextlib.nullcontext()


def _no_donated_buffers() -> None:
    """No saved tensor's buffer reused by the backward being lowered (Note [Backward lowered
    with the forward]). The list is AOTAutograd's forward metadata's, which its runtime reads
    too (and which it shares with the metadata of a program on subclasses): emptied in place."""
    context = torch._guards.TracingContext.try_get()
    donated = getattr(getattr(context, "fw_metadata", None), "bw_donated_idxs", None)
    if donated:
        donated.clear()


def _lower_and_compile_now(
    gm: fx.GraphModule, example_inputs: Sequence[Any], *, strict: bool, **kwargs: Any
) -> Callable[..., Any]:
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table

    # The graphs compiled below hold no complex values, where our decomposition table
    # (_complex_space_decompositions) and Inductor's differ: give them Inductor's own, a
    # module-level function the FX graph cache can key (ours holds unpicklable builtins,
    # which made Inductor bypass its cache for every torchcx graph).
    kwargs = {**kwargs, "get_decomp_fn": select_decomp_table}
    kind = _graph_kind(kwargs)
    context = torch._guards.TracingContext.try_get()
    if kind == "forward" and context is not None:
        _FORWARD_INPUTS[context] = list(example_inputs)
    if kind == "backward":
        _no_donated_buffers()  # Note [Backward lowered with the forward]
        forward_inputs = _FORWARD_INPUTS.get(context) if context is not None else None
        if forward_inputs is not None:
            gradients_in_input_layout(gm, forward_inputs)  # Note [Gradients in their inputs' layout]
    if not any(has_complex(n.meta.get("val")) for n in gm.graph.nodes):
        # No complex value, nothing to lower: a program on ComplexTensors (planar or
        # bfloat16 parts, which AOTAutograd traced into their parts through torchcx's op
        # tables), or a real subgraph; Note [Real graphs get the adjustments too].
        record(real_graph_report(kind, example_inputs))
        with inductor_patches(), _fx_graph_cache_kept(gm), _libraries(kind):
            compiled = compile_fx_inner(gm, example_inputs, **kwargs)
        return RealGraphRuntime(compiled, written_inputs(gm))

    if kind == "inference":
        if not _draws_random_numbers(gm):
            _common_subexpressions_once(gm)  # Note [Loop-invariant values computed once]
    scalar_factors_after_transforms(gm)  # Note [Scalar factors after transforms]
    spec = boundary_spec(gm, example_inputs, input_outputs=_input_outputs(kind))
    real = retrace(gm, spec, example_inputs, strict=strict, inline_regions=kind == "backward")
    imaginary_exponentials(real.gm)  # Note [Exponentials of imaginary numbers]
    push_conversions_into_cat(real.gm)
    logical_masks(real.gm)
    moves_on_words(real.gm)  # Note [Moves on words]
    aliases_dropped(real.gm)  # Note [Aliases dropped before Inductor]
    if _draws_random_numbers(real.gm):
        _random_numbers_drawn_by_inductor(real.gm)  # (and not merged: two draws are not one)
    elif _MERGE_REAL_GRAPHS:
        _common_subexpressions_once(real.gm)  # Note [Real graphs merged]
    output_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    visible = output_node.meta.get("user_visible_output_idxs")
    if visible is not None:
        real_output = next(n for n in reversed(real.gm.graph.nodes) if n.op == "output")
        real_output.meta["user_visible_output_idxs"] = [
            spec.output_slot[i] for i in visible if spec.output_slot.get(i) is not None
        ]
    record(graph_report(kind, spec, example_inputs, real))
    outer = torch._guards.TracingContext.try_get()
    outer_strides = outer.output_strides if outer is not None else None
    with torch._guards.TracingContext.report_output_strides() as real_strides:
        with inductor_patches(), _fx_graph_cache_kept(real.gm), _libraries(kind):
            compiled = compile_fx_inner(real.gm, real.example_inputs, **kwargs)
    strides = None
    if outer_strides is not None and real_strides is not None:
        # AOTAutograd reads the strides of the *complex* outputs: translate ours.
        strides = complex_output_strides(spec, real_strides)
        outer_strides.extend(strides)
    regenerated = _regenerated_shapes(spec, _outputs_aot_regenerates(kind))
    return BoundaryRuntime(compiled, spec, real.fallback_warnings, strides, regenerated)


# Note [Loop-invariant values computed once]
# -------------------------------------------
# Dynamo unrolls a Python loop, so a value the loop body recomputes from the same inputs
# each time (the split-step solver's dispersion phase ``exp(-1j * k**2 * dt / 2)``) appears
# once per iteration in the graph. AOTAutograd merges such duplicates in a training graph
# (its partitioner runs ``fx_graph_cse`` on the joint graph) but not in an inference graph,
# and each complex op lowers to tens of real nodes (115 for that phase), which Inductor
# then lowers, schedules and generates code for, once per iteration: the 20-step solver's
# real graph had 4283 nodes, half of them its phase computed 20 times. torchcx merges them
# in the complex graph first, with the same pass (it leaves random ops, ``empty`` and
# outputs' storages alone, and respects mutation regions). A merged op computed the same
# value from the same operands, so results are bitwise those of the unmerged graph; the
# kernel computes the phase once instead of once per step. Training graphs need not: the
# partitioner merged their joint graph already.
#
# Note [Real graphs merged]
# -------------------------
# The lowering repeats itself too: each complex op's real arithmetic tests its operands'
# parts for nan, infinity and zero in its own blends (``isnan(re)``, ``abs(re)``, ``re == 0``
# again and again), and a forward and backward graph repeat that per op. The real graph
# of ``ldexp``'s forward had 229 nodes, 132 of them distinct; ``true_divide`` 210 and 121;
# ``pow`` 562 and 449. Inductor's code generation merges the repeats within a kernel, but
# lowers, schedules and traces every node first, a cost per node (issue #14). The same
# pass merges them in every real graph before Inductor sees it. A graph that draws random
# numbers (an aten op or an extern call tagged ``nondeterministic_seeded``) is left as it
# is: two draws are not one.


#: Switches Note [Real graphs merged] off when False (benchmarks/graph_merges.py only).
_MERGE_REAL_GRAPHS: bool = True


def _draws_random_numbers(gm: fx.GraphModule) -> bool:
    """Whether ``gm`` calls a random op (an aten op, or an extern call of one, tagged
    ``nondeterministic_seeded``): such a graph is not merged."""
    for node in gm.graph.nodes:
        target = node.target if node.op == "call_function" else None
        if target is torch.ops.torchcx.extern.default:
            target = _op_from_name(node.args[0])
        if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
            return True
    return False


def _random_numbers_drawn_by_inductor(gm: fx.GraphModule) -> None:
    """The real graph's random ops (a complex ``randn`` draws its parts with real ones) as
    Inductor's own: it replaces them in its joint-graph passes, which ran on the complex graph
    before the lowering made them, and its lowering rejects the rest (stock torch.compile's
    random numbers are drawn the same way; ``fallback_random`` keeps eager's kernels)."""
    from torch._inductor.fx_passes.replace_random import replace_random_passes

    if replace_random_passes(gm):
        gm.recompile()


def _common_subexpressions_once(gm: fx.GraphModule) -> None:
    """Note [Loop-invariant values computed once], Note [Real graphs merged]: merge identical
    ops (of a graph that draws no random numbers: ``_draws_random_numbers``)."""
    from torch._functorch.compile_utils import fx_graph_cse

    graph = fx_graph_cse(gm.graph)
    if len(graph.nodes) < len(gm.graph.nodes):
        gm.graph = graph
        gm.recompile()


def _fx_graph_cache_kept(gm: fx.GraphModule) -> Any:
    """Inductor's FX graph cache for the real graph ``gm``, which compile_fx skips while
    AOTAutograd bundles its entry (Note [torchcx graphs in AOTAutograd's cache]). Not for a
    graph that calls nothing: without the flag compile_fx_inner returns its Python code,
    which a bundled entry cannot pickle (nor is there anything to cache)."""
    if not any("call" in n.op for n in gm.graph.nodes):  # (compile_fx_inner's count_calls)
        return contextlib.nullcontext()
    return torch._functorch.config.patch(bundled_autograd_cache=False)


def _user_output_info(kind: str) -> dict[int, Any] | None:
    """Graph output index -> AOTAutograd's ``OutputAliasInfo`` for each user output of the
    forward or inference graph being compiled; None where its metadata is not at hand."""
    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if kind == "backward" or meta is None:
        return None
    first = meta.num_mutated_inp_runtime_indices  # the graph returns those inputs' new values first
    return {first + k: info for k, info in enumerate(meta.output_info)}


def _input_outputs(kind: str) -> dict[int, int | None] | None:
    """Graph output index -> input index for each user output: the input AOTAutograd returns it
    as (or a view of), None for an output that aliases no input (Note [Written inputs
    returned]); None where its metadata is not at hand."""
    from torch._functorch._aot_autograd.schemas import OutputType

    infos = _user_output_info(kind)
    if infos is None:
        return None
    aliases = (OutputType.is_input, OutputType.alias_of_input)
    return {
        i: info.base_idx if info.output_type in aliases and isinstance(info.base_idx, int) else None
        for i, info in infos.items()
    }


# Note [Views AOTAutograd regenerates]
# ------------------------------------
# ``x.mul_(p); return x[:, ::2]``: the output is a view of an input, which the run time
# replays on the input after the kernel (Note [Written inputs returned]). In an inference
# graph AOTAutograd then regenerates that output itself, from the same input: it replays
# the view functions functionalization recorded (``gen_alias_from_base``) and reads only
# the shape of what the compiled graph returned, to check its own result. Where its
# metadata says it will do so for every replayed output (the output is the input, or a view
# of it with recorded view functions of no symbolic argument, and view replay is on), the
# run time returns a meta tensor of the output's shape in that slot instead of replaying
# the views: the in-place update's call at 2^10 elements took 23.4 us against 28.1 us
# replaying them (one thread, 2026-12-07, ``python benchmarks/call_overhead.py``). The
# result is AOTAutograd's regenerated view either way. Training graphs and symbolic shapes
# keep the replay.


def _outputs_aot_regenerates(kind: str) -> frozenset[int]:
    """Graph output indices AOTAutograd's inference run time recomputes from an input without
    reading their values (Note [Views AOTAutograd regenerates])."""
    from torch._functorch._aot_autograd.schemas import OutputType

    infos = _user_output_info(kind)
    if kind != "inference" or infos is None or not torch._functorch.config.view_replay_for_aliased_outputs:
        return frozenset()
    return frozenset(
        i
        for i, info in infos.items()
        if info.output_type is OutputType.is_input
        or (
            info.output_type is OutputType.alias_of_input
            and info.view_meta_sequence is not None
            and not any(v.has_symbolic_inputs for v in info.view_meta_sequence.sequence)
        )
    )


def _regenerated_shapes(spec: BoundarySpec, regenerated: frozenset[int]) -> dict[int, tuple[tuple[int, ...], Any]]:
    """Output index -> (shape, dtype) of the placeholder the run time returns in place of each
    replayed output, if AOTAutograd regenerates all of them and their shapes are static; else
    nothing (Note [Views AOTAutograd regenerates])."""
    shapes = {}
    for i in spec.replayed:
        value = spec.outputs[i].meta.get("val") if isinstance(spec.outputs[i], fx.Node) else None
        if i not in regenerated or not isinstance(value, torch.Tensor):
            return {}
        if not all(isinstance(d, int) for d in value.shape):
            return {}
        shapes[i] = (tuple(value.shape), value.dtype)
    return shapes


def _register_backend() -> None:
    """Make ``backend="torchcx"`` work after ``import torchcx``.

    Installed packages are also found through the ``torch_dynamo_backends``
    entry point without any import. When Dynamo has already discovered that
    entry point, it registers the backend itself on first lookup (registering
    here too would make its lookup fail on a duplicate name).
    """
    from torch._dynamo.backends import registry

    if "torchcx" in registry._COMPILER_FNS:
        return
    if registry._BACKENDS.get("torchcx") is not None:
        return
    registry.register_backend(compiler_fn=torchcx_backend, name="torchcx")
