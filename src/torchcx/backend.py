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
   functional, so only values matter: every complex placeholder becomes a real
   tensor over the same memory (Note [Interleaved layouts]), every complex op
   is retraced through torchcx's op tables, complex results are packed back.
   The retraced graph holds no complex tensor; it goes to Inductor's
   ``compile_fx_inner``. Ops with no decomposition run as extern kernels
   (Note [Extern kernels]), with one warning naming the op (an error when
   strict).
4. At run time a thin wrapper views complex inputs as real and real results
   as complex, both without copying. Outputs that are views of inputs are not
   computed by the kernel: they are replayed as views of the actual inputs, so
   they alias exactly as in eager.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._pytree import tree_flatten, tree_map

from . import _layout, config
from ._graph_passes import push_conversions_into_cat
from ._inductor_patches import inductor_patches, quiet_complex_warning
from .ops import dispatch, resolve
from .ops._registry import describe_args
from .ops.extern import _op_from_name, call_extern
from .tensor import ComplexTensor, RealView

__all__ = ["compile", "torchcx_backend", "CompileReport", "GraphReport"]


# -- reports (what torchcx.explain shows) ------------------------------------------------------


@dataclass
class GraphReport:
    """What happened to one graph AOTAutograd handed to torchcx."""

    kind: str  # "inference", "forward" or "backward"
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    lowered: dict[str, str] = field(default_factory=dict)  # complex op -> implementation
    externs: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    complex_nodes_after: list[str] = field(default_factory=list)
    real_graph: fx.GraphModule | None = None

    @property
    def real_only(self) -> bool:
        return not self.complex_nodes_after


@dataclass
class CompileReport:
    graphs: list[GraphReport] = field(default_factory=list)


_ACTIVE_REPORTS: list[CompileReport] = []


def _record(graph: GraphReport) -> None:
    for report in _ACTIVE_REPORTS:
        report.graphs.append(graph)


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
    # (the settings take effect in _lower_and_compile: AOTAutograd's complex-space tracing
    # here runs no torchcx op)
    with torch._functorch.config.patch(enable_autograd_cache=False), quiet_complex_warning():
        return compile_fx(
            gm,
            example_inputs,
            inner_compile=inner,
            config_patches=patches or None,
            decompositions=_complex_space_decompositions(),
        )


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


def _has_complex(x: Any) -> bool:
    return any(isinstance(t, Tensor) and t.is_complex() for t in tree_flatten(x)[0])


def _graph_kind(kwargs: dict[str, Any]) -> str:
    if kwargs.get("is_backward"):
        return "backward"
    return "inference" if kwargs.get("is_inference") else "forward"


def _lower_and_compile(
    gm: fx.GraphModule, example_inputs: Sequence[Any], *, strict: bool, settings: dict[str, Any], **kwargs: Any
) -> Callable[..., Any]:
    """torchcx's inner compiler: lower complex to real, then Inductor's compile_fx_inner.

    A backward graph is compiled at the first backward call, after ``torchcx_backend``
    returned: ``settings`` are applied here again.
    """
    with config.patch(**settings):
        return _lower_and_compile_now(gm, example_inputs, strict=strict, **kwargs)


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
    report = GraphReport(kind=_graph_kind(kwargs))
    output_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    if not any(_has_complex(n.meta.get("val")) for n in gm.graph.nodes):
        report.inputs = [_describe_value(v) for v in example_inputs]
        _record(report)
        return compile_fx_inner(gm, example_inputs, **kwargs)

    lowering = _Lowering(gm, example_inputs, strict=strict, report=report)
    real_gm, real_inputs = lowering.trace()
    push_conversions_into_cat(real_gm)
    real_output = next(n for n in reversed(real_gm.graph.nodes) if n.op == "output")
    visible = output_node.meta.get("user_visible_output_idxs")
    if visible is not None:
        real_output.meta["user_visible_output_idxs"] = [
            lowering.output_slot[i] for i in visible if lowering.output_slot.get(i) is not None
        ]
    report.real_graph = real_gm
    report.externs = _extern_calls(real_gm, report.fallbacks)
    report.complex_nodes_after = [
        f"{n.name}: {n.target}" for n in real_gm.graph.nodes if _has_complex(n.meta.get("val"))
    ]
    _record(report)
    outer = torch._guards.TracingContext.try_get()
    outer_strides = outer.output_strides if outer is not None else None
    with torch._guards.TracingContext.report_output_strides() as real_strides:
        with inductor_patches():
            compiled = compile_fx_inner(real_gm, real_inputs, **kwargs)
    if outer_strides is not None and real_strides is not None:
        # AOTAutograd reads the strides of the *complex* outputs: translate ours.
        outer_strides.extend(lowering.complex_output_strides(real_strides))
    return _Runtime(compiled, lowering)


