"""The op table and the dispatcher that ComplexTensor's __torch_dispatch__ calls.

Note [How an op is resolved]
----------------------------
``dispatch(func, args, kwargs)`` runs the implementation ``entry_for(func)``
finds for the aten overload ``func``, in this order (the answer, an ``OpEntry``,
is cached per overload):

1. The table. Family modules fill it with ``@register(aten.exp)``, the family
   decorators of ``_common`` (``unary``, ``binary``, ``partwise``, ...) and
   ``extern.register_extern``; each entry records its kind and family. A key
   is an ``OpOverload`` (one overload) or an ``OpOverloadPacket`` (all
   overloads of the op). Registering a key twice is an error at import.
2. In-place and ``out=`` variants of a registered functional op:
   ``aten.mul_.Tensor`` runs ``aten.mul.Tensor`` and copies the result into
   ``self``; ``aten.mul.out`` copies it into ``out``. Torch's casting rule for
   in-place results applies (complex into a real tensor is an error).
3. PyTorch's own decomposition of the op (``torch._decomp``'s core aten
   decompositions), or its CompositeImplicitAutograd kernel. These re-enter
   dispatch with simpler ops. (A decomposition that is wrong for complex
   inputs is overridden by a table entry: step 1 comes first.)
4. Otherwise the entry is "missing": its implementation raises
   ``NotImplementedError`` naming the op and the argument dtypes, never a
   silent wrong answer. (The compile backend reads the kind and runs the op
   as an eager fallback instead.)

Native complex tensors among the arguments are wrapped (zero-copy) as
ComplexTensor before the implementation runs, so implementations see only
ComplexTensor, real tensors and Python scalars.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor
from torch._ops import OpOverload, OpOverloadPacket
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from ..tensor import ComplexTensor, RealView, complex32_parts

aten = torch.ops.aten

Impl = Callable[..., Any]
Op = OpOverload | OpOverloadPacket

#: How a table entry computes its op (step 1 of Note [How an op is resolved]).
TableKind = Literal["formula", "partwise", "implementation", "extern", "refused"]
#: How an overload resolves: a table kind, or one of steps 2 to 4.
EntryKind = Literal[
    "formula",  # a formula on the parts (``_common.unary``, ``unary_to_real``, ``binary``): elementwise
    "partwise",  # the op applied to each part (``_common.partwise``): views, movement, indexing, fills
    "implementation",  # a decomposition into real ops written for the op (``@register``)
    "extern",  # the native complex kernel on interleaved data (``extern.register_extern``)
    "refused",  # eager has no complex kernel: raise eager's error rather than compute one
    "inplace_variant",  # runs a table entry and copies into ``self`` (step 2)
    "out_variant",  # runs a table entry and copies into ``out=`` (step 2)
    "decomposition",  # PyTorch's core aten decomposition (step 3)
    "composite",  # PyTorch's CompositeImplicitAutograd kernel (step 3)
    "missing",  # nothing computes it: the implementation raises NotImplementedError (step 4)
]
TABLE_KINDS: tuple[TableKind, ...] = ("formula", "partwise", "implementation", "extern", "refused")


@dataclass(frozen=True)
class OpEntry:
    """How torchcx computes one aten op: a table entry, or what an overload resolves to."""

    #: The table key (an overload or a packet); for steps 2 to 4, the overload resolved.
    op: Op
    impl: Impl
    kind: EntryKind
    #: The module under ``torchcx/ops`` that registered the entry ("pointwise", "linalg", ...);
    #: a variant's is its base's; None for PyTorch's decompositions and missing ops.
    family: str | None
    #: Whether the implementation may run the native complex kernel (Note [Extern kernels]):
    #: always for "extern", by size, dtype, device or config for the FFT and GEMM paths.
    calls_extern: bool = False
    #: The table entry an in-place or ``out=`` variant runs.
    base: OpEntry | None = None

    @property
    def in_table(self) -> bool:
        return self.kind in TABLE_KINDS

    def describe(self) -> str:
        """How the op is computed, in a few words (``torchcx.explain`` prints it)."""
        if self.base is not None:
            where = "in place" if self.kind == "inplace_variant" else "into out="
            return f"{self.base.describe()}, written {where}"
        if self.kind == "decomposition":
            return "PyTorch's decomposition"
        if self.kind == "composite":
            return "PyTorch's composite kernel"
        text = _KIND_TEXT.get(self.kind, self.kind)
        text = f"{self.family}: {text}" if self.family else text
        if self.calls_extern and self.kind != "extern":
            text += ", may call an extern kernel"
        return text


_KIND_TEXT = {
    "formula": "formula on the parts",
    "partwise": "applied to each part",
    "implementation": "real decomposition",
    "extern": "extern kernel",
    "refused": "refused, as eager does",
    "missing": "no implementation",
}

_TABLE: dict[Op, OpEntry] = {}

#: Ops torchcx runs as extern kernels over interleaved data (LAPACK, scans): the packets of the
#: "extern" entries, filled by ``register``. ``torchcx.export`` reads it to refuse them in a
#: real-only graph.
EXTERN_OPS: set[OpOverloadPacket] = set()

#: Ops a RealView (``view_as_real`` of planar parts) runs through an implementation of their
#: own rather than on a materialized copy: collectives, which ``torch.distributed`` calls on
#: ``view_as_real`` of a complex tensor and which write their results later (``distributed``).
REAL_VIEW_OPS: dict[OpOverload, Impl] = {}

#: Checks run before every in-place or ``out=`` op, as ``check(func, args, kwargs)``: they
#: raise where a write would convert values silently (``distributed``: DDP's C++ reducer
#: copying bfloat16 parts into a float16-part bucket).
WRITE_CHECKS: list[Impl] = []

#: Ops that can make complex results from real inputs (``_fft_r2c``, ``linalg_eig``).
#: ``ComplexMode`` routes them to torchcx even when no argument is complex.
REAL_TO_COMPLEX_OPS: set[OpOverloadPacket] = set()


def register(
    *ops: Op,
    kind: TableKind = "implementation",
    family: str | None = None,
    calls_extern: bool = False,
) -> Callable[[Impl], Impl]:
    """Register the decorated function as the implementation of ``ops``: one table entry each.

    ``family`` is the module that registers it, by default the function's own
    (the family decorators, whose functions are made elsewhere, pass it).
    """

    def decorator(fn: Impl) -> Impl:
        owner = family if family is not None else fn.__module__.rpartition(".")[2]
        for op in ops:
            if op in _TABLE:
                raise RuntimeError(
                    f"torchcx: {op} registered twice: by {_TABLE[op].impl.__qualname__} and by {fn.__qualname__}"
                )
            _TABLE[op] = OpEntry(op, fn, kind, owner, calls_extern=calls_extern or kind == "extern")
            if kind == "extern":
                EXTERN_OPS.add(op.overloadpacket if isinstance(op, OpOverload) else op)
        entry_for.cache_clear()
        return fn

    return decorator


def calling_family(depth: int = 1) -> str:
    """The family of the code ``depth`` frames above the caller: the module a helper that makes
    its implementations itself (``partwise``, ``register_extern``) registers them for."""
    return sys._getframe(depth + 1).f_globals["__name__"].rpartition(".")[2]


def table() -> dict[Op, OpEntry]:
    """A copy of the table: every registered entry, for coverage reports and tests."""
    return dict(_TABLE)


def registered_ops() -> dict[Op, Impl]:
    """The table's implementations by key (``table()`` has the entries)."""
    return {op: entry.impl for op, entry in _TABLE.items()}


