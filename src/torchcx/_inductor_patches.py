"""Adjustments to Inductor 2.13, applied only while torchcx compiles a graph.

Two concern the bitcasts that unpack complex64 words into float32 parts
(Note [Interleaved layouts]); none changes what a graph computes.

Note [Vectorized bitcasts]
--------------------------
Inductor's vectorized C++ kernels emit a bitcast as a scalar loop through a
stack buffer (``CppVecOverrides`` has no vector override for
``to_dtype_bitcast``), which made the boundary cost 2.7x the planar kernel's
time; ATen's ``at::vec::cast<To>(Vectorized<From>)`` reinterprets a vector
register in one instruction. We emit that cast for same-width 32-bit types
when both are held as one vector, and otherwise leave the code as it was.

Note [Bitcasts of computed values]
----------------------------------
``aten.view.dtype`` of a value that is not a buffer yet lowers to a
``DtypeView``. When Inductor's reinplacing pass later turns a scatter on that
value into a mutation (``diagonal_scatter`` becomes ``diagonal(x).copy_(src)``),
the scheduler needs a reindexer the ``DtypeView`` does not have and compilation
fails. In a functional graph a bitcast of a computed value is just a pointwise
op, so we lower it as one (it fuses exactly as the view would); bitcasts of
buffers (graph inputs) stay views.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from . import config

_FOUR_BYTE = (torch.float32, torch.int32)


@contextlib.contextmanager
def quiet_complex_warning() -> Iterator[None]:
    """Silence "Torchinductor does not support code generation for complex operators".

    Inductor's pattern matcher looks at the complex graph before torchcx lowers
    it (the joint-graph passes) and warns about its complex nodes; Inductor
    never generates code for them, so the warning would only mislead. It is a
    cached, process-wide warning: patching its function (rather than filtering
    it) keeps it for later compilations that do reach Inductor with complex ops.
    """
    try:
        from torch._inductor import lowering
    except ImportError:  # pragma: no cover
        yield
        return
    original = getattr(lowering, "_warn_complex_not_supported", None)
    if original is None:  # pragma: no cover
        yield
        return
    lowering._warn_complex_not_supported = lambda: None
    try:
        yield
    finally:
        lowering._warn_complex_not_supported = original


@contextlib.contextmanager
def inductor_patches() -> Iterator[None]:
    """Both patches, for the duration of one compile_fx_inner call."""
    with contextlib.ExitStack() as stack:
        if config.vectorized_bitcast:
            stack.enter_context(_vectorized_bitcasts())
        stack.enter_context(_pointwise_bitcasts())
        yield


@contextlib.contextmanager
def _vectorized_bitcasts() -> Iterator[None]:
    try:
        from torch._inductor.codegen import cpp
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        yield
        return
    overrides = getattr(cpp, "CppVecOverrides", None)
    original = getattr(overrides, "to_dtype_bitcast", None)
    if original is None:  # pragma: no cover
        yield
        return
    own = overrides.__dict__.get("to_dtype_bitcast")  # None if inherited

    def to_dtype_bitcast(x, dtype, src_dtype):  # noqa: ANN001, ANN202
        kernel = V.kernel
        if (
            dtype in _FOUR_BYTE
            and src_dtype in _FOUR_BYTE
            and dtype != src_dtype
            and hasattr(kernel, "_get_num_vectors")
            and kernel._get_num_vectors(torch.float32) == 1
        ):
            return f"at::vec::cast<{cpp.DTYPE_TO_CPP[dtype]}>({x})"
        return original(x, dtype, src_dtype)

    overrides.to_dtype_bitcast = staticmethod(to_dtype_bitcast)
    try:
        yield
    finally:
        if own is None:
            del overrides.to_dtype_bitcast
        else:
            overrides.to_dtype_bitcast = own


@contextlib.contextmanager
def _pointwise_bitcasts() -> Iterator[None]:
    try:
        from torch._inductor import ir, lowering
        from torch._inductor.virtualized import ops
    except ImportError:  # pragma: no cover
        yield
        return
    key = torch.ops.aten.view.dtype
    original = lowering.lowerings.get(key)
    if original is None:  # pragma: no cover
        yield
        return

    def view_dtype(x: Any, dtype: torch.dtype) -> Any:
        src = x.get_dtype()
        same_width = not src.is_complex and not dtype.is_complex and src.itemsize == dtype.itemsize
        if not same_width or src == dtype or ir.is_storage_and_layout(x):
            return original(x, dtype)
        load = x.make_loader()
        return ir.Pointwise.create(
            device=x.get_device(),
            dtype=dtype,
            inner_fn=lambda index: ops.to_dtype_bitcast(load(index), dtype, src),
            ranges=list(x.get_size()),
        )

    lowering.lowerings[key] = view_dtype
    try:
        yield
    finally:
        lowering.lowerings[key] = original