@dataclass
class _Input:
    """How one graph input crosses the boundary."""

    complex_dtype: torch.dtype | None  # None: passed as it is
    conj: bool = False  # a conjugated view: pass the unconjugated memory, negate im inside
    # torchcx.export's layout: (re, im) pairs of these parts along a trailing dim of 2
    # (view_as_real's), instead of Note [Interleaved layouts]'s
    pairs_of: torch.dtype | None = None


class _Lowering:
    """Retraces a functional complex graph into a real one (Note [The compile pipeline], step 3)."""

    def __init__(
        self,
        gm: fx.GraphModule,
        example_inputs: Sequence[Any],
        *,
        strict: bool,
        report: GraphReport,
        pairs_of: Sequence[torch.dtype | None] | None = None,
    ) -> None:
        """``pairs_of`` (torchcx.export): every complex input and output crosses as (re, im)
        pairs, input i's with parts ``pairs_of[i]``, and every output is computed (there is
        no run time to replay views on)."""
        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.strict = strict
        self.report = report
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.pairs = pairs_of is not None
        # nested compile region identifier -> its real lowering (Note [Nested compile regions])
        self.regions: dict[str, fx.GraphModule] = {}
        if pairs_of is not None:
            self.inputs = [
                _Input(v.dtype, pairs_of=part) if part is not None else _Input(None)
                for v, part in zip(self.example_inputs, pairs_of)
            ]
        else:
            self.inputs = [self._input_of(v) for v in self.example_inputs]
        out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        self.outputs: list[Any] = list(out.args[0])
        # A mutated input's new value -> the input: after the call the input holds it, so a
        # view of the new value is that view of the input (``x.mul_(p); return x[:, ::2]``),
        # replayed on it at run time instead of being computed and packed a second time.
        self.written_back = self._written_back()
        # graph output index -> placeholder index for outputs that are views of an input
        self.aliases = {i: p for i, o in enumerate(self.outputs) if (p := self._aliased_input(o)) is not None}
        # Note [Outputs that alias each other]: outputs that view a complex value another output
        # also reaches, replayed at run time as views of one base (an output, or a hidden one).
        self.shared_views, self.bases = self._shared_views()
        if self.pairs:
            self.aliases, self.shared_views, self.bases = {}, {}, []
        self.replayed = sorted({*self.aliases, *self.shared_views})
        # graph output index -> index among the real graph's outputs (None for replayed ones);
        # hidden bases follow the graph's outputs among the real ones
        self.output_slot: dict[int, int | None] = {}
        slot = 0
        for i in range(len(self.outputs)):
            if i in self.replayed:
                self.output_slot[i] = None
            else:
                self.output_slot[i] = slot
                slot += 1
        self.hidden_bases = [b for b in self.bases if b not in self.outputs]
        self.hidden_slot = {b: slot + k for k, b in enumerate(self.hidden_bases)}
        self.output_dtypes = [self._complex_dtype_of(o) for o in self.outputs]
        # Outputs that are conjugated views of an intermediate (AOTAutograd saves
        # ``_conj(exp)`` for exp's backward): the kernel writes the unconjugated
        # values and the run time sets the conj bit, so the tensor has the
        # metadata AOTAutograd traced (the backward graph reads it as a conj view).
        self.output_conj = [self._is_conj(o) for o in self.outputs]
        self.mutated = {
            self.placeholders.index(n.args[0])
            for n in gm.graph.nodes
            if n.target is torch.ops.aten.copy_.default and n.args[0] in self.placeholders
        }
        report.outputs = [self._describe_output(i, o) for i, o in enumerate(self.outputs)]
        self.alias_replay = (
            _alias_replay(
                gm,
                [*self.placeholders, *self.bases],
                {i: self.outputs[i] for i in self.replayed},
                {v: p for v, p in self.written_back.items() if v not in self.bases},
            )
            if self.replayed
            else None
        )
        # where the run time finds each base's value: ("output", graph output index) or ("hidden", real slot)
        self.base_sources = [
            ("output", self.outputs.index(b)) if b in self.outputs else ("hidden", self.hidden_slot[b])
            for b in self.bases
        ]
        self.base_dtypes = [self._complex_dtype_of(b) for b in self.bases]
        self.base_conj = [self._is_conj(b) for b in self.bases]

    # -- inputs and outputs

    @staticmethod
    def _input_of(value: Any) -> _Input:
        if isinstance(value, Tensor) and value.is_complex():
            return _Input(value.dtype, conj=value.is_conj())
        return _Input(None)

    @staticmethod
    def _is_conj(node: Any) -> bool:
        val = node.meta.get("val") if isinstance(node, fx.Node) else None
        return isinstance(val, Tensor) and val.is_complex() and val.is_conj()

    @staticmethod
    def _complex_dtype_of(node: Any) -> torch.dtype | None:
        val = node.meta.get("val") if isinstance(node, fx.Node) else None
        if val is None and isinstance(node, fx.Node) and node.target is torch.ops.aten.empty_strided.default:
            # Inductor's stand-in for a meta output (joint_graph.remove_no_ops) has no "val"
            dtype = node.kwargs.get("dtype")
            return dtype if isinstance(dtype, torch.dtype) and dtype.is_complex else None
        return val.dtype if isinstance(val, Tensor) and val.is_complex() else None

    def _written_back(self) -> dict[fx.Node, fx.Node]:
        """{new value: placeholder} for the inputs the graph writes (functionalization's ``copy_``)."""
        found: dict[fx.Node, fx.Node] = {}
        for n in self.gm.graph.nodes:
            if n.target is not torch.ops.aten.copy_.default or n.args[0] not in self.placeholders:
                continue
            value, target = n.args[1], n.args[0]
            new, old = (x.meta.get("val") if isinstance(x, fx.Node) else None for x in (value, target))
            if isinstance(new, Tensor) and isinstance(old, Tensor) and (new.shape, new.dtype) == (old.shape, old.dtype):
                found.setdefault(value, target)
        return found

    def _aliased_input(self, node: Any) -> int | None:
        """The placeholder index ``node`` is a (chain of) view(s) of, if any: of the input itself,
        or of the new value the graph writes into it."""
        root = self._view_root(node)
        root = self.written_back.get(root, root)
        return self.placeholders.index(root) if isinstance(root, fx.Node) and root.op == "placeholder" else None

    @staticmethod
    def _view_root(node: Any) -> Any:
        """The value ``node`` is a (chain of) view(s) of: ``node`` itself if it is no view."""
        while isinstance(node, fx.Node) and node.op == "call_function":
            if node.target is operator.getitem and isinstance(node.args[0], fx.Node):
                source = node.args[0]
                if not (source.op == "call_function" and _is_view(source.target)):
                    return node  # an element of a multi-output op that is not a view
                node = source
                continue
            if not _is_view(node.target):
                return node
            node = node.args[0]
        return node

    def _shared_views(self) -> tuple[dict[int, fx.Node], list[fx.Node]]:
        """Outputs that are views of a complex computed value that another output also reaches.

        Eager (and Inductor, for real graphs) returns them as views of one buffer; packing each
        output on its own would give each its own buffer (Note [Outputs that alias each other]).
        Returns (output index -> base node, the bases in order).
        """
        roots = [self._view_root(o) for o in self.outputs]
        reach: dict[fx.Node, int] = {}
        for root in roots:
            if isinstance(root, fx.Node) and root.op == "call_function":
                reach[root] = reach.get(root, 0) + 1
        views: dict[int, fx.Node] = {}
        for i, (o, root) in enumerate(zip(self.outputs, roots)):
            # (an output that is an earlier output's very node, ``v1 = v0.add_(a); return v1, v0``,
            # is that output's tensor in eager: replayed as the identity view of it)
            repeated = o is root and o in self.outputs[:i]
            if i in self.aliases or (o is root and not repeated) or reach.get(root, 0) < 2:
                continue
            if self._complex_dtype_of(root) is None:
                continue  # real views of a real value stay in the real graph, where Inductor keeps them
            views[i] = root
        bases = list(dict.fromkeys(views.values()))
        return views, bases

    def complex_output_strides(self, real_strides: list[Any]) -> list[Any]:
        """Strides of the graph's outputs, from those Inductor reports for the real outputs."""
        result = []
        for i, dtype in enumerate(self.output_dtypes):
            slot = self.output_slot[i]
            strides = real_strides[slot] if slot is not None and slot < len(real_strides) else None
            if strides is not None and dtype is not None and not _layout.uses_words(dtype):
                strides = tuple(s // 2 for s in strides[:-1])  # float pairs: drop the pair dim
            result.append(strides)
        return result

    def real_example_inputs(self) -> list[Any]:
        reals = []
        for value, spec in zip(self.example_inputs, self.inputs):
            if spec.complex_dtype is None:
                reals.append(value)
            elif spec.pairs_of is not None:
                reals.append(torch.view_as_real(value.resolve_conj()).to(spec.pairs_of))
            else:
                reals.append(_layout.to_real(value.conj() if spec.conj else value))
        return reals

    # -- tracing

    def trace(self, decompositions: dict[Any, Callable[..., Any]] | None = None) -> tuple[fx.GraphModule, list[Any]]:
        """The real graph and its example inputs. ``decompositions``: Inductor's by default (an
        exported graph keeps the aten ops torchcx's implementations call: its targets decompose)."""
        from torch._guards import detect_fake_mode
        from torch._inductor.decomposition import select_decomp_table
        from torch.fx.experimental.proxy_tensor import make_fx

        real_inputs = self.real_example_inputs()
        self.report.inputs = [
            self._describe_input(i, v, s) for i, (v, s) in enumerate(zip(self.example_inputs, self.inputs))
        ]
        fake_mode = detect_fake_mode(real_inputs)
        # Tensor constants (get_attr) become extra inputs of the real graph, complex
        # ones as their two parts: the retrace runs under AOTAutograd's fake mode,
        # which only takes fake tensors.
        self.constants = self._constants()
        with fake_mode if fake_mode is not None else contextlib.nullcontext():
            fake_constants = [fake_mode.from_tensor(c, static_shapes=True) if fake_mode else c for c in self.constants]
            table = select_decomp_table() if decompositions is None else decompositions
            real_gm = make_fx(_functionalized(self._run), decomposition_table=table)(*real_inputs, *fake_constants)
        real_gm.graph.eliminate_dead_code()
        real_gm.recompile()
        return real_gm, [*real_inputs, *fake_constants]

    def _constants(self) -> list[Tensor]:
        """The graph's tensor constants as plain real tensors (complex ones as two parts)."""
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        self.constant_slots: dict[str, tuple[int, ...]] = {}
        values: list[Tensor] = []
        with unset_fake_temporarily():
            for node in self.gm.graph.nodes:
                if node.op != "get_attr" or node.target in self.constant_slots:
                    continue
                value = _fetch_attr(self.gm, node.target)
                if not isinstance(value, Tensor):
                    continue
                if value.is_complex():
                    pair = torch.view_as_real(value.resolve_conj().resolve_neg())
                    values += [pair[..., 0].clone(), pair[..., 1].clone()]
                    self.constant_slots[node.target] = (len(values) - 2, len(values) - 1)
                else:
                    values.append(value.detach().clone())
                    self.constant_slots[node.target] = (len(values) - 1,)
        return values

    def _run(self, *flat_args: Any) -> tuple[Any, ...]:
        real_args = flat_args[: len(self.placeholders)]
        constants = flat_args[len(self.placeholders) :]
        env: dict[fx.Node, Any] = {}
        for node, value, spec in zip(self.placeholders, real_args, self.inputs):
            if spec.pairs_of is not None:
                env[node] = ComplexTensor(value.select(-1, 0), value.select(-1, 1))
            elif spec.conj:
                re, im = _layout.unpack(value, spec.complex_dtype)
                env[node] = ComplexTensor(re, -im)
            elif spec.complex_dtype is not None:
                env[node] = _layout.unpack_remembering(value, spec.complex_dtype)
            else:
                env[node] = value
        placeholder_index = {n: i for i, n in enumerate(self.placeholders)}
        mutations: list[tuple[int, Any]] = []
        for node in self.gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            args = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.args)
            kwargs = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.kwargs)
            if node.op == "get_attr":
                slots = self.constant_slots.get(node.target)
                if slots is None:  # not a tensor (e.g. a submodule of a higher-order op)
                    env[node] = _fetch_attr(self.gm, node.target)
                elif len(slots) == 2:
                    env[node] = ComplexTensor(constants[slots[0]], constants[slots[1]])
                else:
                    env[node] = constants[slots[0]]
                continue
            target = node.target
            if target is torch.ops.aten.copy_.default and node.args[0] in placeholder_index:
                # a mutation of a graph input (kept in the graph by AOTAutograd)
                mutations.append((placeholder_index[node.args[0]], args[1]))
                env[node] = args[1]
                continue
            env[node] = self._call(node, target, args, kwargs)
        results = []
        for i, o in enumerate(self.outputs):
            if i in self.replayed:
                continue
            value = env[o] if isinstance(o, fx.Node) else o
            if self.output_conj[i]:
                value = torch.conj_physical(value)
            results.append(self._pack_output(value, self.output_dtypes[i]))
        for base in self.hidden_bases:
            value = env[base]
            if self._is_conj(base):
                value = torch.conj_physical(value)
            results.append(self._pack_output(value, self._complex_dtype_of(base)))
        for index, value in mutations:
            spec = self.inputs[index]
            target = real_args[index]
            if spec.complex_dtype is not None:
                value = value if isinstance(value, ComplexTensor) else _as_complex(value, spec.complex_dtype)
                packed = _layout.pack(value.re, -value.im if spec.conj else value.im, spec.complex_dtype)
                target.copy_(packed)
            else:
                target.copy_(value.materialize() if isinstance(value, RealView) else value)
        return tuple(results)

    def _pack_output(self, value: Any, dtype: torch.dtype | None) -> Any:
        if self.pairs and dtype is not None:
            # parts as computed: bfloat16 parts in give bfloat16 parts out, as in eager torchcx
            value = value if isinstance(value, ComplexTensor) else _as_complex(value, dtype)
            return torch.stack([value.re, value.im], dim=-1)
        if isinstance(value, ComplexTensor):
            assert dtype is not None
            return _layout.packed(value, dtype)
        if isinstance(value, RealView):
            return value.materialize()
        return value

    def _call(self, node: fx.Node, target: Any, args: Any, kwargs: Any) -> Any:
        if target is torch.ops.higher_order.invoke_subgraph and _touches_complex_values(args):
            return self._invoke_subgraph(*args)
        if not isinstance(target, OpOverload):
            return target(*args, **kwargs)
        involves_complex = _touches_complex_values((args, kwargs)) or _has_complex(node.meta.get("val"))
        if not involves_complex:
            return target(*args, **kwargs)
        args = _complex_scalars_as_tensors(target, args)
        name = str(target)
        try:
            impl = resolve(target)
            if isinstance(impl, functools.partial) and impl.func.__name__ == "_not_implemented":
                raise NotImplementedError(f"torchcx: no complex decomposition for {target}")
            out = dispatch(target, args, kwargs)
            self.report.lowered.setdefault(name, getattr(impl, "__name__", repr(impl)))
            return out
        except NotImplementedError as e:
            if self.strict:
                raise NotImplementedError(
                    f"torchcx (strict): cannot decompose {target} with arguments ({describe_args(args, kwargs)}): {e}"
                ) from e
            _warn_fallback(target, args, kwargs)
            self.report.fallbacks.append(name)
            return call_extern(target, tuple(args), dict(kwargs))

    # Note [Nested compile regions]
    # ------------------------------
    # ``torch.compiler.nested_compile_region`` marks a function (a solver step, a layer)
    # that AOTAutograd keeps as one subgraph, called by ``invoke_subgraph`` wherever the
    # function is called, so that Inductor compiles it once. A complex subgraph is lowered
    # as a real one: its complex operands and results cross as two real tensors each (re
    # and im, planar: no layout to agree on between the calls), and the lowered body is
    # handed to ``invoke_subgraph`` itself under a torchcx identifier, so the trace
    # records one real subgraph, traced at its first call and reused by the others. FFTs
    # in a region take the vendor path (see ``body``). In a backward graph the regions are
    # inlined instead (each call traced and compiled): through invoke_subgraph, a complex
    # layer's weight gradient came out as garbage (1e38, nan) in torch 2.13, with the
    # forward region's values right; the cause is not found yet. Inlined, every value and
    # gradient matches eager (tests/test_compile_features.py).

    def _invoke_subgraph(self, subgraph: fx.GraphModule, identifier: str, *operands: Any) -> tuple[Any, ...]:
        """One ``invoke_subgraph`` call of a complex subgraph, as a call of its real lowering."""
        flat: list[Any] = []
        complex_operand: list[bool] = []
        for x in operands:
            if isinstance(x, Tensor) and not isinstance(x, ComplexTensor) and x.is_complex():
                x = _as_complex(x, x.dtype)
            if isinstance(x, RealView):
                x = x.materialize()
            complex_operand.append(isinstance(x, ComplexTensor))
            flat += [x.re, x.im] if isinstance(x, ComplexTensor) else [x]
        output = next(n for n in reversed(subgraph.graph.nodes) if n.op == "output")
        complex_result = [self._complex_dtype_of(o) is not None for o in output.args[0]]

        def body(*parts: Any) -> tuple[Any, ...]:
            rest = iter(parts)
            values = [ComplexTensor(next(rest), next(rest)) if c else next(rest) for c in complex_operand]
            out: list[Any] = []
            # The vendor FFT inside: Inductor 2.13 fails at run time on a subgraph holding the
            # real path's DFT matrices ("_torchinductor_pyobject_tensor_data_ptr: non-tensor
            # input"), measured; the vendor path makes none.
            with config.patch(fft_path="vendor"):
                results = self._execute(subgraph, values)
            for r, c in zip(results, complex_result):
                if c:
                    r = r if isinstance(r, ComplexTensor) else _as_complex(r, torch.complex64)
                    out += [r.re, r.im]
                else:
                    out.append(r.materialize() if isinstance(r, RealView) else r)
            # A subgraph's outputs may not alias its inputs or each other (AOTAutograd's forward
            # region returns inputs it saves for the backward: as parts, they are views of them).
            return tuple(
                o.clone() if isinstance(o, Tensor) and (o._is_view() or any(o is p for p in parts)) else o for o in out
            )

        if self.report.kind == "backward":
            real = iter(body(*flat))  # inlined: see the Note
        else:
            # traced once per region into a real graph: handed the Python body, invoke_subgraph
            # retraces it (every op through torchcx's tables) at each call to infer its schema
            from torch._higher_order_ops.utils import materialize_as_graph

            if identifier not in self.regions:
                self.regions[identifier] = materialize_as_graph(body, tuple(flat))
            real = iter(
                torch.ops.higher_order.invoke_subgraph(self.regions[identifier], f"torchcx_{identifier}", *flat)
            )
        return tuple(ComplexTensor(next(real), next(real)) if c else next(real) for c in complex_result)

    def _execute(self, gm: fx.GraphModule, inputs: list[Any]) -> list[Any]:
        """The values of a functional subgraph's outputs, its ops lowered as the graph's are."""
        env: dict[fx.Node, Any] = {}
        placeholders = iter(inputs)
        outputs: list[Any] = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(placeholders)
            elif node.op == "get_attr":
                env[node] = _fetch_attr(gm, node.target)
            elif node.op == "output":
                outputs = [env[o] if isinstance(o, fx.Node) else o for o in node.args[0]]
            else:
                args = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.args)
                kwargs = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.kwargs)
                env[node] = self._call(node, node.target, args, kwargs)
        return outputs

    def _describe_input(self, index: int, value: Any, spec: _Input) -> str:
        mutated = ", mutated in place by the kernel" if index in self.mutated else ""
        if spec.complex_dtype is None:
            return _describe_value(value) + mutated
        layout = _layout.describe(spec.complex_dtype)
        conj = ", a conjugated view: imaginary part negated in the kernel" if spec.conj else ""
        return f"{_describe_value(value)} read as {layout} (no copy){conj}{mutated}"

    def _describe_output(self, index: int, node: Any) -> str:
        val = node.meta.get("val") if isinstance(node, fx.Node) else node
        what = _describe_value(val)
        if index in self.aliases:
            return f"{what}: a view of input {self.aliases[index]}, replayed at run time (no copy)"
        if index in self.shared_views:
            base = self.shared_views[index]
            of = f"output {self.outputs.index(base)}" if base in self.outputs else "a value the kernel writes"
            return f"{what}: a view of {of}, replayed at run time (no copy)"
        dtype = self.output_dtypes[index]
        if dtype is not None:
            return f"{what}: written by the kernel as {_layout.describe(dtype)} (no copy)"
        return what


