"""Extern kernels: ops computed by PyTorch's own complex kernel on interleaved data.

Note [Extern kernels]
---------------------
Some ops do not decompose into fusable real ops, or not yet: LAPACK
factorizations, the vendor FFT, and (in compiled graphs) any op torchcx has no
decomposition for. They run as the native complex kernel. In eager mode that
is a direct call on the interleaved tensor (zero-copy for a ComplexTensor made
by ``from_interleaved``). Inside a traced graph it is one custom op,
``torchcx::extern``, that takes and returns *real* tensors in the layouts of
Note [Interleaved layouts]: the graph stays real-only, Inductor fuses the
packing of the inputs into their producers and the unpacking of the outputs
into their consumers, and ``torchcx.explain`` lists every such call.

Parts of float16/bfloat16 are computed in complex64 and rounded back (no
vendor library computes complex with those parts).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import torch
from torch import Tensor
from torch._ops import OpOverload
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from .. import _layout, _lowering
from ..tensor import ComplexTensor, RealView, complex_dtype_of, component_dtype_of
from ._common import Op, overloads_of
from ._registry import calling_family, describe_args, register

aten = torch.ops.aten


def register_extern(*ops: Op) -> None:
    """Compute every overload of ``ops`` with the native complex kernel (Note [Extern kernels]),
    as entries of kind "extern" in the family of the module that calls it."""
    family = calling_family()
    for overload in overloads_of(*ops):
        register(overload, kind="extern", family=family)(_make_extern(overload))


def _make_extern(op: OpOverload) -> Callable[..., Any]:
    def impl(*args: Any, **kwargs: Any) -> Any:
        return call_extern(op, args, kwargs)

    impl.__name__ = impl.__qualname__ = op.overloadpacket.__name__.lstrip("_") + "_impl"
    return impl


def _native_dtype(part: torch.dtype) -> torch.dtype:
    """The complex dtype a native kernel computes parts of ``part`` in."""
    return torch.complex64 if part in (torch.float16, torch.bfloat16) else complex_dtype_of(part)


def _low_precision(args: Any) -> torch.dtype | None:
    """float16/bfloat16 if every complex input has such parts: outputs are rounded to it."""
    parts = [x.component_dtype for x in tree_flatten(args)[0] if isinstance(x, ComplexTensor)]
    if parts and all(p in (torch.float16, torch.bfloat16) for p in parts):
        return torch.float16 if all(p == torch.float16 for p in parts) else torch.bfloat16
    return None


def _round_to(x: Any, low: torch.dtype | None) -> Any:
    if low is None or not isinstance(x, Tensor):
        return x
    if isinstance(x, ComplexTensor):
        return ComplexTensor(x.re.to(low), x.im.to(low))
    return x.to(low) if x.dtype.is_floating_point else x


def _is_traced(args: Any) -> bool:
    """Whether the call is traced into a graph, or its operands hold no values (meta): then
    the kernel does not run (Note [Traced or computed])."""
    tensors: list[Tensor] = []
    for x in tree_flatten(args)[0]:
        if isinstance(x, ComplexTensor):
            tensors += [x.re, x.im]
        elif isinstance(x, Tensor) and not isinstance(x, RealView):
            tensors.append(x)
    return _lowering.without_values(*tensors)


# Note [Extern kernels in exported graphs]
# ----------------------------------------
# A graph for deployment (torchcx.export) cannot call ``torchcx::extern``: its kernel is
# Python, which neither AOTInductor's C++ runtime nor ONNX can run. There a traced
# extern call takes one of two other forms (``traced_externs``): "native", the aten op
# itself on complex tensors made from the parts (``view_as_complex`` in, ``view_as_real``
# out: the only complex values of the graph, which the target runs as its own FFT), or
# "refused", a NotImplementedError naming the op, for a graph that must be real-only.
# The FFT rule keeps its choice in the "native" form (``fft=`` chooses the form);
# complex GEMMs take the vendor's kernel only where ``gemm=`` allows it
# (``native_gemm_traced``): torch.onnx converts no complex matrix product.
# (a context variable, per thread, as the settings are: Note [Settings per thread])
_TRACED_FORM: ContextVar[str] = ContextVar("torchcx_traced_externs", default="custom_op")
TRACED_FORMS = ("custom_op", "native", "refused")


_NATIVE_GEMM: ContextVar[bool] = ContextVar("torchcx_native_gemm", default=True)


@contextlib.contextmanager
def traced_externs(form: str, *, native_gemm: bool = False) -> Iterator[None]:
    """Trace extern calls in ``form`` (Note [Extern kernels in exported graphs]) within the block;
    ``native_gemm``: complex GEMMs may take the vendor's kernel (in the "native" form only)."""
    if form not in TRACED_FORMS:
        raise ValueError(f"torchcx: unknown extern form {form!r}; expected one of {TRACED_FORMS}")
    tokens = _TRACED_FORM.set(form), _NATIVE_GEMM.set(native_gemm and form == "native")
    try:
        yield
    finally:
        _TRACED_FORM.reset(tokens[0])
        _NATIVE_GEMM.reset(tokens[1])


