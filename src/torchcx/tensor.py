"""ComplexTensor: a complex tensor carried as two real tensors.

Note [Planar representation]
----------------------------
A ComplexTensor holds its real and imaginary parts as two real tensors, ``re``
and ``im``, of equal shape, dtype and device. Where they live is free: two
separate buffers (what ops produce), two stride-2 views of one interleaved
buffer (what ``from_interleaved`` produces; writes through either reach the
other), or a lazily negated view (what ``conj()`` produces). Every op is
decomposed into real ops on the two parts (``torchcx.ops``). A view of a
ComplexTensor is a ComplexTensor of views of both parts, so in-place ops
through any view reach exactly the memory a native complex tensor's would.

The outer (wrapper) tensor reports the size, strides and storage offset of
``re``, counted in complex elements: when the parts interleave in one buffer
(``element_unit`` is 2) a complex element spans two part elements, so the
strides and offset are halved and equal those of the native complex tensor
over that buffer. ``as_strided`` on a ComplexTensor takes them in the same
units and applies them to ``re``, and to ``im`` at its own offset.

Note [dtype of a ComplexTensor]
-------------------------------
``dtype`` is the torch complex dtype of the same width as the parts:
float64 -> complex128, float32 -> complex64, float16 -> complex32 (chalf).
PyTorch has no complex dtype with bfloat16 parts, so a bfloat16 ComplexTensor
reports ``torch.complex32`` as well: the only complex dtype of its width, which
keeps ``element_size()``, memory accounting and autograd's dtype checks right.
``component_dtype`` tells the two apart (``torch.bfloat16`` or
``torch.float16``) and ``repr`` shows it. ``.to(torch.complex64)`` converts the
parts to float32; ``with_component_dtype(torch.bfloat16)`` makes bfloat16 parts.
Arithmetic on float16/bfloat16 parts is computed in float32 and rounded once
per op, as PyTorch does for float16/bfloat16 real tensors.

A dtype *named* in code is read the same way where the code means "the dtype
of this tensor": ``.to(z.dtype)``, ``zeros_like(z, dtype=z.dtype)``,
``z.new_zeros(n, dtype=z.dtype)`` and ``sum(dtype=z.dtype)`` keep bfloat16
parts, and so does every ``complex32`` a PyTorch decomposition names while it
computes an op whose complex inputs all have bfloat16 parts (its type
promotion converts to complex64 and back to ``self.dtype``:
``complex32_parts``). Elsewhere ``torch.complex32`` means float16 parts, as in
PyTorch: ``torch.zeros(n, dtype=z.dtype)`` has float16 parts whatever z's are.

Note [view_as_real of a planar tensor]
--------------------------------------
``torch.view_as_real`` must return a real ``[..., 2]`` tensor that *aliases*
the complex one (``x.real`` is ``view_as_real(x)[..., 0]``, and users write
through it). When the two parts are the two halves of one interleaved buffer
that is a plain strided view. Otherwise no strided real tensor can alias both
parts, so ``view_as_real`` returns a :class:`RealView`: a real tensor whose
last dimension selects ``re`` or ``im``. Selecting along it gives a plain view
of the part; in-place ops write back to both parts; any other op sees the
values (a stacked copy), as a read of a view would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import torch
from torch import Tensor
from torch.multiprocessing.reductions import StorageWeakRef

__all__ = [
    "ComplexTensor",
    "RealView",
    "as_complex_tensor",
    "complex",
    "complex_dtype_of",
    "complex32_parts",
    "component_dtype_of",
    "COMPONENT_DTYPES",
]

#: Real dtypes a ComplexTensor's parts may have.
COMPONENT_DTYPES: tuple[torch.dtype, ...] = (
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
)

_COMPLEX_OF = {
    torch.float64: torch.complex128,
    torch.float32: torch.complex64,
    torch.float16: torch.complex32,
    torch.bfloat16: torch.complex32,
}
_COMPONENT_OF = {
    torch.complex128: torch.float64,
    torch.complex64: torch.float32,
    torch.complex32: torch.float16,
}


def complex_dtype_of(component: torch.dtype) -> torch.dtype:
    """The torch complex dtype reported for parts of dtype ``component``."""
    try:
        return _COMPLEX_OF[component]
    except KeyError:
        raise TypeError(f"torchcx: complex parts must be one of {list(_COMPLEX_OF)}, got {component}") from None


#: What ``torch.complex32`` names: float16 parts, except inside ``complex32_parts(torch.bfloat16)``.
_COMPLEX32_PARTS: ContextVar[torch.dtype] = ContextVar("torchcx_complex32_parts", default=torch.float16)


def component_dtype_of(dtype: torch.dtype) -> torch.dtype:
    """The part dtype of a native complex dtype (complex64 -> float32).

    ``torch.complex32`` gives float16, or bfloat16 inside ``complex32_parts(torch.bfloat16)``.
    """
    if dtype == torch.complex32:
        return _COMPLEX32_PARTS.get()
    try:
        return _COMPONENT_OF[dtype]
    except KeyError:
        raise TypeError(f"torchcx: {dtype} is not a complex dtype") from None


@contextlib.contextmanager
def complex32_parts(part: torch.dtype) -> Iterator[None]:
    """Within the block, a ``torch.complex32`` dtype argument means parts of ``part`` (float16 or bfloat16).

    For code written against torch dtypes that names ``x.dtype`` for an ``x``
    with bfloat16 parts (which reports complex32): see Note [dtype of a ComplexTensor].
    """
    if part not in (torch.float16, torch.bfloat16):
        raise TypeError(f"torchcx: complex32 has float16 or bfloat16 parts, not {part}")
    token = _COMPLEX32_PARTS.set(part)
    try:
        yield
    finally:
        _COMPLEX32_PARTS.reset(token)


def _has_no_data(t: Tensor) -> bool:
    """True for tensors whose values cannot be printed (fake, meta, functional, proxies)."""
    return (
        type(t) is not Tensor and not isinstance(t, torch.nn.Parameter) or t.is_meta or torch._is_functional_tensor(t)
    )


def _check_strided(t: Tensor, where: str) -> None:
    """Refuse sparse, nested and quantized tensors, whose own errors would come from deep inside.

    A planar ComplexTensor is two strided real tensors (reading a sparse tensor's storage
    raises "Cannot access storage of SparseTensorImpl", a nested one has no sizes).
    """
    if t.is_nested:
        kind, instead = "nested", "unbind() it into ordinary tensors (or to_padded_tensor(0.0)) first"
    elif t.layout != torch.strided:
        kind, instead = f"sparse ({t.layout})", "call .to_dense() first"
    elif t.is_quantized:
        kind, instead = "quantized", "call .dequantize() first"
    else:
        return
    raise TypeError(
        f"{where}: got a {kind} tensor of dtype {t.dtype}: a ComplexTensor is made of strided tensors; {instead}"
    )


def _check_parts(re: Tensor, im: Tensor) -> None:
    if not isinstance(re, Tensor) or not isinstance(im, Tensor):
        raise TypeError("torchcx: ComplexTensor parts must be tensors")
    _check_strided(re, "torchcx.ComplexTensor")
    _check_strided(im, "torchcx.ComplexTensor")
    if re.dtype not in _COMPLEX_OF:
        raise TypeError(f"torchcx: complex parts must be one of {list(_COMPLEX_OF)}, got {re.dtype}")
    if re.dtype != im.dtype:
        raise TypeError(f"torchcx: parts differ in dtype: {re.dtype} and {im.dtype}")
    if re.shape != im.shape:
        raise ValueError(f"torchcx: parts differ in shape: {tuple(re.shape)} and {tuple(im.shape)}")
    if re.device != im.device:
        raise ValueError(f"torchcx: parts differ in device: {re.device} and {im.device}")


def parts_interleave(re: Tensor, im: Tensor) -> bool:
    """Whether ``re`` and ``im`` are the two halves of one interleaved buffer, as ``from_interleaved``
    makes them (lazy negation aside): the same storage and strides, ``im`` one element after ``re``.

    Works on fake tensors too (storage identity is tracked by fake and functional tensors alike).
    Storage identity is asked first: it is free, and comparing symbolic strides or offsets of
    two separate buffers would add guards on sizes to a dynamic graph for nothing.
    """
    return (
        StorageWeakRef(re.untyped_storage()) == StorageWeakRef(im.untyped_storage())
        and re.stride() == im.stride()
        and im.storage_offset() == re.storage_offset() + 1
    )


def element_unit(re: Tensor, im: Tensor) -> int:
    """Part elements per complex element: 2 if ``re`` and ``im`` interleave in one buffer, else 1.

    Interleaved means ``parts_interleave``, with even strides and offset, so
    that the halved ones are whole complex elements. Planar parts are asked nothing more:
    their strides' parity would be a guard on sizes (``x.size(1) % 2 == 0``), and an
    automatically dynamic graph would compile again for the first odd size.
    """
    if not parts_interleave(re, im):
        return 1
    if re.storage_offset() % 2 or any(s % 2 for s, n in zip(re.stride(), re.shape) if n > 1):
        return 1
    return 2


def _interleaved_pair(re: Tensor, im: Tensor) -> Tensor | None:
    """The real ``[..., 2]`` view covering both parts, if they interleave in one buffer
    (``parts_interleave``, and no lazy negation). Returns None otherwise."""
    if re.is_neg() or im.is_neg() or not parts_interleave(re, im):
        return None
    # as_strided addresses the storage, so taking it of re's base (when re is a
    # view) is the same view; it keeps Inductor from copying a lazy view of an
    # unrealized value into a buffer of its own and reading outside it
    # (pytorch/pytorch#197431), e.g. for view_as_real(view_as_complex(x * 2)).
    base = re._base if re._base is not None and re._base.dtype == re.dtype else re
    # A dim of size <= 1 (or any dim of an empty tensor) may carry an odd stride, which
    # view_as_complex refuses although no element is ever addressed through it: double it.
    empty = re.numel() == 0
    strides = [2 * s if s % 2 and (empty or n <= 1) else s for s, n in zip(re.stride(), re.shape)]
    return base.as_strided((*re.shape, 2), (*strides, 1), re.storage_offset())


# Note [The types do not import their ops]
# ----------------------------------------
# This module defines the tensor types; ``torchcx.ops`` defines what their ops do and
# installs its entry points here when it is imported (``install_ops``, which ``import
# torchcx`` always runs). So the modules import one another in one direction only:
# ``tensor`` <- ``_layout`` <- ``ops`` <- ``_boundary`` <- ``backend``.

_dispatch: Callable[..., Any] | None = None  # ops._registry.dispatch
_dispatch_real_view: Callable[..., Any] | None = None  # ops.views.dispatch_real_view
_to_component_dtype: Callable[..., Any] | None = None  # ops.creation.to_component_dtype


def install_ops(
    dispatch: Callable[..., Any], dispatch_real_view: Callable[..., Any], to_component_dtype: Callable[..., Any]
) -> None:
    """Route the types' ops to ``torchcx.ops`` (Note [The types do not import their ops])."""
    global _dispatch, _dispatch_real_view, _to_component_dtype
    _dispatch, _dispatch_real_view, _to_component_dtype = dispatch, dispatch_real_view, to_component_dtype