def _extern_calls(gm: fx.GraphModule, fallbacks: list[str]) -> list[str]:
    """The aten ops the real graph calls as extern kernels, fallbacks apart.

    Read from the graph rather than from the op tables: an op such as the FFT
    may run as an extern kernel or in real arithmetic (Note [FFT path selection]).
    """
    calls = [str(_op_from_name(n.args[0])) for n in gm.graph.nodes if n.target is torch.ops.torchcx.extern.default]
    return [name for name in calls if name not in fallbacks]


def _as_complex(value: Any, dtype: torch.dtype) -> ComplexTensor:
    from .ops._common import CType, to_complex
    from .tensor import component_dtype_of

    return to_complex(value, CType(component_dtype_of(dtype), True))


def _functionalized(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` traced functionally, its input mutations written back with ``copy_`` at the end.

    Decompositions (and in-place implementations) may mutate intermediates, and
    Inductor takes functional graphs whose only mutations are copies into inputs.
    """
    from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode

    def run(*args: Any) -> Any:
        functional_args = []
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)):
            with FunctionalTensorMode():
                functional_args = [FunctionalTensor.to_functional(a) if isinstance(a, Tensor) else a for a in args]
                outs = fn(*functional_args)
                outs = tree_map(_from_functional, outs)
            for arg, functional in zip(args, functional_args):
                if isinstance(functional, FunctionalTensor) and torch._functionalize_has_data_mutation(functional.elem):
                    torch._sync(functional)
                    arg.copy_(torch._from_functional_tensor(functional.elem))
        return outs

    return run


def _from_functional(t: Any) -> Any:
    from torch._subclasses.functional_tensor import FunctionalTensor

    if not isinstance(t, FunctionalTensor):
        return t
    torch._sync(t)
    return torch._from_functional_tensor(t.elem)


def _complex_scalars_as_tensors(target: OpOverload, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A Python complex where the schema wants a Tensor (a wrapped number, as AOTAutograd
    records ``aten._conj.default(1j)`` in backward graphs) as a 0-dim ComplexTensor."""
    from .ops._common import to_complex

    out = list(args)
    for i, (arg, value) in enumerate(zip(target._schema.arguments, args)):
        if isinstance(value, complex) and isinstance(arg.type, torch.TensorType):
            out[i] = to_complex(value)
    return tuple(out)


def _touches_complex_values(x: Any) -> bool:
    for leaf in tree_flatten(x)[0]:
        # (a RealView is a real tensor: its own __torch_dispatch__ handles it)
        if isinstance(leaf, ComplexTensor) or isinstance(leaf, complex):
            return True
        if isinstance(leaf, Tensor) and leaf.is_complex():
            return True
        if isinstance(leaf, torch.dtype) and leaf.is_complex:
            return True
    return False


def _fetch_attr(gm: fx.GraphModule, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _is_view(target: Any) -> bool:
    if not isinstance(target, OpOverload):
        return False
    returns = target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write


_WARNED: set[str] = set()


def _warn_fallback(target: OpOverload, args: Any, kwargs: Any) -> None:
    name = str(target)
    if name in _WARNED:
        return
    _WARNED.add(name)
    warnings.warn(
        f"torchcx: no complex decomposition for {name} ({describe_args(args, kwargs)}); "
        "it runs as PyTorch's native complex kernel inside the compiled graph. "
        "Pass strict=True to make this an error.",
        stacklevel=2,
    )


def _describe_value(v: Any) -> str:
    if isinstance(v, Tensor):
        return f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"
    return type(v).__name__


# -- outputs that are views of inputs or of each other ----------------------------------------

# Note [Outputs that alias each other]
# ------------------------------------
# ``t = exp(a); return t, t[1:]``: eager returns two views of one buffer, and so does
# Inductor for a real graph (it returns ``reinterpret_tensor``s of one buffer). AOTAutograd
# regenerates such aliases itself only where autograd needs it (both outputs requiring
# grad); otherwise it trusts the compiled graph to return them. Packing each complex
# output on its own would give each its own buffer: a later in-place op on one (after a
# graph break, say) would not show in the other. So an output that is a view of a complex
# value that another output also reaches is not computed by the kernel: the kernel writes
# that value once (it is an output already, or a hidden extra output), and the run time
# replays the view ops on it, as it does for views of inputs. A lone view of an
# intermediate (``view_as_real(x * f)``, the rotary embedding's output) has nothing to
# alias and stays in the kernel.


def _alias_replay(
    gm: fx.GraphModule,
    sources: list[fx.Node],
    outputs: dict[int, fx.Node],
    written_back: dict[fx.Node, fx.Node],
) -> fx.GraphModule:
    """A graph computing only the replayed outputs (views of inputs, or of bases) from ``sources``,
    run eagerly at run time on the actual inputs and the bases' actual values; a view of a
    value in ``written_back`` is replayed on the input it was written into."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for p in sources:
        env[p] = graph.placeholder(p.name)
        env[p].meta = dict(p.meta)
    for value, placeholder in written_back.items():
        env[value] = env[placeholder]
    needed: set[fx.Node] = set()

    def visit(n: fx.Node) -> None:
        if n in needed or n in env:
            return
        needed.add(n)
        for a in n.all_input_nodes:
            visit(a)

    for n in outputs.values():
        visit(n)
    for node in gm.graph.nodes:
        if node in needed:
            env[node] = graph.node_copy(node, lambda a: env[a])
    graph.output(tuple(env[n] for n in outputs.values()))
    return fx.GraphModule(gm, graph)


# -- run time ----------------------------------------------------------------------------------


class _Runtime:
    """The compiled graph behind torchcx's boundary (Note [The compile pipeline], step 4)."""

    def __init__(self, compiled: Callable[..., Any], lowering: _Lowering) -> None:
        # An instance attribute: AOTAutograd wraps the backward in torch._dynamo.disable,
        # whose functools.wraps copies the instance's __dict__, not class attributes;
        # without it the wrapper is called unboxed (with a warning on every backward).
        self._boxed_call = True
        self.compiled = compiled
        self.inputs = lowering.inputs
        self.output_dtypes = lowering.output_dtypes
        self.output_conj = lowering.output_conj
        self.output_slot = lowering.output_slot
        self.alias_replay = lowering.alias_replay
        self.base_sources = list(zip(lowering.base_sources, lowering.base_dtypes, lowering.base_conj))
        self.constants = lowering.constants

    def __call__(self, *call_args: Any) -> Any:
        # Boxed (one list, which we clear to free inputs early) or, from some of
        # AOTAutograd's backward paths, unboxed.
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        originals = list(args) if self.alias_replay is not None else None
        real_args = []
        for value, spec in zip(args, self.inputs):
            if spec.complex_dtype is None:
                real_args.append(value)
                continue
            if value.is_conj() != spec.conj:
                # A tangent need not have the conj bit AOTAutograd traced the backward with (that
                # of the forward's output: ihfft returns a conj view): give the graph the same values
                # in the traced form (a copy, only for this input).
                value = value.conj().resolve_conj().conj() if spec.conj else value.resolve_conj()
            real_args.append(_layout.to_real(value.conj() if spec.conj else value))
        args.clear()
        real_outs = self.compiled([*real_args, *self.constants])
        results: list[Any] = []
        for i, dtype in enumerate(self.output_dtypes):
            slot = self.output_slot[i]
            results.append(None if slot is None else _from_real(real_outs[slot], dtype, self.output_conj[i]))
        if originals is not None:
            bases = [
                results[where] if kind == "output" else _from_real(real_outs[where], dtype, conj)
                for (kind, where), dtype, conj in self.base_sources
            ]
            replayed = iter(self.alias_replay(*originals, *bases))
            results = [next(replayed) if slot is None else r for r, slot in zip(results, self.output_slot.values())]
        return results


def _from_real(out: Tensor, dtype: torch.dtype | None, conj: bool) -> Tensor:
    """A real graph output as the value it stands for: complex ``dtype`` over its memory (a view)."""
    if dtype is None:
        return out
    value = _layout.from_real(out, dtype)
    return value.conj() if conj else value


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
