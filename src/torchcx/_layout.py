"""How complex values cross into and out of real-only graphs.

Note [Interleaved layouts]
--------------------------
A native complex tensor is one interleaved buffer (re, im, re, im, ...). A
real-only graph takes it as a real tensor over the same memory (no copy) and
unpacks the parts inside the graph, where Inductor fuses the unpacking into
the first kernel that reads them; results are packed the same way, in the
kernel that computes them.

* complex64: int64 words (``x.view(torch.int64)``). The real part is the low
  32 bits, the imaginary part the high 32 bits (little-endian), recovered with
  an integer shift, a truncation and a bitcast. Inductor's CPU backend
  vectorizes these; reading the parts as stride-2 floats instead makes it emit
  a scalar loop (measured 4x slower on a fused elementwise kernel, see
  benchmarks/boundary.py).
* complex32: int32 words with 16-bit halves, likewise.
* complex128: float64 pairs (``view_as_real``), parts read with stride 2: there
  is no 128-bit integer to pack them into.

Bit patterns survive exactly (signed zeros, nan payloads). On a big-endian
machine every dtype uses pairs.

Note [Packed form]
------------------
A ComplexTensor that the lowering unpacks from a boundary or extern-kernel
tensor remembers that tensor (in the lowering's memo, Note [Traced or
computed]); packing it again returns it instead of computing a copy. So an extern kernel (the vendor FFT, LAPACK) reading a graph
input, or writing a graph output, costs no pass beyond eager's. Only values in
the lowering's functional graphs carry it: any op makes a new ComplexTensor,
with two exceptions. A ComplexTensor made of the very parts unpacked from a
tensor (an op that returns parts it was given, such as the product of
``complex_matmul``'s "native" strategy) remembers it too; and so does a view
op's result when the tensor is in int64/int32 words, as the same view of the
words (they have the complex tensor's shape, so any view op applies to them
unchanged): a batched matmul's ``expand`` or ``view`` of a graph input reaches
the vendor GEMM without a copy. A ``clone`` (``contiguous``, a ``reshape`` that
copies) remembers the same clone of the words: an einsum's permuted operand then
reaches the GEMM as a transposing copy of its words, where unpacking and
packing them again in one kernel took 2.7x as long (a 2 MB complex64 weight:
1154 against 429 us; the FNO step copies two each way).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from . import _lowering
from .tensor import ComplexTensor, component_dtype_of

_LITTLE = sys.byteorder == "little"
# complex dtype -> (word dtype, half-word dtype, part dtype, bits in a half word)
_WORDS = {
    torch.complex64: (torch.int64, torch.int32, torch.float32, 32),
    torch.complex32: (torch.int32, torch.int16, torch.float16, 16),
}


def overlaps(t: Tensor) -> bool:
    """Whether elements of ``t`` share memory (``expand``, ``unfold``), from its concrete sizes and strides."""
    if t.numel() == 0:
        return False
    reach = 0
    for stride, size in sorted((int(s), int(n)) for s, n in zip(t.stride(), t.shape) if n != 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def uses_words(dtype: torch.dtype) -> bool:
    return _LITTLE and dtype in _WORDS


def describe(dtype: torch.dtype) -> str:
    """How values of complex ``dtype`` cross a graph boundary, in words."""
    if uses_words(dtype):
        return f"{str(_WORDS[dtype][0]).replace('torch.', '')} words"
    return "float pairs (view_as_real)"


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the real tensor that carries complex ``dtype`` across a graph boundary."""
    if uses_words(dtype):
        return _WORDS[dtype][0]
    return {torch.complex128: torch.float64, torch.complex64: torch.float32, torch.complex32: torch.float16}[dtype]


def to_real(x: Tensor) -> Tensor:
    """The real tensor over ``x``'s memory (no copy). ``x`` must not carry a conj/neg bit."""
    if uses_words(x.dtype):
        return x.view(_WORDS[x.dtype][0])
    return torch.view_as_real(x)


def real_view(dtype: torch.dtype) -> Callable[[Tensor], Tensor]:
    """``to_real`` for tensors of complex ``dtype``, chosen once: a compiled graph's run time
    calls it for each complex input of each call."""
    if uses_words(dtype):
        word = _WORDS[dtype][0]
        return lambda x: x.view(word)
    return torch.view_as_real