class _PlanarBase(Tensor):
    """Shared machinery of ComplexTensor and RealView: two real inner tensors."""

    re: Tensor
    im: Tensor

    # Ops are decomposed below autograd, in __torch_dispatch__; keep
    # __torch_function__ off so that Dynamo and autograd see a plain tensor.
    __torch_function__ = torch._C._disabled_torch_function_impl

    def __tensor_flatten__(self) -> tuple[list[str], Any]:
        return ["re", "im"], None

    @property
    def component_dtype(self) -> torch.dtype:
        """dtype of the real and imaginary parts (float64/32/16 or bfloat16)."""
        return self.re.dtype

    def __reduce_ex__(self, protocol: int) -> Any:
        # torch.save/pickle: the parts are ordinary tensors, so rebuild from them.
        return (_rebuild, (type(self).__name__, self.re, self.im, self.requires_grad))


class ComplexTensor(_PlanarBase):
    """A complex tensor stored as two real tensors, ``re`` and ``im``.

    Behaves like a native complex tensor: every torch function and tensor
    method works on it and returns the same values (each op is decomposed into
    real ops); views alias and in-place ops mutate as a native tensor's would.
    See Note [dtype of a ComplexTensor] for bfloat16/float16 parts.

    Example::

        >>> import torch, torchcx
        >>> z = torchcx.complex(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))
        >>> (z * 1j).exp()
        ComplexTensor([ 0.3277+0.5104j, -1.1312+2.4717j])
    """

    @staticmethod
    def __new__(
        cls,
        re: Tensor,
        im: Tensor,
        *,
        requires_grad: bool = False,
        size: Any = None,
        stride: Any = None,
    ) -> ComplexTensor:
        _check_parts(re, im)
        unit = element_unit(re, im)  # Note [Planar representation]: report complex elements
        if stride is None:
            # a size-1 dim may carry an odd stride; round it up rather than to 0
            stride = re.stride() if unit == 1 else tuple((s + 1) // 2 for s in re.stride())
        self = Tensor._make_wrapper_subclass(
            cls,
            re.shape if size is None else size,
            strides=stride,
            storage_offset=re.storage_offset() // unit,
            dtype=_COMPLEX_OF[re.dtype],
            device=re.device,
            requires_grad=requires_grad,
        )
        self.re = re
        self.im = im
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        return _dispatch(func, args, kwargs or {})  # type: ignore[misc]

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, Tensor], meta: Any, outer_size: Any, outer_stride: Any) -> ComplexTensor:
        return ComplexTensor(inner["re"], inner["im"], size=outer_size, stride=outer_stride)

    # -- conversions ---------------------------------------------------------------

    @staticmethod
    def from_interleaved(t: Tensor) -> ComplexTensor:
        """Wrap a native complex tensor without copying.

        The parts are stride-2 views of ``t``'s memory: writes through the
        ComplexTensor are visible in ``t`` and vice versa. A conjugated view
        (``t.is_conj()``) gives a lazily negated imaginary part, still aliasing.
        """
        if isinstance(t, ComplexTensor):
            return t
        if not isinstance(t, Tensor) or not t.is_complex():
            raise TypeError(f"torchcx.from_interleaved: expected a complex tensor, got {_describe(t)}")
        _check_strided(t, "torchcx.from_interleaved")
        conj, neg = t.is_conj(), t.is_neg()
        base = t
        if conj:
            base = base.conj()  # the unconjugated view: same memory, bit cleared
        if neg:
            base = base._neg_view()  # likewise for the negation bit
        pair = torch.view_as_real(base)
        re, im = pair[..., 0], pair[..., 1]
        if neg:
            re, im = re._neg_view(), im._neg_view()
        if conj:
            im = im._neg_view()
        return ComplexTensor(re, im)

    def to_interleaved(self, dtype: torch.dtype | None = None) -> Tensor:
        """A native complex tensor with these values.

        Zero-copy when the parts are the two halves of one interleaved buffer
        (e.g. made by ``from_interleaved``); otherwise a new interleaved tensor.
        bfloat16 parts have no native complex dtype: pass ``dtype``
        (e.g. ``torch.complex64``) to choose one.
        """
        if dtype is None:
            if self.re.dtype == torch.bfloat16:
                raise TypeError(
                    "torchcx: PyTorch has no complex dtype with bfloat16 parts; "
                    "call to_interleaved(torch.complex64) (or complex32) to convert"
                )
            dtype = _COMPLEX_OF[self.re.dtype]
        if not dtype.is_complex:
            raise TypeError(f"torchcx.to_interleaved: expected a complex dtype, got {dtype}")
        # the parts of the native dtype's memory (complex32: float16, never complex32_parts' bfloat16)
        part_dtype = _COMPONENT_OF[dtype]
        if part_dtype == self.re.dtype:
            pair = _interleaved_pair(self.re, self.im)
            if pair is not None and _viewable_as_complex(pair):
                return torch.view_as_complex(pair)
        re, im = self.re.to(part_dtype), self.im.to(part_dtype)
        out = torch.empty((*re.shape, 2), dtype=part_dtype, device=re.device)
        out[..., 0] = re
        out[..., 1] = im
        return torch.view_as_complex(out)

    def with_component_dtype(self, dtype: torch.dtype) -> ComplexTensor:
        """This tensor with parts converted to ``dtype`` (e.g. ``torch.bfloat16``).

        Differentiable. The same as ``.to(complex_dtype)`` for dtypes torch has.
        """
        complex_dtype_of(dtype)  # validates
        if dtype == self.re.dtype:
            return self
        return _to_component_dtype(self, dtype)  # type: ignore[misc]

    # -- FSDP2 (fully_shard) all-gather extension ---------------------------------------
    # FSDP2 allocates its all-gather buffers and unsharded parameters from the reported
    # dtype, and complex32 would mean float16 parts (Note [dtype of a ComplexTensor]).
    # With these two methods it all-gathers the parts as real tensors instead and lets
    # the ComplexTensor rebuild itself from them: bfloat16 parts travel as bfloat16.
    # See docs/distributed.md.

    def fsdp_pre_all_gather(
        self, mesh: Any, outer_size: Any, outer_stride: Any, module: Any, mp_policy: Any
    ) -> tuple[tuple[Tensor, Tensor], None]:
        """The real tensors FSDP2 all-gathers for this (sharded) parameter: its two parts.

        A ``MixedPrecisionPolicy(param_dtype=...)`` naming a part dtype
        (``torch.bfloat16``) or a complex dtype (``torch.complex64``) converts the
        parts before the all-gather, so the unsharded parameter computes in it.
        """
        part = _policy_part(getattr(mp_policy, "param_dtype", None)) or self.re.dtype
        return (self.re.to(part).contiguous(), self.im.to(part).contiguous()), None

    def fsdp_post_all_gather(
        self, all_gather_outputs: tuple[Tensor, ...], metadata: Any, param_dtype: Any, *, out: Any = None
    ) -> tuple[ComplexTensor, tuple[Tensor, ...]] | None:
        """The unsharded parameter over the all-gathered parts (no copy)."""
        re, im = all_gather_outputs
        if out is not None:  # FSDP re-allocated the parts' storage, which ``out`` views
            return None
        return ComplexTensor(re, im), (re, im)

    # Methods that read data straight from memory in C++ (no dispatch).
    def tolist(self) -> Any:
        return self._printable().tolist()

    def numpy(self, *, force: bool = False) -> Any:
        return self._printable().numpy(force=force)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self.numpy(force=True)
        return arr if dtype is None else arr.astype(dtype)

    def _printable(self) -> Tensor:
        """Detached interleaved copy in a dtype NumPy and the printer know."""
        with torch.no_grad():
            t = ComplexTensor(self.re.detach(), self.im.detach())
            if self.re.dtype in (torch.float16, torch.bfloat16):
                return t.to_interleaved(torch.complex64)
            return t.to_interleaved()

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return _repr(self, "ComplexTensor", self.dtype == torch.complex64)