def _wrap_native(x: Any) -> Any:
    if isinstance(x, Tensor) and not isinstance(x, (ComplexTensor, RealView)) and x.is_complex():
        return ComplexTensor.from_interleaved(x)
    return x


def dispatch(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run aten overload ``func`` on arguments that may include ComplexTensors."""
    impl = entry_for(func).impl
    _check_operands(func, args, kwargs)
    mutable = func._schema.is_mutable
    if mutable:
        for check in WRITE_CHECKS:
            check(func, args, kwargs)
    try:
        with _lazy_bits_honoured():
            out = impl(*tree_map(_wrap_native, args), **tree_map(_wrap_native, kwargs))
    except _NAMED_ERRORS as e:
        _name_the_op(e, func, args, kwargs)
        raise
    if mutable:
        # An in-place or out= op returns the very tensor it mutated, not our wrapper of it.
        out = _mutated_originals(func, args, kwargs, out)
    else:
        source = _viewed_argument(func)
        if (
            source is not None
            and source < len(args)
            and isinstance(args[source], ComplexTensor)
            and func.overloadpacket not in _LAZY_SIGN_VIEWS
        ):
            _share_storage(out, args[source])
    return out


# Note [A view shares its base's storage]
# ---------------------------------------
# A ComplexTensor is a wrapper: its own storage holds no data, and a fresh wrapper gets a
# fresh one. AOTAutograd decides which outputs alias which inputs by the *wrapper's*
# storage (collect_metadata_analysis), so a view's wrapper must share its base's, as a
# native view does. Without it, ``x.add_(y); return x.t()`` on a ComplexTensor input was
# returned as a fresh buffer once compiled (the functional graph computes the view of the
# new value; only metadata that says "view of input 0" makes the run time replay it on x),
# found by the fuzzing campaign (run E, seed 12003). torch's return_and_correct_aliasing
# does the same for subclasses that use it.


#: Views whose result negates a part lazily (``_neg_view``): no strided view of the base
#: reproduces them, and AOTAutograd regenerates an output that shares an input's storage by
#: replaying or ``as_strided``-ing it from the input, which lost the sign (``a.conj().mul_(0.25)``
#: returned: fuzzing run H, seed 19004). They keep a storage of their own, as before.
_LAZY_SIGN_VIEWS = frozenset((aten._conj, aten.conj, aten._neg_view))


@functools.cache
def _viewed_argument(func: OpOverload) -> int | None:
    """The position of the argument a view op's result aliases (None: ``func`` is no view op)."""
    returns = func._schema.returns
    if not returns or returns[0].alias_info is None or returns[0].alias_info.is_write:
        return None
    alias = set(returns[0].alias_info.before_set)
    for i, arg in enumerate(func._schema.arguments):
        info = arg.alias_info
        if info is None or info.is_write or arg.kwarg_only:
            continue
        # a list of views (``unbind(Tensor(a -> *) self) -> Tensor(a)[]``) has no alias set of its own
        if set(info.before_set) == alias or (not alias and "*" in info.after_set):
            return i
    return None


def _share_storage(out: Any, base: ComplexTensor) -> None:
    """Give each ComplexTensor result of a view op its base's storage (Note [A view shares its
    base's storage]); metadata (sizes, strides, offset) stays the view's."""
    for r in out if isinstance(out, (list, tuple)) else (out,):
        if type(r) is ComplexTensor and r is not base:
            torch._functionalize_unsafe_set(r, base)


# -- bad input -----------------------------------------------------------------------------
# Note [Bad input names the op]
# ------------------------------
# An error raised on bad input must name the op, the operands' dtypes and devices, and
# say what to do instead (never a wrong value, never an error from deep inside a
# formula that names nothing). Two things make that so:
#
# * ``_check_operands`` refuses, before any formula runs, what the formulas cannot take:
#   operands on two devices (torch's CPU kernels of ``mm`` and ``index`` read a meta
#   tensor's missing data and return garbage, so the check cannot be left to the parts'
#   ops), and sparse, nested or quantized tensors (no planar form; their own errors come
#   from type promotion or storage access and name no op).
# * ``_name_the_op`` appends the op and its arguments to any other plain error raised
#   while the op runs (eager's broadcasting and promotion errors name no op). Only
#   exceptions of exactly these builtin types are annotated, in place (same object, same
#   type, original message first): subclasses such as Dynamo's data-dependent-shape
#   errors are control flow and pass untouched. An error raised by an op that a
#   decomposition calls is named by that inner op, the one that failed.

#: Ops that take tensors on several devices by design: copies between devices.
_CROSS_DEVICE_OPS = frozenset((aten.copy_, aten._copy_from, aten._copy_from_and_resize, aten._to_copy))
#: Ops whose index tensors may stay on the CPU whatever the device of ``self`` (as in torch).
_CPU_INDEX_OPS = frozenset(
    (aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_, aten._unsafe_index, aten._unsafe_index_put)
)

_NAMED_ERRORS = (RuntimeError, TypeError, ValueError, NotImplementedError, IndexError, AssertionError)


def _kind_of_unplanar(t: Tensor) -> str | None:
    """What makes ``t`` unusable as an operand of a ComplexTensor op, if anything."""
    if t.is_nested:
        return "nested"
    if t.layout != torch.strided:
        return f"sparse ({t.layout})"
    if t.is_quantized:
        return "quantized"
    return None


#: What to do instead, per kind of operand refused by ``_check_operands``.
_INSTEAD = {
    "nested": "unbind() it into ordinary tensors (or to_padded_tensor(0.0)) first",
    "sparse": "call .to_dense() on it first",
    "quantized": "call .dequantize() on it first",
}


def _check_operands(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Note [Bad input names the op]: refuse mixed devices and sparse, nested or quantized operands."""
    devices: dict[torch.device, None] = {}  # (ordered: the first one is self's)
    for x in tree_leaves((args, kwargs)):
        if not isinstance(x, Tensor):
            continue
        kind = _kind_of_unplanar(x)
        if kind is not None:
            raise NotImplementedError(
                f"torchcx: {func} got a {kind} tensor ({_describe_operands(args, kwargs)}): ComplexTensor ops "
                f"take ordinary (strided) tensors; {_INSTEAD[kind.split()[0]]}"
            )
        if x.dim() == 0 and x.device.type == "cpu":
            continue  # a CPU scalar goes with tensors on any device, as in torch
        devices[x.device] = None
    if len(devices) < 2 or func.overloadpacket in _CROSS_DEVICE_OPS:
        return
    if func.overloadpacket in _CPU_INDEX_OPS:
        first = next(iter(devices))  # self's
        if all(d == first or d.type == "cpu" for d in devices):
            return  # indices on the CPU for a tensor elsewhere
    names = ", ".join(str(d) for d in devices)
    raise RuntimeError(
        f"torchcx: {func} expected all tensors on one device, got {names} "
        f"({_describe_operands(args, kwargs)}); move them to one device with .to(device) first"
    )


def _describe_operands(args: Any, kwargs: dict[str, Any]) -> str:
    """Like ``describe_args``, with each tensor's device and any layout other than strided."""

    def one(x: Any) -> str:
        if isinstance(x, Tensor):
            kind = _kind_of_unplanar(x)
            dtype = x.component_dtype if isinstance(x, ComplexTensor) else x.dtype
            extra = f", {kind}" if kind is not None else ""
            shape = "nested" if x.is_nested else list(x.shape)
            return f"{type(x).__name__}[{dtype}]{shape} on {x.device}{extra}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(one(v) for v in x) + "]"
        return type(x).__name__

    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])


