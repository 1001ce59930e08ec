"""``retrace(graph, spec) -> real graph``: a functional complex graph retraced through the op tables.

Every complex placeholder is unpacked into a ComplexTensor of its two parts (no copy:
Note [Interleaved layouts]), every node runs through torchcx's dispatch under
``make_fx``, and the complex results are packed back, so the traced graph holds only
real tensors (and ``torchcx::extern`` calls for the ops that run as extern kernels).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._pytree import tree_flatten, tree_map

from .. import _layout, _lowering, config
from ..ops import dispatch, entry_for
from ..ops._registry import OpEntry, describe_args
from ..ops.extern import call_extern
from ..tensor import ComplexTensor, RealView, component_dtype_of
from .spec import BoundarySpec, InputSpec, complex_dtype_of, fetch_attr, has_complex, is_conj, view_root


@dataclass
class RealGraph:
    """The result of a retrace: the real graph, its example inputs (the graph's, then the
    constants) and what became of the complex ops."""

    gm: fx.GraphModule
    example_inputs: list[Any]
    lowered: dict[str, OpEntry] = field(default_factory=dict)  # complex op -> how it was computed
    fallbacks: list[str] = field(default_factory=list)  # ops run as their native kernel
    #: (op, the warning it gave), one per op in ``fallbacks``
    fallback_warnings: list[tuple[str, str]] = field(default_factory=list)


def retrace(
    gm: fx.GraphModule,
    spec: BoundarySpec,
    example_inputs: Sequence[Any],
    *,
    strict: bool,
    inline_regions: bool = False,
    decompositions: dict[Any, Callable[..., Any]] | None = None,
) -> RealGraph:
    """The real graph of ``gm``. ``decompositions``: Inductor's by default (an exported graph
    keeps the aten ops torchcx's implementations call: its targets decompose them).
    ``inline_regions``: nested compile regions are inlined (backward graphs, see Note
    [Nested compile regions])."""
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    real_inputs = real_example_inputs(spec.inputs, example_inputs)
    fake_mode = detect_fake_mode(real_inputs)
    retracer = _Retracer(gm, spec, strict=strict, inline_regions=inline_regions)
    with fake_mode if fake_mode is not None else contextlib.nullcontext(), _lowering.lowering():
        constants = [fake_mode.from_tensor(c, static_shapes=True) if fake_mode else c for c in spec.constants]
        table = select_decomp_table() if decompositions is None else decompositions
        real_gm = make_fx(_functionalized(retracer.run), decomposition_table=table)(*real_inputs, *constants)
    real_gm.graph.eliminate_dead_code()
    real_gm.recompile()
    return RealGraph(
        real_gm, [*real_inputs, *constants], retracer.lowered, retracer.fallbacks, list(retracer.warnings.items())
    )


def real_example_inputs(inputs: Sequence[InputSpec], example_inputs: Sequence[Any]) -> list[Any]:
    """The real graph's example inputs (the graph's own; the constants follow them), from
    how each input crosses (``BoundarySpec.inputs``)."""
    reals = []
    for value, input_spec in zip(example_inputs, inputs):
        if input_spec.complex_dtype is None:
            reals.append(value)
        elif input_spec.pairs_of is not None:
            reals.append(torch.view_as_real(value.resolve_conj()).to(input_spec.pairs_of))
        else:
            reals.append(_layout.to_real(value.conj() if input_spec.conj else value))
    return reals


class _Retracer:
    """The per-node work of one retrace; lives for that retrace only."""

    def __init__(self, gm: fx.GraphModule, spec: BoundarySpec, *, strict: bool, inline_regions: bool) -> None:
        self.gm, self.spec, self.strict, self.inline_regions = gm, spec, strict, inline_regions
        self.lowered: dict[str, OpEntry] = {}
        self.fallbacks: list[str] = []
        self.warnings: dict[str, str] = {}  # op -> the warning it gave
        # nested compile region identifier -> its real lowering and how its results cross
        # (Note [Nested compile regions])
        self.regions: dict[str, tuple[fx.GraphModule, list[_Crossing]]] = {}

    def run(self, *flat_args: Any) -> tuple[Any, ...]:
        spec = self.spec
        real_args = flat_args[: len(spec.placeholders)]
        constants = flat_args[len(spec.placeholders) :]
        env: dict[fx.Node, Any] = {}
        for node, value, input_spec in zip(spec.placeholders, real_args, spec.inputs):
            if input_spec.pairs_of is not None:
                env[node] = ComplexTensor(value.select(-1, 0), value.select(-1, 1))
            elif input_spec.conj:
                re, im = _layout.unpack(value, input_spec.complex_dtype)
                env[node] = ComplexTensor(re, -im)
            elif input_spec.complex_dtype is not None:
                env[node] = _layout.unpack_remembering(value, input_spec.complex_dtype)
            else:
                env[node] = value
        placeholder_index = {n: i for i, n in enumerate(spec.placeholders)}
        mutations: list[tuple[int, Any]] = []
        for node in self.gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            args = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.args)
            kwargs = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.kwargs)
            if node.op == "get_attr":
                slots = spec.constant_slots.get(node.target)
                if slots is None:  # not a tensor (e.g. a submodule of a higher-order op)
                    env[node] = fetch_attr(self.gm, node.target)
                elif len(slots) == 2:
                    env[node] = ComplexTensor(constants[slots[0]], constants[slots[1]])
                else:
                    env[node] = constants[slots[0]]
                continue
            if node.target is torch.ops.aten.copy_.default and node.args[0] in placeholder_index:
                # a mutation of a graph input (kept in the graph by AOTAutograd)
                mutations.append((placeholder_index[node.args[0]], args[1]))
                env[node] = args[1]
                continue
            env[node] = self.call(node, node.target, args, kwargs)
        results = []
        for i, o in enumerate(spec.outputs):
            if spec.output_slot[i] is None:
                continue
            if spec.output_conj[i]:
                value = _unconjugated(o, env)
            else:
                value = env[o] if isinstance(o, fx.Node) else o
            value = self._pack_output(value, spec.output_dtypes[i])
            if isinstance(value, Tensor) and _is_placeholder(view_root(o)):
                # a fresh result that the graph returns as an input (or its view): Inductor
                # would return the input itself (Note [Written inputs returned])
                value = value.clone()
            results.append(value)
        for base in spec.hidden_bases:
            value = _unconjugated(base, env) if is_conj(base) else env[base]
            results.append(self._pack_output(value, complex_dtype_of(base)))
        for index, value in mutations:
            input_spec, target = spec.inputs[index], real_args[index]
            if input_spec.complex_dtype is not None:
                value = value if isinstance(value, ComplexTensor) else _as_complex(value, input_spec.complex_dtype)
                target.copy_(
                    _layout.pack(value.re, -value.im if input_spec.conj else value.im, input_spec.complex_dtype)
                )
            else:
                target.copy_(value.materialize() if isinstance(value, RealView) else value)
        return tuple(results)

    def _pack_output(self, value: Any, dtype: torch.dtype | None) -> Any:
        if self.spec.pairs and dtype is not None:
            # parts as computed: bfloat16 parts in give bfloat16 parts out, as in eager torchcx
            value = value if isinstance(value, ComplexTensor) else _as_complex(value, dtype)
            return torch.stack([value.re, value.im], dim=-1)
        if isinstance(value, ComplexTensor):
            assert dtype is not None
            return _layout.packed(value, dtype)
        if isinstance(value, RealView):
            return value.materialize()
        return value

    def call(self, node: fx.Node, target: Any, args: Any, kwargs: Any) -> Any:
        """One node's value: a complex op through torchcx's tables (or, failing that, its
        native kernel as an extern call), anything else as it is."""
        if target is torch.ops.higher_order.invoke_subgraph and _touches_complex_values(args):
            return self._invoke_subgraph(*args)
        if target is torch.ops.aten.view.default:
            # AOTAutograd traces a backward against the forward's eager strides, then gives
            # its saved activations the layouts Inductor chose for the compiled forward
            # (channels-last around convolutions), where such a view may not exist.
            # Inductor's own lowering of view copies then; reshape does here, and is the
            # same view wherever one exists (the graph is functional).
            target = torch.ops.aten.reshape.default
        if not isinstance(target, OpOverload):
            return target(*args, **kwargs)
        if not (_touches_complex_values((args, kwargs)) or has_complex(node.meta.get("val"))):
            return target(*args, **kwargs)
        args = _complex_scalars_as_tensors(target, args)
        name = str(node.target)  # as the graph has it, for explain
        try:
            entry = entry_for(target)
            if entry.kind == "missing":
                raise NotImplementedError(f"torchcx: no complex decomposition for {target}")
            out = dispatch(target, args, kwargs)
            self.lowered.setdefault(name, entry)
            return out
        except NotImplementedError as e:
            if self.strict:
                raise NotImplementedError(
                    f"torchcx (strict): cannot decompose {target} with arguments ({describe_args(args, kwargs)}): {e}"
                ) from e
            op = str(target)
            if op not in self.warnings:  # (the message describes the arguments: built once per op)
                self.warnings[op] = _fallback_warning(target, args, kwargs)
            warn_fallback(op, self.warnings[op])
            self.fallbacks.append(name)
            return call_extern(target, tuple(args), dict(kwargs))

    # Note [Nested compile regions]
    # ------------------------------
    # ``torch.compiler.nested_compile_region`` marks a function (a solver step, a layer)
    # that AOTAutograd keeps as one subgraph, called by ``invoke_subgraph`` wherever the
    # function is called, so that Inductor compiles it once. A complex subgraph is lowered
    # as a real one, handed to ``invoke_subgraph`` itself under a torchcx identifier, so the
    # trace records one real subgraph, traced at its first call and reused by the others
    # (Note [Regions traced once]). Its complex operands and results cross packed, as a
    # graph's inputs and outputs do (Note [Interleaved layouts]): a result the region's
    # last FFT wrote is handed back as it is, and the next call's first FFT reads it
    # (Note [Packed form]); crossing as two planar parts each cost a packing and an
    # unpacking kernel per call, and two more in the calling graph. Parts of another
    # dtype than their complex dtype's (bfloat16 parts of a complex64 value) cross
    # planar. FFTs in a region take the vendor path (see ``body``). In a backward graph
    # the regions are inlined instead (each call traced and compiled): through
    # invoke_subgraph, a complex layer's weight gradient came out as garbage (1e38, nan)
    # in torch 2.13, with the forward region's values right; the cause is not found yet.
    # Inlined, every value and gradient matches eager (tests/test_compile_features.py).

    def _invoke_subgraph(self, subgraph: fx.GraphModule, identifier: str, *operands: Any) -> tuple[Any, ...]:
        """One ``invoke_subgraph`` call of a complex subgraph, as a call of its real lowering."""
        placeholders = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
        flat: list[Any] = []
        crossings: list[_Crossing] = []
        for x, placeholder in zip(operands, placeholders):
            dtype = complex_dtype_of(placeholder)
            if isinstance(x, Tensor) and not isinstance(x, ComplexTensor) and x.is_complex():
                x = _as_complex(x, x.dtype)
            if isinstance(x, RealView):
                x = x.materialize()
            crossings.append(_crossing(x, dtype))
            flat += _cross(x, crossings[-1])
        output = next(n for n in reversed(subgraph.graph.nodes) if n.op == "output")
        result_dtypes = [complex_dtype_of(o) for o in output.args[0]]
        result_crossings: list[_Crossing] = []  # filled by the body's trace

        def body(*parts: Any) -> tuple[Any, ...]:
            rest = iter(parts)
            values = [_uncross(rest, c) for c in crossings]
            out: list[Any] = []
            # The vendor FFT inside: Inductor 2.13 fails at run time on a subgraph holding the
            # real path's DFT matrices ("_torchinductor_pyobject_tensor_data_ptr: non-tensor
            # input"), measured; the vendor path makes none.
            with config.patch(fft_path="vendor"):
                results = self._execute(subgraph, values)
            result_crossings.clear()
            for r, dtype in zip(results, result_dtypes):
                if dtype is not None and not isinstance(r, ComplexTensor):
                    r = _as_complex(r, dtype)
                if isinstance(r, RealView):
                    r = r.materialize()
                result_crossings.append(_crossing(r, dtype))
                out += _cross(r, result_crossings[-1])
            # A subgraph's outputs may not alias its inputs or each other (AOTAutograd's forward
            # region returns inputs it saves for the backward: as parts or remembered words,
            # they are views of them or the very tensors).
            fresh: list[Any] = []
            for o in out:
                if isinstance(o, Tensor) and (o._is_view() or any(o is p for p in (*parts, *fresh))):
                    o = o.clone()
                fresh.append(o)
            return tuple(fresh)

        if self.inline_regions:
            real = iter(body(*flat))  # see the Note
        else:
            name = f"torchcx_{identifier}"
            if identifier not in self.regions:
                self.regions[identifier] = (_region_graph(body, flat, name), list(result_crossings))
            graph, result_crossings = self.regions[identifier]
            real = iter(torch.ops.higher_order.invoke_subgraph(graph, name, *flat))
        return tuple(_uncross(real, c) for c in result_crossings)

    def _execute(self, gm: fx.GraphModule, inputs: list[Any]) -> list[Any]:
        """The values of a functional subgraph's outputs, its ops lowered as the graph's are."""
        env: dict[fx.Node, Any] = {}
        placeholders = iter(inputs)
        outputs: list[Any] = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(placeholders)
            elif node.op == "get_attr":
                env[node] = fetch_attr(gm, node.target)
            elif node.op == "output":
                outputs = [env[o] if isinstance(o, fx.Node) else o for o in node.args[0]]
            else:
                args = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.args)
                kwargs = tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.kwargs)
                env[node] = self.call(node, node.target, args, kwargs)
        return outputs


# Note [Regions traced once]
# --------------------------
# A region's body runs through torchcx's tables once, into a real graph. Handed a graph,
# invoke_subgraph would still trace it twice more at its first call: once to infer its
# schema (whether it mutates or aliases its operands) and once, functionalized, into the
# trace; a trace costs about as much as the first (70-100 ms for a solver step or a
# layer, a third of the region's cost in the retrace). torchcx traces the body
# functionalized in the first place and hands invoke_subgraph's own caches (those of
# the compilation's TracingContext) the graph and the schema they would have computed:
# the graph is functional, its outputs fresh (``body`` clones any that alias), so it
# mutates and aliases nothing. Where the caches are not there or their keys change,
# invoke_subgraph traces as before: slower, not different.


def _region_graph(body: Callable[..., Any], operands: list[Any], name: str) -> fx.GraphModule:
    """The real graph of a nested compile region's body, traced once (Note [Regions traced once])."""
    from torch._higher_order_ops.invoke_subgraph import get_invoke_subgraph_cache, invoke_subgraph
    from torch._higher_order_ops.schema import HopSchemaGenerator
    from torch._higher_order_ops.utils import get_graph_output_example_values, materialize_as_graph

    graph = materialize_as_graph(_functionalized(body), tuple(operands))
    graph.meta["torchcx_region"] = name
    cache = get_invoke_subgraph_cache()
    if cache is not None:
        schema = HopSchemaGenerator(invoke_subgraph)
        schema.add_arg("subgraph", graph)
        schema.add_arg("identifier", name)
        for i, operand in enumerate(operands):
            schema.add_arg(f"arg{i}", operand, is_mutated=False)
        for output in get_graph_output_example_values(graph):
            schema.add_output(output)
        # (keyed as invoke_subgraph's functionalization keys it: graph, identifier, operand types)
        cache.add_functionalize_schema_entry((id(graph), name, tuple(map(type, operands))), schema.gen_schema())
        cache.add_proxy_dispatch_entry(name, graph)
    return graph


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