class RealView(_PlanarBase):
    """``torch.view_as_real`` of a ComplexTensor whose parts are not interleaved.

    A real tensor of shape ``(*z.shape, 2)`` aliasing ``z``: index ``[..., 0]``
    is a plain view of ``re`` and ``[..., 1]`` of ``im``; in-place ops write to
    both; other ops read its values. See Note [view_as_real of a planar tensor].
    """

    @staticmethod
    def __new__(cls, re: Tensor, im: Tensor, *, requires_grad: bool = False) -> RealView:
        _check_parts(re, im)
        self = Tensor._make_wrapper_subclass(
            cls,
            (*re.shape, 2),
            strides=(*(2 * s for s in re.stride()), 1),
            storage_offset=2 * re.storage_offset(),
            dtype=re.dtype,
            device=re.device,
            requires_grad=requires_grad,
        )
        self.re = re
        self.im = im
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        return _dispatch_real_view(func, args, kwargs or {})  # type: ignore[misc]

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, Tensor], meta: Any, outer_size: Any, outer_stride: Any) -> RealView:
        return RealView(inner["re"], inner["im"])

    def materialize(self) -> Tensor:
        """The values as an ordinary real tensor (a copy)."""
        return torch.stack([self.re, self.im], dim=-1)

    def tolist(self) -> Any:
        return self.materialize().tolist()

    def numpy(self, *, force: bool = False) -> Any:
        return self.materialize().detach().numpy(force=force)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return _repr(self, "RealView", self.dtype == torch.get_default_dtype())