def from_real(t: Tensor, dtype: torch.dtype) -> Tensor:
    """The complex tensor of ``dtype`` over ``t``'s memory (inverse of ``to_real``)."""
    if uses_words(dtype):
        return t.view(dtype)
    return torch.view_as_complex(t)


def unpack(t: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(re, im) from ``to_real``'s tensor, as traceable real ops."""
    if uses_words(dtype):
        _, half, part, bits = _WORDS[dtype]
        return t.to(half).view(part), (t >> bits).to(half).view(part)
    return t.select(-1, 0), t.select(-1, 1)


def pack(re: Tensor, im: Tensor, dtype: torch.dtype) -> Tensor:
    """``to_real``'s tensor from (re, im), as traceable real ops (a new tensor)."""
    if uses_words(dtype):
        word, half, part, bits = _WORDS[dtype]
        # A part may carry a lazy negation bit (an output made by _neg_view or
        # conj), which a dtype view cannot apply: resolve it first.
        low = re.to(part).resolve_neg().view(half).to(word) & ((1 << bits) - 1)
        high = im.to(part).resolve_neg().view(half).to(word) << bits
        return low | high
    part = real_dtype(dtype)
    re, im = re.to(part), im.to(part)
    # stack() lays its result out contiguously; keep the parts' dimension order instead, as
    # eager's kernels do (exp of a transposed complex128 tensor is transposed): a saved
    # value's layout must be the one AOTAutograd traced the backward with.
    perm = _physical_order(re)
    if perm is None:
        return torch.stack([re, im], dim=-1)
    inverse = sorted(range(len(perm)), key=perm.__getitem__)
    return torch.stack([re.permute(perm), im.permute(perm)], dim=-1).permute(*inverse, re.dim())


def _physical_order(t: Tensor) -> list[int] | None:
    """The permutation that makes ``t``'s layout contiguous, if ``t`` has static strides and is
    not already in row-major order (eager's rule for elementwise outputs)."""
    from torch._prims_common import compute_elementwise_output_logical_to_physical_perm

    if t.dim() < 2 or not all(isinstance(s, int) for s in (*t.shape, *t.stride())):
        return None
    perm, _ = compute_elementwise_output_logical_to_physical_perm(t)
    return None if perm == list(range(t.dim())) else perm


def unpack_remembering(t: Tensor, dtype: torch.dtype) -> ComplexTensor:
    """``t``'s parts as a ComplexTensor that remembers ``t`` during the lowering (Note [Packed form])."""
    re, im = unpack(t, dtype)
    out = ComplexTensor(re, im)
    memo = _lowering.current()
    if memo is not None:
        memo.packed[id(out)] = (out, t, dtype)
        memo.parts[id(re)] = (re, im, t, dtype)  # a ComplexTensor of these very parts remembers t too
    return out


def remembered(x: ComplexTensor) -> tuple[Tensor, torch.dtype] | None:
    """(packed tensor, complex dtype) that ``x`` was unpacked from, if any (Note [Packed form])."""
    memo = _lowering.current()
    if memo is None:
        return None
    found = memo.packed.get(id(x))
    if found is not None:
        return found[1], found[2]
    pair = memo.parts.get(id(x.re))
    if pair is not None and pair[1] is x.im:
        return pair[2], pair[3]
    return None


def remember_words(x: ComplexTensor, out: Any, apply: Any) -> None:
    """Give ``out``, made from ``x`` by ``apply`` on each part (a view op, a copy), ``apply``
    of ``x``'s words: the words have the complex tensor's shape (Note [Packed form])."""
    found = remembered(x)
    memo = _lowering.current()
    if found is None or memo is None or not uses_words(found[1]):
        return
    words = apply(found[0])
    outs, all_words = (out, words) if isinstance(out, (list, tuple)) else ([out], [words])
    for o, w in zip(outs, all_words):
        if isinstance(o, ComplexTensor) and isinstance(w, Tensor):
            memo.packed[id(o)] = (o, w, found[1])


def packed(x: ComplexTensor, dtype: torch.dtype) -> Tensor:
    """``x`` in the layout of complex ``dtype``: its remembered packed form if it has one."""
    found = remembered(x)
    if found is not None and found[1] == dtype:
        return found[0]
    part = component_dtype_of(dtype)
    return pack(x.re.to(part), x.im.to(part), dtype)
