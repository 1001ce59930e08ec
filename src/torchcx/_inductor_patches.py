"""A code generation fix for Inductor's CPU backend, applied while torchcx compiles.

Note [Vectorized bitcasts]
--------------------------
Complex64 values enter and leave torchcx's graphs as int64 words (Note
[Interleaved layouts]); the parts are recovered with an integer truncation and
a bitcast to float32. Inductor 2.13's vectorized C++ kernels emit a bitcast as
a scalar loop through a stack buffer (``CppVecOverrides`` has no vector
override for ``to_dtype_bitcast``), which made the boundary cost 2.7x the
planar kernel's time; ATen's ``at::vec::cast<To>(Vectorized<From>)``
reinterprets a vector register in one instruction. This patch emits that cast
for same-width 32-bit types when both are held as one vector, and otherwise
leaves Inductor's code as it was. It changes generated code only (not results)
and only during torchcx's own compilations; ``torchcx.config.vectorized_bitcast``
turns it off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

_FOUR_BYTE = (torch.float32, torch.int32)


@contextlib.contextmanager
def vectorized_bitcasts() -> Iterator[None]:
    try:
        from torch._inductor.codegen import cpp
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor layout changed
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