def _never_compiled_as_frames() -> None:
    """Note [Dispatch is not a Dynamo frame]
    --------------------------------------
    Python code that a compiled frame runs outside its graphs (Dynamo's output
    reconstruction, for instance ``z.real`` of a planar input returned as a view)
    calls the types' ``__torch_dispatch__`` as a Python frame, with Dynamo's
    frame callback active. Dynamo would then compile that frame (and every frame
    it calls) as user code, fakifying a RealView argument it cannot rebuild.
    Dispatch is torchcx's implementation, not the user's program: skip it and all
    it calls, so it runs eagerly there as it does everywhere else. (Tracing a
    subclass never needs these frames: Dynamo fakifies ComplexTensors through
    ``__tensor_flatten__`` and their ops run under fake mode.) The skip is a flag
    on the code objects, so eager dispatch costs nothing more.
    """
    from torch._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    for cls in (ComplexTensor, RealView):
        code = cls.__dict__["__torch_dispatch__"].__func__.__code__
        set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))


_never_compiled_as_frames()


def _viewable_as_complex(pair: Tensor) -> bool:
    # view_as_complex needs even strides and offset (a whole number of complex elements).
    if pair.storage_offset() % 2:
        return False
    return all(s % 2 == 0 for s in pair.stride()[:-1])


