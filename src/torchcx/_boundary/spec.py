"""What crosses the compile boundary, read off a functional complex graph: pure data.

``boundary_spec(gm, example_inputs)`` answers, once per graph, every question the
retrace, the run time and the report ask: how each input is passed, which outputs the
kernel computes and where it puts them, which outputs are views replayed at run time
(of inputs, or of one base another output also reaches), which inputs the graph writes,
and the graph's tensor constants. Nothing here traces or runs an op.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._pytree import tree_flatten

from .. import _layout


@dataclass(frozen=True)
class InputSpec:
    """How one graph input crosses the boundary."""

    complex_dtype: torch.dtype | None  # None: passed as it is
    conj: bool = False  # a conjugated view: pass the unconjugated memory, negate im inside
    # torchcx.export's layout: (re, im) pairs of these parts along a trailing dim of 2
    # (view_as_real's), instead of Note [Interleaved layouts]'s
    pairs_of: torch.dtype | None = None


@dataclass(frozen=True)
class BoundarySpec:
    """The boundary of one functional complex graph (see the module docstring)."""

    placeholders: list[fx.Node]
    inputs: list[InputSpec]
    #: torchcx.export's boundary: complex values cross as (re, im) pairs, none is replayed
    pairs: bool
    #: The graph's outputs (nodes, or constants such as None), their complex dtypes (None
    #: for real ones) and whether each is a conjugated view of an intermediate: the kernel
    #: writes the unconjugated values and the run time sets the conj bit, so the tensor
    #: has the metadata AOTAutograd traced (``_conj(exp)`` saved for exp's backward).
    outputs: list[Any]
    output_dtypes: list[torch.dtype | None]
    output_conj: list[bool]
    #: Indices of the inputs the graph writes (functionalization's trailing ``copy_``).
    mutated: frozenset[int]
    #: A written input's new value -> the input: after the call the input holds it, so a
    #: view of the new value is that view of the input (``x.mul_(p); return x[:, ::2]``).
    written_back: dict[fx.Node, fx.Node]
    #: User output index -> the earlier user output that is the very same value (``v1 =
    #: v0.add_(a); return v1, v0``): the run time returns that tensor again, as eager does.
    #: Only outputs AOTAutograd's metadata names as the user's, neither a view of an input
    #: (AOTAutograd regenerates those one by one anyway); other repeated nodes, tensors saved
    #: for the backward among them, are replayed as identity views, as before repeats existed.
    repeats: dict[int, int]
    #: Output index -> input index, for outputs that are views of an input.
    aliases: dict[int, int]
    #: Output index -> base, for outputs that view a complex value another output also
    #: reaches (Note [Outputs that alias each other]); the bases in order.
    shared_views: dict[int, fx.Node]
    bases: list[fx.Node]
    #: Output index -> index among the real graph's outputs (None: replayed at run time);
    #: bases that are no output ("hidden") follow the graph's outputs among the real ones.
    output_slot: dict[int, int | None]
    hidden_bases: list[fx.Node]
    #: Per base: where the run time finds its value, ("output", graph output index) or
    #: ("hidden", real output slot), its complex dtype and whether it is a conj view.
    base_sources: list[tuple[tuple[str, int], torch.dtype | None, bool]]
    #: The replayed outputs computed from (inputs..., bases...), or None if there are none.
    alias_replay: fx.GraphModule | None
    #: Tensor constants (get_attr) as plain real tensors, complex ones as their two parts;
    #: the real graph takes them as extra inputs after the graph's own.
    constants: list[Tensor]
    constant_slots: dict[str, tuple[int, ...]]

    @property
    def replayed(self) -> list[int]:
        """The outputs ``alias_replay`` computes, in order."""
        return [i for i, slot in self.output_slot.items() if slot is None and i not in self.repeats]


def boundary_spec(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    pairs_of: Sequence[torch.dtype | None] | None = None,
    input_outputs: Mapping[int, int | None] | None = None,
) -> BoundarySpec:
    """The boundary of ``gm``. ``pairs_of`` (torchcx.export): every complex input and output
    crosses as (re, im) pairs, input i's with parts ``pairs_of[i]``, and every output is
    computed (there is no run time to replay views on). ``input_outputs``: output index ->
    the input AOTAutograd's metadata says the output is (or a view of), None for an output it
    says aliases no input (Note [Written inputs returned])."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if pairs_of is not None:
        inputs = [
            InputSpec(v.dtype, pairs_of=part) if part is not None else InputSpec(None)
            for v, part in zip(example_inputs, pairs_of)
        ]
    else:
        inputs = [_input_spec(v) for v in example_inputs]
    outputs = list(next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0])
    written_back = _written_back(gm, placeholders)
    repeats: dict[int, int] = {}
    aliases: dict[int, int] = {}
    shared_views: dict[int, fx.Node] = {}
    if pairs_of is None:
        aliases = {
            i: p
            for i, o in enumerate(outputs)
            if (p := _aliased_input(o, placeholders, written_back, (input_outputs or {}).get(i, _UNKNOWN))) is not None
        }
        user = [i for i in (input_outputs or {}) if i < len(outputs) and i not in aliases]
        repeats = {
            i: first
            for i in user
            if (first := next((j for j in user if j < i and outputs[j] is outputs[i]), i)) < i
            and isinstance(outputs[i], fx.Node)
        }
        shared_views = _shared_views(outputs, aliases, repeats)
    bases = list(dict.fromkeys(shared_views.values()))
    replayed = {*repeats, *aliases, *shared_views}
    output_slot: dict[int, int | None] = {}
    slot = 0
    for i in range(len(outputs)):
        output_slot[i] = None if i in replayed else slot
        slot += i not in replayed
    hidden_bases = [b for b in bases if b not in outputs]
    hidden_slot = {b: slot + k for k, b in enumerate(hidden_bases)}
    base_sources = [
        (
            ("output", outputs.index(b)) if b in outputs else ("hidden", hidden_slot[b]),
            complex_dtype_of(b),
            is_conj(b),
        )
        for b in bases
    ]
    alias_replay = None
    views = sorted({*aliases, *shared_views})  # (BoundarySpec.replayed: repeats are not replayed)
    if views:
        alias_replay = _alias_replay(
            gm,
            [*placeholders, *bases],
            {i: outputs[i] for i in views},
            {v: p for v, p in written_back.items() if v not in bases},
        )
    constants, constant_slots = _constants(gm)
    return BoundarySpec(
        placeholders=placeholders,
        inputs=inputs,
        pairs=pairs_of is not None,
        outputs=outputs,
        output_dtypes=[complex_dtype_of(o) for o in outputs],
        output_conj=[is_conj(o) for o in outputs],
        mutated=written_inputs(gm),
        written_back=written_back,
        repeats=repeats,
        aliases=aliases,
        shared_views=shared_views,
        bases=bases,
        output_slot=output_slot,
        hidden_bases=hidden_bases,
        base_sources=base_sources,
        alias_replay=alias_replay,
        constants=constants,
        constant_slots=constant_slots,
    )