def native_gemm_traced() -> bool:
    """Whether a traced complex GEMM may call the vendor's complex kernel: always in a compiled
    graph (``torchcx::extern``), in an exported one only when asked (``gemm=``)."""
    return _TRACED_FORM.get() == "custom_op" or _NATIVE_GEMM.get()


def hands_over_layout(*args: Any) -> bool:
    """Whether an extern call with these operands hands the native kernel their layout: in a
    compiled graph its words are written with the parts' strides (Note [Packed form]); eager
    calls and exported graphs interleave into a new row-major tensor instead."""
    return _is_traced(args) and _TRACED_FORM.get() == "custom_op"


def call_extern(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``op`` with its native complex kernel; ComplexTensor in, ComplexTensor out."""
    low = _low_precision((args, kwargs))
    form = _TRACED_FORM.get() if _is_traced((args, kwargs)) else None
    if form == "refused":
        raise NotImplementedError(
            f"{op} ({describe_args(args, kwargs)}) has no real-arithmetic form: it runs as the native "
            "complex kernel, which a real-only graph cannot hold"
        )
    if form == "native":
        out = tree_map(
            _from_native_traced, op(*tree_map(_to_native_traced, args), **tree_map(_to_native_traced, kwargs))
        )
    elif form == "custom_op":
        out = _call_traced(op, args, kwargs)
    else:
        out = op(*tree_map(_to_native, args), **tree_map(_to_native, kwargs))
        out = tree_map(_from_native, out)
    return tree_map(lambda x: _round_to(x, low), out)


def _to_native_traced(x: Any) -> Any:
    """``x`` as a native complex tensor, by ops a trace records (``view_as_complex`` of stacked parts)."""
    if isinstance(x, ComplexTensor):
        part = component_dtype_of(_native_dtype(x.component_dtype))
        return torch.view_as_complex(torch.stack([x.re.to(part), x.im.to(part)], dim=-1))
    if isinstance(x, RealView):
        return x.materialize()
    return x


def _from_native_traced(x: Any) -> Any:
    if isinstance(x, Tensor) and x.is_complex():
        pair = torch.view_as_real(x.resolve_conj())
        return ComplexTensor(pair.select(-1, 0), pair.select(-1, 1))
    return x


def _to_native(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(_native_dtype(x.component_dtype))
    if isinstance(x, RealView):
        return x.materialize()
    return x


def _from_native(x: Any) -> Any:
    if isinstance(x, Tensor) and x.is_complex():
        return ComplexTensor.from_interleaved(x)
    return x


# -- the custom op ---------------------------------------------------------------------------


def encode(args: Any, kwargs: dict[str, Any]) -> tuple[str, list[Tensor], list[Any]]:
    """(spec, tensors, symbolic ints) describing an op call with real tensors only.

    The spec is JSON mirroring the arguments: lists stay lists, a tensor is
    ``{"tensor": i}`` (with ``"complex": dtype`` when it carries a complex
    tensor in the layout of that dtype, Note [Interleaved layouts]), a symbolic
    int ``{"symint": i}``, and dtypes, devices, complex and non-finite scalars
    are tagged. It is deterministic: Inductor's graph cache keys on it.
    """
    tensors: list[Tensor] = []
    ints: list[Any] = []

    def enc(x: Any) -> Any:
        if isinstance(x, ComplexTensor):
            dtype = _native_dtype(x.component_dtype)
            tensors.append(_layout.packed(x, dtype))
            return {"tensor": len(tensors) - 1, "complex": str(dtype)}
        if isinstance(x, Tensor):
            tensors.append(x.materialize() if isinstance(x, RealView) else _not_overlapping(x))
            return {"tensor": len(tensors) - 1}
        if isinstance(x, torch.SymInt):
            ints.append(x)
            return {"symint": len(ints) - 1}
        if isinstance(x, (list, tuple)):
            return [enc(v) for v in x]
        if isinstance(x, complex):
            return {"complex": [_float(x.real), _float(x.imag)]}
        if isinstance(x, float):
            return _float(x)
        if isinstance(x, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
            return {type(x).__name__: str(x)}
        if isinstance(x, (bool, int, str)) or x is None:
            return x
        raise NotImplementedError(f"torchcx: cannot pass {type(x).__name__} to an extern kernel")

    spec = {"args": [enc(a) for a in args], "kwargs": {k: enc(v) for k, v in sorted(kwargs.items())}}
    return json.dumps(spec, sort_keys=True), tensors, ints


def _not_overlapping(t: Tensor) -> Tensor:
    """``t``, or a contiguous copy if its elements share memory (``unfold``, ``expand``).

    Inductor materializes a custom op's input in the strides the trace saw; for
    an overlapping view it would compute the view's producer into overlapping
    memory, elements overwriting each other (istft's backward gave wrong
    gradients: ``_fft_r2c`` of an ``unfold``). The native kernel reads the same
    values from a copy.
    """
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    if not all(is_concrete_int(v) for v in (*t.shape, *t.stride())):
        return t  # symbolic: no guard is added here
    return t.contiguous() if _layout.overlaps(t) else t


def _float(v: float) -> Any:
    # JSON has no inf/nan: tag them
    return {"float": repr(v)} if (math.isinf(v) or math.isnan(v)) else v


def decode(spec: str, tensors: list[Tensor], ints: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments ``encode`` described, complex tensors viewed as complex again."""
    return _decoder(spec)(tensors, ints)


_Build = Callable[[list[Tensor], list[Any]], Any]


@functools.lru_cache(maxsize=4096)
def _decoder(spec: str) -> _Build:
    """``decode`` for one spec, built once: a compiled graph passes the same spec at every
    call, and walking the parsed JSON each time was a measurable part of an extern call."""

    def build(x: Any) -> _Build:
        if isinstance(x, list):
            items = [build(v) for v in x]
            return lambda t, i: [f(t, i) for f in items]
        if isinstance(x, dict) and "tensor" in x:
            index = x["tensor"]
            if "complex" in x:
                dtype = _DTYPES[x["complex"]]
                return lambda t, i: _layout.from_real(t[index], dtype)
            return lambda t, i: t[index]
        if isinstance(x, dict) and "symint" in x:
            index = x["symint"]
            return lambda t, i: i[index]
        value = _constant(x)
        return lambda t, i: value

    data = json.loads(spec)
    args = [build(a) for a in data["args"]]
    kwargs = {k: build(v) for k, v in data["kwargs"].items()}
    return lambda t, i: (tuple([f(t, i) for f in args]), {k: f(t, i) for k, f in kwargs.items()})


def _constant(x: Any) -> Any:
    """A spec leaf that is neither a tensor nor a symbolic int, as the value it stands for."""
    if not isinstance(x, dict):
        return x
    ((kind, value),) = x.items()
    if kind == "complex":
        return complex(float(_constant(value[0])), float(_constant(value[1])))
    if kind == "float":
        return float(value)
    if kind == "dtype":
        return _DTYPES[value]
    if kind == "device":
        return torch.device(value)
    return getattr(torch, value.replace("torch.", ""))  # layout, memory_format


_DTYPES = {str(d): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


@functools.lru_cache(maxsize=4096)
def _op_from_name(name: str) -> OpOverload:
    namespace, rest = name.split("::")
    packet_name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, namespace), packet_name)
    return getattr(packet, overload or "default")