def _describe(x: Any) -> str:
    if isinstance(x, Tensor):
        return f"{type(x).__name__}(dtype={x.dtype})"
    return type(x).__name__


def _repr(t: _PlanarBase, name: str, default_dtype: bool) -> str:
    indent = len(name) + 1
    if _has_no_data(t.re) or _has_no_data(t.im):
        body = f"..., size={tuple(t.shape)}"
    else:
        values = t._printable() if isinstance(t, ComplexTensor) else t.materialize().detach()
        body = torch._tensor_str._tensor_str(values, indent)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if isinstance(t, ComplexTensor) and t.re.dtype in (torch.float16, torch.bfloat16):
        suffixes.append(f"component_dtype={t.re.dtype}")
    elif not default_dtype:
        suffixes.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return f"{name}({', '.join([body, *suffixes])})"


def _rebuild(kind: str, re: Tensor, im: Tensor, requires_grad: bool) -> Tensor:
    cls = {"ComplexTensor": ComplexTensor, "RealView": RealView}[kind]
    return cls(re, im, requires_grad=requires_grad)


# torch.load(weights_only=True) only rebuilds allowlisted types.
torch.serialization.add_safe_globals([_rebuild])


def complex(re: Tensor, im: Tensor) -> ComplexTensor:  # noqa: A001 (mirrors torch.complex)
    """A ComplexTensor with real part ``re`` and imaginary part ``im``.

    Like ``torch.complex``, but keeps the parts as they are (no copy, any of
    float64/float32/float16/bfloat16) and returns a ComplexTensor. Broadcasts
    ``re`` and ``im``; differentiable with respect to both.
    """
    if not isinstance(re, Tensor) or not isinstance(im, Tensor):
        raise TypeError("torchcx.complex: re and im must be tensors")
    _check_strided(re, "torchcx.complex")
    _check_strided(im, "torchcx.complex")
    if re.dtype != im.dtype:
        raise TypeError(f"torchcx.complex: re and im differ in dtype: {re.dtype} and {im.dtype}")
    complex_dtype_of(re.dtype)
    if re.device != im.device:
        raise ValueError(f"torchcx.complex: re and im are on different devices: {re.device} and {im.device}")
    if re.shape != im.shape:
        try:
            re, im = torch.broadcast_tensors(re, im)
        except RuntimeError as e:
            raise RuntimeError(
                f"torchcx.complex: the shapes of re {list(re.shape)} and im {list(im.shape)} do not broadcast: {e}"
            ) from e
    if torch.is_grad_enabled() and (re.requires_grad or im.requires_grad):
        return _Complex.apply(re, im)
    return ComplexTensor(re, im)