def complex_output_strides(spec: BoundarySpec, real_strides: list[Any]) -> list[Any]:
    """Strides of the graph's outputs, from those Inductor reports for the real outputs."""

    def complex_strides(slot: int | None, dtype: torch.dtype | None) -> Any:
        strides = real_strides[slot] if slot is not None and slot < len(real_strides) else None
        if strides is not None and dtype is not None and not _layout.uses_words(dtype):
            strides = tuple(s // 2 for s in strides[:-1])  # float pairs: drop the pair dim
        return strides

    result = [complex_strides(spec.output_slot[i], dtype) for i, dtype in enumerate(spec.output_dtypes)]
    if spec.alias_replay is not None:
        bases = [
            result[where] if kind == "output" else complex_strides(where, dtype)
            for (kind, where), dtype, _ in spec.base_sources
        ]
        _replayed_strides(spec, result, bases)
    for i, first in spec.repeats.items():
        result[i] = result[first]
    return result


def _replayed_strides(spec: BoundarySpec, result: list[Any], base_strides: list[Any]) -> None:
    """Fill in the strides of the replayed outputs (views of inputs, or of bases whose layout
    Inductor chose): an output saved for the backward must be described with the strides it
    will have, a replayed one as a computed one. The views are replayed on meta tensors of
    those layouts; an unknown or symbolic layout leaves None (AOTAutograd's traced strides)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    def meta(node: fx.Node, strides: Any) -> Any:
        val = node.meta.get("val")
        if not isinstance(val, Tensor):
            return val
        if strides is None or not all(isinstance(s, int) for s in (*val.shape, *strides)):
            raise _UnknownLayout
        t = torch.empty_strided(tuple(val.shape), tuple(strides), dtype=val.dtype, device="meta")
        return t.conj() if val.is_complex() and val.is_conj() else t

    def input_strides(node: fx.Node) -> Any:
        val = node.meta.get("val")
        return val.stride() if isinstance(val, Tensor) else None

    try:
        with unset_fake_temporarily():
            inputs = [meta(p, input_strides(p)) for p in spec.placeholders]
            bases = [meta(b, strides) for b, strides in zip(spec.bases, base_strides)]
            replayed = spec.alias_replay(*inputs, *bases)  # type: ignore[misc]
    except (_UnknownLayout, RuntimeError, NotImplementedError, TypeError):
        return
    for i, value in zip(spec.replayed, replayed):
        if isinstance(value, Tensor):
            result[i] = tuple(value.stride())


class _UnknownLayout(Exception):
    pass


# -- reading nodes -----------------------------------------------------------------------------


def written_inputs(gm: fx.GraphModule) -> frozenset[int]:
    """Indices of the placeholders the functional graph writes (a ``copy_`` into them at its end)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return frozenset(
        placeholders.index(n.args[0])
        for n in gm.graph.nodes
        if n.target is torch.ops.aten.copy_.default and n.args[0] in placeholders
    )


def has_complex(x: Any) -> bool:
    """Whether a (pytree of) value(s) holds a complex tensor."""
    return any(isinstance(t, Tensor) and t.is_complex() for t in tree_flatten(x)[0])


def is_conj(node: Any) -> bool:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    return isinstance(val, Tensor) and val.is_complex() and val.is_conj()


def complex_dtype_of(node: Any) -> torch.dtype | None:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    if val is None and isinstance(node, fx.Node) and node.target is torch.ops.aten.empty_strided.default:
        # Inductor's stand-in for a meta output (joint_graph.remove_no_ops) has no "val"
        dtype = node.kwargs.get("dtype")
        return dtype if isinstance(dtype, torch.dtype) and dtype.is_complex else None
    return val.dtype if isinstance(val, Tensor) and val.is_complex() else None


def fetch_attr(gm: fx.GraphModule, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _input_spec(value: Any) -> InputSpec:
    if isinstance(value, Tensor) and value.is_complex():
        return InputSpec(value.dtype, conj=value.is_conj())
    return InputSpec(None)


def _is_view(target: Any) -> bool:
    if not isinstance(target, OpOverload):
        return False
    returns = target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write


def view_root(node: Any) -> Any:
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


# -- mutations and aliases ---------------------------------------------------------------------


def _written_back(gm: fx.GraphModule, placeholders: list[fx.Node]) -> dict[fx.Node, fx.Node]:
    """{new value: placeholder} for the inputs the graph writes (functionalization's ``copy_``)."""
    found: dict[fx.Node, fx.Node] = {}
    for n in gm.graph.nodes:
        if n.target is not torch.ops.aten.copy_.default or n.args[0] not in placeholders:
            continue
        value, target = n.args[1], n.args[0]
        new, old = (x.meta.get("val") if isinstance(x, fx.Node) else None for x in (value, target))
        if isinstance(new, Tensor) and isinstance(old, Tensor) and (new.shape, new.dtype) == (old.shape, old.dtype):
            found.setdefault(value, target)
    return found


# Note [Written inputs returned]
# ------------------------------
# ``x.mul_(p); return x[:, ::2]`` returns a view of the input x; the functional graph
# computes ``m = mul(x, p)``, writes it back (``copy_(x, m)``) and returns ``slice(m)``.
# Replaying that slice on x after the call is exact and saves the kernel a buffer. But
# ``v0 = -a; a.copy_(v0); return v0`` gives the same graph shape (the new value ``neg``
# returned and written back), and eager's v0 is a fresh tensor, not a. The graph cannot
# tell the two apart; AOTAutograd's output metadata can (``is_input`` / ``alias_of_input``
# against ``non_alias``). So a view of a written-back value is replayed on the input only
# where that metadata names this input; without it, the output is computed.
#
# The metadata also overrules a graph that returns an input itself for a fresh result:
# ``c.zero_(); return c + x`` reaches torchcx as ``return x`` once Inductor's joint-graph
# passes have folded the addition of zeros, and eager's result is a new tensor, not x
# (found by the fuzzing campaign, seed 4012). Where the metadata says an output aliases no
# input, it is computed (a copy), whatever the graph returns.

#: ``_aliased_input``'s ``returned_input`` where AOTAutograd's metadata says nothing.
_UNKNOWN = -1


def _aliased_input(
    node: Any, placeholders: list[fx.Node], written_back: dict[fx.Node, fx.Node], returned_input: int | None
) -> int | None:
    """The placeholder index ``node`` is a (chain of) view(s) of, if any: of the input itself,
    or of the new value the graph writes into it, where AOTAutograd says the output is that
    input or its view (``returned_input``: that input's index, None for no input, ``_UNKNOWN``
    without metadata; Note [Written inputs returned])."""
    root = view_root(node)
    if root in written_back:
        root = written_back[root]
        if returned_input in (None, _UNKNOWN) or placeholders.index(root) != returned_input:
            return None
    if not (isinstance(root, fx.Node) and root.op == "placeholder"):
        return None
    index = placeholders.index(root)
    if returned_input != _UNKNOWN and returned_input != index:
        return None  # AOTAutograd says it is a fresh tensor (or another input's view)
    return index


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


def _shared_views(outputs: list[Any], aliases: dict[int, int], repeats: dict[int, int]) -> dict[int, fx.Node]:
    """Output index -> base, for the outputs that view a complex computed value another
    output also reaches (Note [Outputs that alias each other])."""
    roots = [None if i in repeats else view_root(o) for i, o in enumerate(outputs)]
    reach: dict[fx.Node, int] = {}
    for root in roots:
        if isinstance(root, fx.Node) and root.op == "call_function":
            reach[root] = reach.get(root, 0) + 1
    views: dict[int, fx.Node] = {}
    for i, (o, root) in enumerate(zip(outputs, roots)):
        # (another output that is an earlier output's very node, a tensor saved for the
        # backward say, is replayed as the identity view of it)
        repeated = o is root and o in outputs[:i]
        if i in aliases or i in repeats or (o is root and not repeated) or reach.get(root, 0) < 2:
            continue
        if complex_dtype_of(root) is None:
            continue  # real views of a real value stay in the real graph, where Inductor keeps them
        views[i] = root
    return views


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


# -- constants ---------------------------------------------------------------------------------


def _constants(gm: fx.GraphModule) -> tuple[list[Tensor], dict[str, tuple[int, ...]]]:
    """The graph's tensor constants as plain real tensors (complex ones as two parts), and
    each get_attr target's slots among them. The retrace runs under AOTAutograd's fake mode,
    which only takes fake tensors: the real graph takes the constants as extra inputs."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    slots: dict[str, tuple[int, ...]] = {}
    values: list[Tensor] = []
    with unset_fake_temporarily():
        for node in gm.graph.nodes:
            if node.op != "get_attr" or node.target in slots:
                continue
            value = fetch_attr(gm, node.target)
            if not isinstance(value, Tensor):
                continue
            if value.is_complex():
                pair = torch.view_as_real(value.resolve_conj().resolve_neg())
                values += [pair[..., 0].clone(), pair[..., 1].clone()]
                slots[node.target] = (len(values) - 2, len(values) - 1)
            else:
                values.append(value.detach().clone())
                slots[node.target] = (len(values) - 1,)
    return values, slots
