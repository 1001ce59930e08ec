"""complex64 words split and joined by shuffles in Inductor's CPU kernels, while torchcx compiles.

Note [Words as pairs]
---------------------
A complex64 value crosses a graph boundary as an int64 word (Note [Interleaved
layouts]): the real graph splits it with ``re = bitcast(int32(w))`` and
``im = bitcast(int32(w >> 32))`` and joins parts with
``(int64(bits(re)) & 0xffffffff) | (int64(bits(im)) << 32)``. Inductor
vectorizes these as written: a 64-bit shift, a narrowing (``vpmovqd``) per
vector and an insert for each part; widening, masking, a shift and an or to
join. In memory the words are (re, im) float pairs, so on a little-endian
machine the same bits come out of one shuffle: the low halves of two vectors
of words are the even lanes of those vectors read as floats, the high halves
the odd ones (``at::vec::deinterleave2``), and ``at::vec::interleave2`` of
the parts' bits is the joined words. While torchcx compiles:

* a truncation of an int64 tile to int32 is the even lanes of the tile read
  as 32-bit lanes (true of any int64 value), and of ``w >> 32`` the odd lanes
  of ``w`` (the shift is then dead code the C++ compiler drops);
* ``(int64(a) & 0xffffffff) | (int64(b) << 32)`` of int32 tiles ``a`` and
  ``b`` is their interleaving;
* an int64 <-> int32 conversion of a tile of several vectors (beside 16-bit
  elements) goes a pair of vectors at a time: ATen's ``VecConvert`` handles
  one int64 pair to one int32 vector and back, and a larger tile fell back to a
  scalar loop.

The patterns are recognised in the kernel's own CSE table (the expression that
defined an operand), so anything else is generated as before. Written for
torch 2.13 (``CppVecKernel.get_to_dtype_expr``, ``CppVecOverrides.bitwise_or``
and the spelling of their results), applied on that minor only
(``_inductor_patches.WRITTEN_FOR``); tests/test_interleaved.py fails when the
complex64 kernels stop using the shuffles.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Iterator
from typing import Any

import torch

from ._interleaved import expect_marked, join_call, split_call
from ._patching import cannot_apply, patched_for_this_thread

_TRUNCATE = re.compile(r"(\w+) >> (\w+)")
_MASKED = re.compile(r"(\w+) & (\w+)")
_SHIFTED = re.compile(r"(\w+) << (\w+)")
_WIDENED = re.compile(r"at::vec::convert<int64_t,2,int32_t,1>\((\w+)\)")
_BROADCAST = re.compile(r"at::vec::VectorizedN?<int64_t(?:,\s*\d+)?>\((\w+)\)")
_CONSTANT = re.compile(r"static_cast<int64_t>\((-?\d+)\)")


@contextlib.contextmanager
def words_as_pairs() -> Iterator[None]:
    """Note [Words as pairs], conversions, for the duration of one compilation (the join is
    ``joining_words``, installed as ``CppVecOverrides.bitwise_or`` by _inductor_patches)."""
    try:
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover
        cannot_apply("Words as pairs", "torch._inductor.codegen.cpp does not import")
        yield
        return
    kernel = getattr(cpp, "CppVecKernel", None)
    to_dtype = getattr(kernel, "get_to_dtype_expr", None)
    if to_dtype is None or not hasattr(kernel, "_get_num_vectors"):
        cannot_apply("Words as pairs", "CppVecKernel.get_to_dtype_expr or _get_num_vectors is missing")
        yield
        return
    if sys.byteorder != "little":  # pragma: no cover - (by design: the shuffles are little-endian)
        yield
        return

    def get_to_dtype_expr(
        self: Any, src: Any, dtype: torch.dtype, src_dtype: torch.dtype, rounding: bool = False
    ) -> str:
        if getattr(src, "is_vec", False) and {dtype, src_dtype} == {torch.int64, torch.int32}:
            n32 = self._get_num_vectors(torch.int32)
            if self._get_num_vectors(torch.int64) == 2 * n32:
                return _narrow(self, src, n32) if dtype == torch.int32 else _widen(src, n32)
        return to_dtype(self, src, dtype, src_dtype, rounding)

    # (for the compiling thread only: Note [Patches and threads], torchcx/_patching.py)
    with patched_for_this_thread((kernel, "get_to_dtype_expr", get_to_dtype_expr)):
        yield


def joining_words(bitwise_or: Any) -> Any:
    """``CppVecOverrides.bitwise_or`` that emits the join of words as one interleave."""

    @functools.wraps(bitwise_or)  # (Inductor finds the scalar fallback by the name)
    def joined(a: Any, b: Any) -> str:
        from torch._inductor.virtualized import V

        words = _joined_words(V.kernel, a, b) if sys.byteorder == "little" else None
        return words if words is not None else bitwise_or(a, b)

    return joined


def _definition(kernel: Any, var: Any) -> str | None:
    """The expression the kernel's CSE table defines ``var`` by, if it does."""
    name = str(var)
    for key, value in kernel.cse._cache.items():
        if isinstance(key, str) and str(value) == name:
            return key
    return None