def as_complex_tensor(x: Tensor, component_dtype: torch.dtype | None = None) -> ComplexTensor:
    """``x`` as a ComplexTensor, with parts of ``component_dtype`` if given.

    The one-call conversion into the planar form, e.g. of complex64 or
    complex32 data into bfloat16 parts: ``as_complex_tensor(t, torch.bfloat16)``.
    Nothing is copied where nothing needs converting: a ComplexTensor with
    those parts is returned as it is, and a native complex tensor whose parts
    already have that dtype (complex64 and float32, complex32 and float16) is
    wrapped, its parts aliasing its memory (``from_interleaved``). Otherwise
    the parts are converted (new memory). A real tensor gets a zero imaginary
    part. Differentiable, like ``x.to(dtype)``.

    Back to a native tensor: ``z.to_interleaved(torch.complex64)`` (or complex32).
    """
    if isinstance(x, RealView) or not isinstance(x, Tensor):
        raise TypeError(f"torchcx.as_complex_tensor: expected a tensor, got {_describe(x)}")
    _check_strided(x, "torchcx.as_complex_tensor")
    if component_dtype is not None:
        complex_dtype_of(component_dtype)  # validates
    if isinstance(x, ComplexTensor):
        z = x
    elif x.is_complex():
        # t.real and t.imag are views of t, so torchcx.complex of them aliases t like
        # from_interleaved does, and also carries gradients back to t.
        z = (
            complex(x.real, x.imag)
            if torch.is_grad_enabled() and x.requires_grad
            else ComplexTensor.from_interleaved(x)
        )
    else:
        complex_dtype_of(x.dtype)  # a real tensor of a part dtype
        z = complex(x, torch.zeros_like(x))
    if component_dtype is None or component_dtype == z.component_dtype:
        return z
    return z.with_component_dtype(component_dtype)


class _Complex(torch.autograd.Function):
    """Differentiable torchcx.complex: d(re + i im) -> (grad.real, grad.imag)."""

    @staticmethod
    def forward(ctx: Any, re: Tensor, im: Tensor) -> ComplexTensor:
        return ComplexTensor(re.detach(), im.detach())

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor]:
        return torch.real(grad), torch.imag(grad)


def _policy_part(dtype: torch.dtype | None) -> torch.dtype | None:
    """The part dtype a mixed-precision policy's dtype names for complex values (None: keep)."""
    if dtype is None:
        return None
    if dtype.is_complex:
        return _COMPONENT_OF[dtype]
    return dtype if dtype in COMPONENT_DTYPES else None