def _name_the_op(e: BaseException, func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Note [Bad input names the op]: append ``func`` and its arguments to a plain error's message."""
    if type(e) not in _NAMED_ERRORS:
        return
    message = e.args[0] if len(e.args) == 1 and isinstance(e.args[0], str) else None
    if len(e.args) == 0:
        message = ""
    if message is None or "torchcx" in message:
        return  # (named already, by torchcx or by an inner op's dispatch)
    try:
        where = f"torchcx: in {func} with arguments ({_describe_operands(args, kwargs)})"
    except Exception:  # noqa: BLE001  (describing must never hide the error itself)
        where = f"torchcx: in {func}"
    e.args = (f"{message} ({where})" if message else where,)


@contextlib.contextmanager
def _lazy_bits_honoured() -> Iterator[None]:
    """Honour the conj/neg bits of the real parts while an implementation runs.

    ``__torch_dispatch__`` runs with the Conjugate and Negative dispatch keys
    excluded (they sit above Python), so an op on a lazily negated part
    (``conj()``'s imaginary part, a ``_neg_view``) would read the stored
    values, not their negation. Re-enable both keys for the parts' ops.
    """
    with (
        torch._C._SetExcludeDispatchKeyGuard(torch._C.DispatchKey.Negative, False),
        torch._C._SetExcludeDispatchKeyGuard(torch._C.DispatchKey.Conjugate, False),
    ):
        yield


def _mutated_originals(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
    returns = func._schema.returns
    if len(returns) != 1 or returns[0].alias_info is None:
        return out
    alias = returns[0].alias_info
    for i, arg in enumerate(func._schema.arguments):
        if (
            arg.alias_info is not None
            and arg.alias_info.is_write
            and set(arg.alias_info.before_set) == set(alias.before_set)
        ):
            if arg.kwarg_only or i >= len(args):
                return kwargs.get(arg.name, out)
            return args[i]
    return out


@functools.cache
def entry_for(func: OpOverload) -> OpEntry:
    """How ``func`` is computed (Note [How an op is resolved]): its table entry, or the derived one."""
    entry = _TABLE.get(func)
    if entry is None and not any(a.is_out for a in func._schema.arguments):
        # A packet's entry is its functional overloads' implementation; its
        # out= overloads (``aten.exp.out``) are derived from them (step 2).
        entry = _TABLE.get(func.overloadpacket)
    if entry is not None:
        return entry
    variant = derived_variant(func)
    if variant is not None:
        return variant
    decomposition = _decomposition(func)
    if decomposition is not None:
        return decomposition
    return OpEntry(func, functools.partial(_not_implemented, func), "missing", None)


def resolve(func: OpOverload) -> Impl:
    """The implementation used for ``func``: ``entry_for(func).impl``."""
    return entry_for(func).impl


#: Ops that order their operands: complex numbers have no order, and PyTorch refuses
#: them for complex dtypes too; the error says so instead of only "not implemented".
_ORDERING_OPS = frozenset(
    getattr(aten, name)
    for name in (
        "lt le gt ge max min maximum minimum fmax fmin amax amin aminmax sort argsort msort argmax argmin "
        "topk kthvalue median nanmedian mode cummax cummin clamp clamp_min clamp_max clip relu hardtanh "
        "searchsorted bucketize histc heaviside"
    ).split()
    if hasattr(aten, name)
)


def _not_implemented(func: OpOverload, *args: Any, **kwargs: Any) -> Any:
    # The implementation of a "missing" entry: an error naming the op and what to do instead.
    if func.overloadpacket in _ORDERING_OPS:
        instead = (
            "complex numbers have no order (PyTorch refuses this op for complex dtypes too): "
            "apply it to z.abs(), z.real or z.imag instead"
        )
    else:
        instead = (
            "if PyTorch has a complex kernel for it, run it on a native tensor (z.to_interleaved(); "
            "to_interleaved(torch.complex64) for bfloat16 parts), or add a decomposition "
            "(docs/adding-an-op.md)"
        )
    raise NotImplementedError(
        f"torchcx: no complex decomposition for {func} with arguments ({describe_args(args, kwargs)}); {instead}"
    )


def describe_args(args: Any, kwargs: dict[str, Any] | None = None) -> str:
    """A short description of argument types/dtypes for error messages."""

    def one(x: Any) -> str:
        if isinstance(x, ComplexTensor):
            return f"ComplexTensor[{x.component_dtype}]{list(x.shape)}"
        if isinstance(x, Tensor):
            return f"{type(x).__name__}[{x.dtype}]{list(x.shape)}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(one(v) for v in x) + "]"
        return type(x).__name__

    parts = [one(a) for a in args]
    parts += [f"{k}={one(v)}" for k, v in (kwargs or {}).items()]
    return ", ".join(parts)


# -- in-place and out= variants ------------------------------------------------------


def _functional_overload(func: OpOverload) -> OpOverload | None:
    """The functional overload an in-place (``mul_``) or ``out=`` overload mirrors."""
    schema = func._schema
    name = func.overloadpacket.__name__
    if schema.is_mutable and name.endswith("_") and not name.startswith("_"):
        packet = getattr(aten, name[:-1], None)
        overload = func._overloadname
    elif any(a.is_out for a in schema.arguments):
        packet, overload = func.overloadpacket, None
    else:
        return None
    if packet is None:
        return None
    ins = [a for a in schema.arguments if not a.is_out]
    candidates = [overload] if overload is not None else packet.overloads()
    for name_ in candidates:
        try:
            op = getattr(packet, name_)
        except AttributeError:
            continue
        if op is func or any(a.is_out for a in op._schema.arguments):
            continue
        theirs = op._schema.arguments
        if [a.name for a in theirs] == [a.name for a in ins]:
            return op
    return None


def derived_variant(func: OpOverload) -> OpEntry | None:
    """The entry of an in-place or ``out=`` overload that runs a table entry (step 2), if it is one."""
    functional = _functional_overload(func)
    if functional is None:
        return None
    base = _TABLE.get(functional) or _TABLE.get(functional.overloadpacket)
    if base is None:
        return None
    out_names = [a.name for a in func._schema.arguments if a.is_out]
    if not out_names:

        def inplace(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = dispatch(functional, (self, *args), kwargs)
            _copy_result(func, self, result)
            return self

        return OpEntry(func, inplace, "inplace_variant", base.family, base.calls_extern, base)

    def out_variant(*args: Any, **kwargs: Any) -> Any:
        outs = [kwargs.pop(n) for n in out_names]
        result = dispatch(functional, args, kwargs)
        results = result if isinstance(result, (tuple, list)) else (result,)
        for out, value in zip(outs, results):
            _resize_out(func, out, value)
            _copy_result(func, out, value)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return OpEntry(func, out_variant, "out_variant", base.family, base.calls_extern, base)


def _copy_result(func: OpOverload, dst: Tensor, value: Any) -> None:
    if isinstance(value, Tensor):
        if not torch.can_cast(value.dtype, dst.dtype) and value.dtype != dst.dtype:
            raise RuntimeError(
                f"result type {scalar_type_name(value)} can't be cast to the desired output type "
                f"{scalar_type_name(dst)} ({func})"
            )
        if value.shape != dst.shape and torch.broadcast_shapes(value.shape, dst.shape) != dst.shape:
            raise RuntimeError(
                f"output with shape {list(dst.shape)} doesn't match the broadcast shape {list(value.shape)} ({func})"
            )
    dst.copy_(value)


def _resize_out(func: OpOverload, out: Tensor, value: Any) -> None:
    if not isinstance(value, Tensor) or out.shape == value.shape:
        return
    if isinstance(out, ComplexTensor):
        if out.numel() != 0:
            raise RuntimeError(
                f"torchcx: {func}: out= ComplexTensor has shape {list(out.shape)}, result {list(value.shape)}"
            )
        raise NotImplementedError(f"torchcx: {func}: resizing an out= ComplexTensor is not supported")
    out.resize_(value.shape)


# -- dtype names in error messages ---------------------------------------------------------
# Each mimics the message of the eager error it stands for, or is torchcx's own.


def scalar_type_name(t: Tensor) -> str:
    """``t``'s dtype as eager's errors name it, c10's ScalarType ("ComplexFloat", "Float");
    "ComplexBFloat16" for bfloat16 parts, which torch has no dtype for."""
    if isinstance(t, ComplexTensor) and t.component_dtype == torch.bfloat16:
        return "ComplexBFloat16"
    names = {
        torch.complex64: "ComplexFloat",
        torch.complex128: "ComplexDouble",
        torch.complex32: "ComplexHalf",
        torch.float32: "Float",
        torch.float64: "Double",
        torch.float16: "Half",
        torch.bfloat16: "BFloat16",
    }
    return names.get(t.dtype, str(t.dtype))


def c10_type_name(dtype: torch.dtype) -> str:
    """``dtype`` as eager's dtype checks of some kernels name it, the C++ type ("c10::complex<float>")."""
    return {
        torch.complex128: "c10::complex<double>",
        torch.complex64: "c10::complex<float>",
        torch.complex32: "c10::complex<c10::Half>",
        torch.float64: "double",
        torch.float32: "float",
        torch.float16: "c10::Half",
        torch.bfloat16: "c10::BFloat16",
    }.get(dtype, str(dtype))


def dtype_text(t: Tensor) -> str:
    """``t``'s dtype in torchcx's own errors: "complex64", or "complex with bfloat16 parts"."""
    if isinstance(t, ComplexTensor) and t.component_dtype == torch.bfloat16:
        return "complex with bfloat16 parts"
    return str(t.dtype).replace("torch.", "")


# -- PyTorch's own decompositions ----------------------------------------------------


@functools.cache
def _core_decompositions() -> dict[OpOverload, Impl]:
    # Only decompositions into core aten ops: the full table also lowers to prims,
    # which have no complex semantics to speak of.
    from torch._decomp import core_aten_decompositions

    return dict(core_aten_decompositions())


def _decomposition(func: OpOverload) -> OpEntry | None:
    decomposition = _core_decompositions().get(func)
    if decomposition is not None:
        return OpEntry(func, _in_own_parts(decomposition), "decomposition", None)
    if func.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd):
        return OpEntry(func, _in_own_parts(func.decompose), "composite", None)
    return None


def _in_own_parts(decomposition: Impl) -> Impl:
    """Run a PyTorch decomposition so that the ``complex32`` it names means its inputs' parts.

    Decompositions name ``self.dtype`` (type promotion computes in complex64
    and converts back to it; factories take it), and a ComplexTensor with
    bfloat16 parts reports complex32, which would mean float16 parts. When the
    complex inputs all have one low-precision part dtype, that is what
    complex32 means inside (Note [dtype of a ComplexTensor]). For bfloat16
    parts the decomposition also runs under ``ComplexMode``: a complex value
    it makes from a real one (``convert_element_type(x, complex32)``) must be
    a ComplexTensor, since a native complex32 tensor has float16 parts.
    """

    @functools.wraps(decomposition)
    def run(*args: Any, **kwargs: Any) -> Any:
        parts = {x.component_dtype for x in tree_leaves((args, kwargs)) if isinstance(x, ComplexTensor)}
        if len(parts) != 1 or not parts <= {torch.float16, torch.bfloat16}:
            return decomposition(*args, **kwargs)
        part = parts.pop()
        with complex32_parts(part), ComplexMode() if part == torch.bfloat16 else contextlib.nullcontext():
            return decomposition(*args, **kwargs)

    return run


# -- routing native ops ------------------------------------------------------------------


def touches_complex(args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether an op call has a complex tensor, complex scalar or complex dtype among its arguments."""
    found = False

    def visit(x: Any) -> Any:
        nonlocal found
        if isinstance(x, Tensor):
            found = found or x.is_complex()
        elif isinstance(x, complex) or (isinstance(x, torch.dtype) and x.is_complex):
            found = True
        return x

    tree_map(visit, (args, kwargs))
    return found


class ComplexMode(TorchDispatchMode):
    """Compute every op that touches complex values with torchcx's tables.

    Inside this mode even ops on native complex tensors, and factories asked for
    a complex dtype (``torch.zeros(3, dtype=torch.cfloat)``), are decomposed;
    their complex results are ComplexTensors, also those of ops on real inputs
    listed in ``REAL_TO_COMPLEX_OPS`` (``torch.fft.rfft``), and
    ``view_as_complex`` of a bfloat16 pair: the complex view with bfloat16
    parts, which torch has no dtype for (natively it raises; istft and
    rotary-embedding code reach it). Real ops run as usual.
    """

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        kwargs = kwargs or {}
        if touches_complex(args, kwargs) or func.overloadpacket in REAL_TO_COMPLEX_OPS or _bfloat16_pair(func, args):
            return dispatch(func, args, kwargs)
        return func(*args, **kwargs)


def _bfloat16_pair(func: OpOverload, args: tuple[Any, ...]) -> bool:
    return func is aten.view_as_complex.default and args[0].dtype == torch.bfloat16