def _constant(kernel: Any, var: Any) -> int | None:
    """The value of ``var`` if it is an int64 constant (broadcast to a tile or not)."""
    text = _definition(kernel, var)
    match = _BROADCAST.fullmatch(text or "")
    if match:
        text = _definition(kernel, match[1])
    match = _CONSTANT.fullmatch(text or "")
    return int(match[1]) if match else None


def _tile(ctype: str, vectors: list[str]) -> str:
    if len(vectors) == 1:
        return vectors[0]
    steps = " ".join(f"r[{k}] = {v};" for k, v in enumerate(vectors))
    return f"[&] {{ at::vec::VectorizedN<{ctype}, {len(vectors)}> r; {steps} return r; }}()"


def _narrow(kernel: Any, src: Any, n32: int) -> str:
    """int32(src) of an int64 tile: even 32-bit lanes; of ``w >> 32``, the odd lanes of ``w``."""
    half, word = "first", str(src)
    match = _TRUNCATE.fullmatch(_definition(kernel, src) or "")
    if match and _constant(kernel, match[2]) == 32:
        half, word = "second", match[1]
    expr = _tile(
        "int32_t",
        [
            f"at::vec::cast<int32_t>({split_call(kernel)}at::vec::cast<float>({word}[{2 * k}]), "
            f"at::vec::cast<float>({word}[{2 * k + 1}])).{half})"
            for k in range(n32)
        ],
    )
    expect_marked(kernel, expr, "split")  # Note [Pairs in lane order]
    return expr


def _widen(src: Any, n32: int) -> str:
    """int64(src) of an int32 tile (sign-extended), a vector pair at a time."""
    if n32 == 1:
        return f"at::vec::convert<int64_t,2,int32_t,1>({src})"
    steps = " ".join(
        f"{{ auto w = at::vec::convert<int64_t,2,int32_t,1>({src}[{k}]); r[{2 * k}] = w[0]; r[{2 * k + 1}] = w[1]; }}"
        for k in range(n32)
    )
    return f"[&] {{ at::vec::VectorizedN<int64_t, {2 * n32}> r; {steps} return r; }}()"


def _widened(kernel: Any, var: Any) -> str | None:
    """The int32 tile that ``var`` widened (n32 == 1 spelling), if it did."""
    match = _WIDENED.fullmatch(_definition(kernel, var) or "")
    return match[1] if match else None


def _joined_words(kernel: Any, a: Any, b: Any) -> str | None:
    """``(int64(lo) & 0xffffffff) | (int64(hi) << 32)`` as an interleaving of lo and hi, if it is that."""
    if not (getattr(a, "is_vec", False) and getattr(b, "is_vec", False)):
        return None
    if kernel._get_num_vectors(torch.int64) != 2 or kernel._get_num_vectors(torch.int32) != 1:
        return None
    for low, high in ((a, b), (b, a)):
        masked = _MASKED.fullmatch(_definition(kernel, low) or "")
        shifted = _SHIFTED.fullmatch(_definition(kernel, high) or "")
        if not (masked and shifted):
            continue
        if _constant(kernel, masked[2]) != 0xFFFFFFFF or _constant(kernel, shifted[2]) != 32:
            continue
        lo, hi = _widened(kernel, masked[1]), _widened(kernel, shifted[1])
        if lo is None or hi is None:
            continue
        expr = (
            f"[&] {{ auto i = {join_call(kernel)}at::vec::cast<float>({lo}), at::vec::cast<float>({hi})); "
            "return at::vec::VectorizedN<int64_t, 2>(at::vec::cast<int64_t>(i.first), "
            "at::vec::cast<int64_t>(i.second)); }()"
        )
        expect_marked(kernel, expr, "join")  # Note [Pairs in lane order]
        return expr
    return None