#: how a region's operand or result crosses its boundary: packed as this complex dtype,
#: "planar" (re and im), or None (not a complex value: as it is)
_Crossing = torch.dtype | str | None


def _crossing(x: Any, dtype: torch.dtype | None) -> _Crossing:
    if not isinstance(x, ComplexTensor):
        return None
    return dtype if dtype is not None and x.re.dtype == component_dtype_of(dtype) else "planar"


def _cross(x: Any, crossing: _Crossing) -> list[Any]:
    """The real tensors that carry ``x`` across a region's boundary."""
    if crossing is None:
        return [x]
    if crossing == "planar":
        return [x.re, x.im]
    return [_layout.packed(x, crossing)]


def _uncross(real: Any, crossing: _Crossing) -> Any:
    """The value carried by the next of the iterator ``real``'s tensors (inverse of ``_cross``)."""
    if crossing is None:
        return next(real)
    if crossing == "planar":
        return ComplexTensor(next(real), next(real))
    return _layout.unpack_remembering(next(real), crossing)


def _as_complex(value: Any, dtype: torch.dtype) -> ComplexTensor:
    from ..ops._common import CType, to_complex

    return to_complex(value, CType(component_dtype_of(dtype), True))


def _complex_scalars_as_tensors(target: OpOverload, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A Python complex where the schema wants a Tensor (a wrapped number, as AOTAutograd
    records ``aten._conj.default(1j)`` in backward graphs) as a 0-dim ComplexTensor."""
    from ..ops._common import to_complex

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


_WARNED: set[str] = set()


def _fallback_warning(target: OpOverload, args: Any, kwargs: Any) -> str:
    return (
        f"torchcx: no complex decomposition for {target} ({describe_args(args, kwargs)}); "
        "it runs as PyTorch's native complex kernel inside the compiled graph. "
        "Pass strict=True to make this an error."
    )


def warn_fallback(op: str, message: str) -> None:
    """Warn that ``op`` runs as its native kernel, once per op and process (also when a graph
    that runs it is loaded from AOTAutograd's cache)."""
    if op in _WARNED:
        return
    _WARNED.add(op)
    warnings.warn(message, stacklevel=3)


def _is_placeholder(node: Any) -> bool:
    return isinstance(node, fx.Node) and node.op == "placeholder"


def _unconjugated(node: fx.Node, env: dict[fx.Node, Any]) -> Any:
    """The values under a conjugated output ``node`` (the kernel writes those; the run time sets
    the conj bit). Where ``node`` is ``_conj(y)`` they are ``y``'s, already computed: the forward
    saves ``_conj`` of each GEMM operand for the backward, and conjugating its lowering back
    traced two negations and a kernel that copied the operand (the FNO step's corners)."""
    if node.target is torch.ops.aten._conj.default and isinstance(node.args[0], fx.Node):
        return env[node.args[0]]
    return torch.conj_physical(env[node])