def op_name(op: OpOverload) -> str:
    return f"{op._schema.name}.{op._overloadname}"


# A plain library op rather than torch.library.custom_op: its Python wrappers (autograd
# registration, argument checks) cost about 20 us per call, twice what the rest of an
# extern call costs, and every compiled FFT or GEMM pays it. It is functional (outputs
# never alias inputs, below), needs no autograd (it runs inside graphs AOTAutograd has
# already differentiated), and its fake implementation is registered below.
_LIB = torch.library.Library("torchcx", "FRAGMENT")
_LIB.define("extern(str op, str spec, Tensor[] tensors, SymInt[] ints) -> Tensor[]")


def extern_kernel(op: str, spec: str, tensors: list[Tensor], ints: list[int]) -> list[Tensor]:
    """The native kernel of aten op ``op`` on interleaved inputs (Note [Extern kernels])."""
    return _call_plan(op, spec)(tensors, ints)


@functools.lru_cache(maxsize=4096)
def _call_plan(op: str, spec: str) -> Callable[[list[Tensor], list[Any]], list[Tensor]]:
    """An extern call for one (op, spec), with everything that depends on them looked up once:
    every call of a compiled graph repeats them, and an FFT or GEMM on small data costs a few
    microseconds, of the order of this wrapper."""
    target = _op_from_name(op)
    arguments = _decoder(spec)

    def call(tensors: list[Tensor], ints: list[Any]) -> list[Tensor]:
        args, kwargs = arguments(tensors, ints)
        out = target(*args, **kwargs)
        leaves = [out] if isinstance(out, Tensor) else [x for x in tree_flatten(out)[0] if isinstance(x, Tensor)]
        # (storages compared by address: live storages with memory have distinct ones; empty
        # storages all have address 0, and cloning an empty result costs nothing)
        inputs = [t.untyped_storage().data_ptr() for t in tensors]
        results = []
        for x in leaves:
            x = _real_result(x)
            if x.untyped_storage().data_ptr() in inputs:
                x = x.clone()  # a custom op's outputs may not alias its inputs
            results.append(x)
        return results

    return call


