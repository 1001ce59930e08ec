"""``torchcx.export``: complex programs as ``torch.export`` programs whose graphs hold no complex value.

Note [Exporting complex programs]
---------------------------------
Deployment runtimes lack complex dtypes, and PyTorch's own export paths break on
complex values (AOTInductor mis-passes complex scalars to its fallback kernels; the
ONNX exporter converts only some complex ops). torchcx already turns complex
programs into real-only graphs; ``export`` makes that a ``torch.export`` program:

1. ``torch.export.export`` captures the program in complex space, with complex64
   stand-ins for inputs whose parts are bfloat16/float16 (torch has no such dtype),
   and ``run_decompositions`` makes it functional with the decompositions the
   compile backend uses (Note [The compile pipeline], step 2).
2. The backend's lowering retraces that graph through torchcx's op tables, with
   every complex input and output as (re, im) pairs along a trailing dimension of
   2 (``view_as_real``'s layout, which runtimes without complex understand) and
   every output computed (no run time replays views). Complex parameters, buffers
   and constants become real tensors in the same layout. Extern kernels take their
   export form (Note [Extern kernels in exported graphs]): the FFT in real
   arithmetic (``fft="real"``), as the aten FFT op (``"vendor"``), or each transform
   by the compile backend's measured rule (``"auto"``, the default: Note [FFT path
   selection]); complex GEMMs likewise (``gemm=``), except for ONNX, which
   converts no complex matrix product: there they are real.
3. That real graph, in a module holding the real parameters under their original
   names, is exported again. With ``complex_io="complex"`` its signature takes and
   returns complex tensors, viewed as pairs at the boundary (``view_as_real`` in,
   ``view_as_complex`` out: views, for Python and AOTInductor); with
   ``complex_io="real"`` it takes and returns the pairs themselves (for runtimes
   such as onnxruntime, and for bfloat16/float16 parts).

The exported program computes what ``torchcx.compile`` computes: the same op
decompositions, so the same numerics (bfloat16 parts in, bfloat16 parts out).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch
import torch.fx as fx
from torch import Tensor, nn
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils._pytree import tree_flatten, tree_unflatten

from . import config
from ._boundary.retrace import retrace
from ._boundary.spec import boundary_spec
from ._inductor_patches import inductor_patches, quiet_complex_warning
from .backend import _REPLACED_DECOMPOSITIONS
from .ops._registry import EXTERN_OPS
from .ops.extern import traced_externs
from .tensor import ComplexTensor

__all__ = ["aoti_compile_and_package", "export"]

_REPLACED = {getattr(torch.ops.aten, name) for name in _REPLACED_DECOMPOSITIONS}

ComplexIO = Literal["complex", "real"]
FFTForm = Literal["auto", "real", "vendor"]
Target = Literal["aoti", "onnx"]
GemmForm = Literal["auto", "real", "vendor"]


def export(
    program: nn.Module | Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    complex_io: ComplexIO = "complex",
    fft: FFTForm = "auto",
    gemm: GemmForm = "auto",
    target: Target = "aoti",
    dynamic_shapes: Any = None,
    strict: bool = False,
) -> ExportedProgram:
    """Export ``program`` (a module or a function) to a ``torch.export.ExportedProgram``
    whose graph holds no complex value (Note [Exporting complex programs]).

    ``args``/``kwargs`` are example inputs: native complex tensors, or ComplexTensors
    (``torchcx.complex(re, im)``) for bfloat16/float16 parts. ``complex_io="complex"``
    keeps complex tensors in the signature (views in and out); ``"real"`` takes and
    returns each complex tensor as a real tensor with a trailing dimension of 2
    (``torch.view_as_real``'s layout), as runtimes without complex dtypes need.
    ``fft="real"`` computes FFTs in real arithmetic (GEMMs and pointwise ops: the
    graph holds no complex value at all); ``"vendor"`` keeps the aten FFT ops, on
    complex tensors made from the parts and viewed as pairs again, for the target's
    own FFT (ONNX's DFT, pocketfft/MKL in AOTInductor); ``"auto"`` (the default)
    chooses per transform as ``torchcx.compile`` does: the real path for small
    transforms, the vendor FFT for large ones and for a symbolic length.
    ``gemm`` likewise for complex matrix products (matmul, einsum, linear, ...):
    ``"real"`` in real arithmetic, ``"vendor"`` as the aten op on complex tensors
    (cgemm/zgemm), ``"auto"`` by the compile backend's rule on AOTInductor and
    ``"real"`` for ONNX (which converts no complex product) or with ``fft="real"``.
    ``target="onnx"`` writes the few ops ONNX lacks (``hypot``, ``copysign``,
    ``signbit``) with ops it has; ``"aoti"`` (the default) suits AOTInductor
    (``torchcx.aoti_compile_and_package``), ``torch.export.save`` and Python.
    ``dynamic_shapes`` are ``torch.export``'s, for the inputs as given in ``args``;
    ``strict`` is ``torch.export.export``'s tracer choice.

    Raises ``NotImplementedError`` naming the op and dtypes for a complex op torchcx
    cannot lower to real arithmetic (a LAPACK factorization, an op it has no
    decomposition for).
    """
    if complex_io not in ("complex", "real"):
        raise ValueError(f"torchcx.export: complex_io must be 'complex' or 'real', got {complex_io!r}")
    if target not in ("aoti", "onnx"):
        raise ValueError(f"torchcx.export: target must be 'aoti' or 'onnx', got {target!r}")
    if fft not in ("auto", "real", "vendor"):
        raise ValueError(f"torchcx.export: fft must be 'auto', 'real' or 'vendor', got {fft!r}")
    if gemm not in ("auto", "real", "vendor"):
        raise ValueError(f"torchcx.export: gemm must be 'auto', 'real' or 'vendor', got {gemm!r}")
    if gemm == "vendor" and (target == "onnx" or fft == "real"):
        raise ValueError(
            "torchcx.export: gemm='vendor' keeps complex matrix products, which torch.onnx cannot convert "
            "and fft='real' (a graph with no complex value) excludes; use gemm='real' or 'auto'"
        )
    kwargs = dict(kwargs or {})
    module = program if isinstance(program, nn.Module) else _Function(program)
    flat_inputs, in_spec = tree_flatten((tuple(args), kwargs))
    parts = [_parts_of(x) for x in flat_inputs]
    if complex_io == "complex":
        for x, part in zip(flat_inputs, parts):
            if isinstance(x, ComplexTensor):
                raise TypeError(
                    f"torchcx.export: an input with {part} parts has no complex dtype in torch; "
                    "pass complex_io='real' to take it as a real tensor of (re, im) pairs"
                )
    # (clones: torch.export's guards on an input that is a view of another tensor fail when
    # run_decompositions retraces, "'NoneType' object has no attribute 'size'")
    stand_ins = [
        x.to_interleaved(torch.complex64).clone() if isinstance(x, ComplexTensor) else _detached(x) for x in flat_inputs
    ]
    s_args, s_kwargs = tree_unflatten(stand_ins, in_spec)

    with quiet_complex_warning():
        captured_dynamic = (
            dynamic_shapes
            if isinstance(program, nn.Module)
            else _varargs_dynamic_shapes(program, dynamic_shapes, args, kwargs, "complex")
        )
        captured = torch.export.export(module, s_args, s_kwargs, dynamic_shapes=captured_dynamic, strict=strict)
        captured = captured.run_decompositions(_capture_decompositions())
    real_module, real_inputs = _lower(captured, parts, flat_inputs, complex_io, fft, _gemm_form(gemm, target, fft))
    signature = program.forward if isinstance(program, nn.Module) else program
    real_dynamic = _varargs_dynamic_shapes(signature, dynamic_shapes, args, kwargs, complex_io)
    r_args, r_kwargs = tree_unflatten(real_inputs, in_spec)
    with quiet_complex_warning():
        exported = torch.export.export(real_module, r_args, r_kwargs, dynamic_shapes=real_dynamic, strict=False)
    if target == "onnx":
        exported = exported.run_decompositions(_ONNX_DECOMPOSITIONS)
    return exported


# -- ops ONNX lacks ------------------------------------------------------------------------------
# torch.onnx has no function for aten.hypot, and decomposes copysign and signbit into prims
# it has none for either; complex abs, angle and the edge-value handling of exp and friends
# use them. These forms use only ops ONNX has.


def _hypot_onnx(a: Tensor, b: Tensor) -> Tensor:
    # sqrt(a^2 + b^2) would overflow for |a| > 1.8e19 (float32) and lose subnormals: scale by
    # the larger magnitude, as hypot does. hypot(inf, nan) is inf, so infinities come first.
    x, y = a.abs(), b.abs()
    big, small = torch.maximum(x, y), torch.minimum(x, y)
    ratio = torch.where(big == 0, torch.zeros_like(big), small / big)
    scaled = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(x) | torch.isinf(y), torch.full_like(big, math.inf), scaled)


def _signbit_onnx(x: Tensor) -> Tensor:
    # -0.0 is told from 0.0 by its reciprocal, -inf. (A nan's sign bit cannot be read
    # without a bitcast; it counts as positive.)
    return (x < 0) | ((x == 0) & (torch.reciprocal(x) < 0))


def _copysign_onnx(a: Tensor, b: Tensor) -> Tensor:
    magnitude = a.abs()
    return torch.where(_signbit_onnx(b), -magnitude, magnitude)


def _index_put_onnx(x: Tensor, indices: list[Tensor | None], values: Tensor, accumulate: bool = False) -> Any:
    # ONNX's ScatterND takes int64 indices only (the decomposition of unfold_backward, which
    # istft's overlap-add uses, indexes with int32)
    if not any(i is not None and i.dtype == torch.int32 for i in indices):
        return NotImplemented
    wide = [i.long() if i is not None and i.dtype == torch.int32 else i for i in indices]
    return torch.ops.aten.index_put.default(x, wide, values, accumulate)


_ONNX_DECOMPOSITIONS = {
    torch.ops.aten.index_put.default: _index_put_onnx,
    torch.ops.aten.hypot.default: _hypot_onnx,
    torch.ops.aten.copysign.Tensor: _copysign_onnx,
    torch.ops.aten.signbit.default: _signbit_onnx,
}


def aoti_compile_and_package(exported: ExportedProgram, **kwargs: Any) -> str:
    """``torch._inductor.aoti_compile_and_package`` with torchcx's Inductor adjustments.

    A program from ``torchcx.export`` runs under plain AOTInductor too; compiled this way
    its kernels are those ``torchcx.compile`` generates (Note [Interleaved access]
    vectorizes the (re, im) pairs at its boundary; Note [Accurate expm1]). Takes and
    returns what ``aoti_compile_and_package`` does (the package's path); load it with
    ``torch._inductor.aoti_load_package``.
    """
    with inductor_patches():
        return torch._inductor.aoti_compile_and_package(exported, **kwargs)


def _gemm_form(gemm: GemmForm, target: Target, fft: FFTForm) -> GemmForm:
    """``gemm`` with "auto" resolved per target: ONNX converts no complex product, and
    ``fft="real"`` asks for a graph without complex values."""
    if gemm == "auto" and (target == "onnx" or fft == "real"):
        return "real"
    return gemm


def _capture_decompositions() -> Any:
    """Core ATen's decompositions (those of ``torch.export``), less those torchcx's tables replace.

    Core ATen rather than Inductor's table: the real graph keeps the ops its targets know
    (Inductor's decomposes some ops into prims, ``prims.iota``, that ONNX has no function for).
    """
    table = torch.export.default_decompositions()
    for op in list(table):
        if getattr(op, "overloadpacket", None) in _REPLACED:
            del table[op]
    return table


class _Function(nn.Module):
    """A function as a module (``torch.export`` takes modules)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _detached(x: Any) -> Any:
    return x.detach().clone() if isinstance(x, Tensor) and x._base is not None else x


def _parts_of(x: Any) -> torch.dtype | None:
    """The part dtype of a complex example input (None for anything else)."""
    if isinstance(x, ComplexTensor):
        return x.component_dtype
    if isinstance(x, Tensor) and x.is_complex():
        return torch.view_as_real(x.resolve_conj()).dtype
    return None


def _as_pairs(x: Tensor) -> Tensor:
    """A complex value (native or ComplexTensor) as a real tensor of (re, im) pairs."""
    if isinstance(x, ComplexTensor):
        return torch.stack([x.re, x.im], dim=-1)
    return torch.view_as_real(x.resolve_conj()).clone()


def _lower(
    captured: ExportedProgram,
    user_parts: list[torch.dtype | None],
    flat_inputs: list[Any],
    complex_io: ComplexIO,
    fft: FFTForm,
    gemm: GemmForm,
) -> tuple[nn.Module, list[Any]]:
    """The real graph of ``captured`` in a module to export again (step 2 and 3 of the Note)."""
    gm = captured.graph_module
    signature = captured.graph_signature
    _refuse_externs(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state = {**captured.state_dict, **captured.constants}
    # what feeds each placeholder: ("state", name) or ("input", index among the flat inputs)
    sources: list[tuple[str, Any]] = []
    pairs_of: list[torch.dtype | None] = []
    by_name: dict[str, tuple[str, Any]] = {}
    user_specs = [spec for spec in signature.input_specs if spec.kind == InputKind.USER_INPUT]
    if len(user_specs) != len(flat_inputs):
        raise NotImplementedError(
            f"torchcx.export: {len(flat_inputs)} inputs were given and torch.export made {len(user_specs)} "
            "graph inputs of them; pass tensors (and fold other values into the program)"
        )
    user_index = 0
    for spec in signature.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            value = state[spec.target]
            source = ("state", spec.target)
            pairs_of.append(_parts_of(value) if isinstance(value, Tensor) else None)
        elif spec.kind == InputKind.USER_INPUT:
            source = ("input", user_index)
            pairs_of.append(user_parts[user_index])
            user_index += 1
        else:
            raise NotImplementedError(f"torchcx.export: inputs of kind {spec.kind.name} are not supported")
        sources.append(source)
        by_name[spec.arg.name] = source
    example = [p.meta["val"] for p in placeholders]
    mutations: list[tuple[str, Any]] = []
    for spec in signature.output_specs:
        if spec.kind == OutputKind.BUFFER_MUTATION:
            mutations.append(("state", spec.target))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            mutations.append(by_name[spec.target])
        elif spec.kind != OutputKind.USER_OUTPUT:
            raise NotImplementedError(f"torchcx.export: outputs of kind {spec.kind.name} are not supported")

    boundary = boundary_spec(gm, example, pairs_of=pairs_of)
    form = "refused" if fft == "real" else "native"
    # gemm="vendor": the vendor's kernel for every product it exists for; "auto": the
    # compile backend's rule (Note [GEMM strategy rule]); "real": its rule without it
    strategy = "native" if gemm == "vendor" else config.matmul_strategy
    settings = {"fft_path": fft, "matmul_strategy": strategy}
    try:
        with config.patch(**settings), traced_externs(form, native_gemm=gemm != "real"), quiet_complex_warning():
            real_gm = retrace(gm, boundary, example, strict=True, decompositions={}).gm
    except NotImplementedError as e:
        raise NotImplementedError(f"torchcx.export: {e}") from e
    complex_outputs = [dtype is not None for dtype in boundary.output_dtypes]
    module = _RealProgram(
        real_gm,
        sources,
        {name: _as_pairs(v) if _parts_of(v) is not None else v for name, v in state.items() if isinstance(v, Tensor)},
        {spec.target for spec in signature.input_specs if spec.kind == InputKind.PARAMETER},
        [p is not None for p in user_parts],
        complex_io,
        mutations,
        complex_outputs[len(mutations) :],
        captured.call_spec.out_spec,
    )
    real_inputs = [
        _as_pairs(x) if p is not None and complex_io == "real" else x for x, p in zip(flat_inputs, user_parts)
    ]
    return module, real_inputs


def _refuse_externs(gm: fx.GraphModule) -> None:
    """Raise for a complex op that only a native complex kernel computes (a LAPACK factorization)."""
    for node in gm.graph.nodes:
        packet = getattr(node.target, "overloadpacket", None)
        if packet is None or packet not in EXTERN_OPS:
            continue  # (the FFT has its real-arithmetic form, or the vendor one: fft=)
        values = [a.meta.get("val") for a in node.all_input_nodes] + tree_flatten(node.meta.get("val"))[0]
        dtypes = sorted({str(v.dtype) for v in values if isinstance(v, Tensor) and v.is_complex()})
        if dtypes:
            raise NotImplementedError(
                f"torchcx.export: {node.target} on {', '.join(dtypes)} runs as the native complex kernel (LAPACK, "
                "a scan), which a real-only graph cannot hold; compute it outside the exported program"
            )


class _RealProgram(nn.Module):
    """The real graph with its state, in the signature ``torchcx.export`` promises."""

    def __init__(
        self,
        graph: fx.GraphModule,
        sources: list[tuple[str, Any]],
        state: dict[str, Tensor],
        parameters: set[str],
        complex_inputs: list[bool],
        complex_io: ComplexIO,
        mutations: list[tuple[str, Any]],
        complex_outputs: list[bool],
        out_spec: Any,
    ) -> None:
        super().__init__()
        self.graph_module = graph
        self._sources = sources
        self._complex_inputs = complex_inputs
        self._complex_io = complex_io
        self._mutations = mutations
        self._complex_outputs = complex_outputs
        self._out_spec = out_spec
        for name, value in state.items():
            owner, attr = _owner(self, name)
            if name in parameters:
                owner.register_parameter(attr, nn.Parameter(value, requires_grad=value.requires_grad))
            else:
                owner.register_buffer(attr, value)

    def _state(self, name: str) -> Tensor:
        owner, attr = _owner(self, name)
        return getattr(owner, attr)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        flat, _ = tree_flatten((args, kwargs))
        if self._complex_io == "complex":
            flat = [torch.view_as_real(x) if c else x for x, c in zip(flat, self._complex_inputs)]
        graph_inputs = [self._state(where) if kind == "state" else flat[where] for kind, where in self._sources]
        outs = list(self.graph_module(*graph_inputs))
        for (kind, where), value in zip(self._mutations, outs):
            target = self._state(where) if kind == "state" else flat[where]
            target.copy_(value)
        user = outs[len(self._mutations) :]
        if self._complex_io == "complex":
            user = [torch.view_as_complex(o) if c else o for o, c in zip(user, self._complex_outputs)]
        return tree_unflatten(user, self._out_spec)


def _owner(root: nn.Module, name: str) -> tuple[nn.Module, str]:
    """The submodule holding state ``name`` ("block.0.weight"), made empty if missing, and the attribute."""
    *path, attr = name.split(".")
    module = root
    for part in path:
        child = getattr(module, part, None) if part in module._modules else None
        if child is None:
            child = nn.Module()
            module.add_module(part, child)
        module = child
    return module, attr


def _varargs_dynamic_shapes(
    program: Callable[..., Any], dynamic_shapes: Any, args: Sequence[Any], kwargs: dict[str, Any], complex_io: ComplexIO
) -> Any:
    """``dynamic_shapes`` given for ``program``'s signature, for a ``forward(*args, **kwargs)`` taking
    the same inputs; with ``complex_io="real"`` a complex input's spec gains its pair dimension."""
    if dynamic_shapes is None:
        return None
    bound = inspect.signature(program).bind(*args, **kwargs)
    if isinstance(dynamic_shapes, dict):
        by_name = dynamic_shapes
    else:
        by_name = dict(zip(bound.arguments, dynamic_shapes))
    arg_specs: list[Any] = []
    kwarg_specs: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        spec = by_name.get(name)
        if kind == inspect.Parameter.VAR_POSITIONAL:
            arg_specs += [_with_pair(s, v, complex_io) for s, v in zip(spec or [None] * len(value), value)]
        elif kind == inspect.Parameter.VAR_KEYWORD:
            kwarg_specs.update({k: _with_pair((spec or {}).get(k), v, complex_io) for k, v in value.items()})
        elif kind == inspect.Parameter.KEYWORD_ONLY or name in kwargs:
            kwarg_specs[name] = _with_pair(spec, value, complex_io)
        else:
            arg_specs.append(_with_pair(spec, value, complex_io))
    # (export names only the varargs that receive inputs)
    return {"args": tuple(arg_specs), "kwargs": kwarg_specs} if kwargs else {"args": tuple(arg_specs)}


def _with_pair(spec: Any, value: Any, complex_io: ComplexIO) -> Any:
    if complex_io == "real" and _parts_of(value) is not None and isinstance(spec, (list, tuple)):
        return type(spec)([*spec, None])
    return spec  # a dict {dim: Dim} leaves the pair dimension static