_LIB.impl("extern", extern_kernel, "CompositeExplicitAutograd")


@torch.library.register_fake("torchcx::extern", lib=_LIB)
def _extern_kernel_fake(op: str, spec: str, tensors: list[Tensor], ints: list[int]) -> list[Tensor]:
    args, kwargs = decode(spec, tensors, ints)
    out = _op_from_name(op)(*args, **kwargs)
    return [_real_result(x).clone() for x in tree_flatten(out)[0] if isinstance(x, Tensor)]


def _real_result(x: Tensor) -> Tensor:
    """A kernel result as the real tensor the graph receives; a complex result may be a conj
    view (lu_solve(adjoint=True, left=False) returns one), resolved first."""
    if not x.is_complex():
        return x
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    return _layout.to_real(x)


def _call_traced(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The custom-op call inside a traced graph; outputs unpacked back into parts."""
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

    # Output structure and dtypes from a fake run of the native op (not recorded).
    with disable_proxy_modes_tracing():
        meta_out = op(*tree_map(_fake_native, args), **tree_map(_fake_native, kwargs))
    spec, tensors, ints = encode(args, kwargs)
    real_outs = iter(torch.ops.torchcx.extern(op_name(op), spec, tensors, ints))
    meta_leaves, meta_spec = tree_flatten(meta_out)
    leaves = []
    for m in meta_leaves:
        if not isinstance(m, Tensor):
            leaves.append(m)
            continue
        t = next(real_outs)
        if m.is_complex():
            t = _layout.unpack_remembering(t, m.dtype)
        leaves.append(t)
    return tree_unflatten(leaves, meta_spec)


def _fake_native(x: Any) -> Any:
    """A stand-in native tensor with ``x``'s metadata, for computing output metadata."""
    if isinstance(x, ComplexTensor):
        return torch.empty_strided(x.shape, x.re.stride(), dtype=_native_dtype(x.component_dtype), device=x.device)
    if isinstance(x, RealView):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if isinstance(x, Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    return x
