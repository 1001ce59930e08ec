"""Large outputs written with streaming stores (Note [Streaming stores]).

Note [Streaming stores]
-----------------------
A store to memory that is not in the cache first reads the line it writes (the core
must own the whole 64-byte line before it changes part of it), so a kernel whose data
does not fit in the last-level cache moves three bytes over the memory bus for each
byte it reads and writes once: the read, the line fetched for ownership, the write back.
A streaming (non-temporal) store writes whole lines around the cache and skips the
fetch: two bytes instead of three. ``memcpy`` does the same above a size; ATen's
kernels and Inductor's do not. The rotary embedding at T=2048 (32 MiB of q and k in,
32 MiB out) ran at eager's speed, both at the memory bus's limit, and so did every
memory-bound program of the size sweep at 2^22 elements and beyond.

Measured on a 2-core AMD EPYC (Zen 4, 32 MiB L3, 2026-12-07), 512-bit stores against
512-bit streaming stores in a C loop: ``out = in * in`` over float32 arrays of N MiB each,
1.37x faster at N = 16, 1.68x at 32, 1.57x at 64, 1.41x at 128, but 0.91x at 8 and 0.58x at
1-4, where the data would have stayed in the cache and the streamed lines must come back
from memory; two inputs and two outputs of N MiB (the rotary embedding's q and k), 0.95x
at N = 4, 1.48x at 8, 1.44x at 16.

So, while torchcx compiles: a C++ kernel whose buffers (read and written) add up to at
least the last-level cache (``last_level_cache_bytes``) writes with streaming stores each
output that it does not also read (every size known when it is compiled: a dynamic-shape kernel
may run at sizes that fit in the cache), of 1 MiB up to 32 MiB (``_MAX_STREAMED_BYTES``: a
larger one is mapped afresh by the allocator on each call, its pages zeroed through the
cache as they are first written) and of 32- or 64-bit elements (``_MIN_STREAMED_ITEMSIZE``:
the kernels that write bfloat16 or float16 parts do twice the arithmetic per byte and
were slower streamed). Inductor generates the kernel as it would; ``KernelGroup.codegen_group`` names those outputs in a comment at the
kernel's top, and where the kernel is built in one of torchcx's libraries (Note
[Kernels built together]) ``streamed`` turns each whole-vector store to them into
``torchcx_stream::store``: a streaming store where the address is aligned to the
vector's width, else the plain store (the tails, partial vectors and scalar stores stay
as they were). Streaming stores are weakly ordered, so every thread that ran one fences
(``sfence``) before it leaves the kernel: each OpenMP thread at the end of its parallel
region, the calling thread at the function's end; the next kernel, in this thread or
another, then reads what was written. A kernel built alone (not batchable, or its library
failed to build) keeps Inductor's stores: the comment is only a comment.

The values stored are the same bits; only how the lines reach memory changes.
``config.streaming_stores = False`` keeps every store as Inductor wrote it; the setting
and the cache size are part of the FX graph cache key (the generated source depends on
them).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterator
from typing import Any

from ._patching import cannot_apply, patched_for_this_thread

#: An output smaller than this is not streamed even in a large kernel: a row of sums
#: or a small table is better left in the cache for whoever reads it next.
_MIN_STREAMED_BYTES = 1 << 20
#: Nor one this large or larger: glibc's malloc maps an allocation above its mmap threshold
#: (at most 32 MiB on a 64-bit system, ``DEFAULT_MMAP_THRESHOLD_MAX``) afresh each time, and the
#: OS zeroes each new page, through the cache, as the kernel first writes to it; a
#: streaming store then evicts a line that was already there (measured: rope-fp32 at 2^23
#: and 2^24 elements, 32 and 64 MiB outputs, 0.93x and 0.92x streamed).
_MAX_STREAMED_BYTES = 32 << 20
#: Nor one of elements narrower than this: a kernel that writes bfloat16 or float16 parts
#: converts each to float32 and back, twice the arithmetic per byte of a float32 kernel,
#: and was not bound by memory here (rope-bf16 at 2^21-2^23: 0.86-0.93x streamed; at
#: T=2048, against an A/A pair of plain kernels reading 1.03x, 0.62x).
_MIN_STREAMED_ITEMSIZE = 4

_MARKER = "// torchcx streaming stores:"
_MARKED = re.compile(r"^// torchcx streaming stores:(.*)\n?", re.MULTILINE)
_THREAD_START = "int tid = omp_get_thread_num();"

#: The helpers the rewritten stores call; after the prefix, before the kernels.
HELPERS = r"""
#include <cstring>
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif
namespace torchcx_stream {
// Note [Streaming stores]: a whole vector to an address aligned to its width is streamed.
template <typename V, typename P, typename... Count>
inline void store(const V& v, P* p, Count... count) {
  v.store(p, count...);
}
#if INDUCTOR_USE_VECTOR_TYPES() && (defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2))
template <typename T, typename Count>
inline void store(const at::vec::Vectorized<T>& v, T* p, Count count) {
  const int64_t bytes = static_cast<int64_t>(count) * static_cast<int64_t>(sizeof(T));
  const auto address = reinterpret_cast<uintptr_t>(p);
#if defined(CPU_CAPABILITY_AVX512)
  if (sizeof(v) == 64 && bytes == 64 && address % 64 == 0) {
    __m512i bits;
    std::memcpy(&bits, &v, 64);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), bits);
    return;
  }
#endif
  if (sizeof(v) >= 32 && bytes == 32 && address % 32 == 0) {  // a whole AVX2 vector, or a 512-bit one's low half
    __m256i bits;
    std::memcpy(&bits, &v, 32);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), bits);
    return;
  }
  v.store(p, count);
}
template <typename T>
inline void store(const at::vec::Vectorized<T>& v, T* p) {
  store(v, p, at::vec::Vectorized<T>::size());
}
template <typename T, int N, typename Count>
inline void store(const at::vec::VectorizedN<T, N>& v, T* p, Count count) {
  constexpr int64_t lanes = at::vec::Vectorized<T>::size();
  if (static_cast<int64_t>(count) != N * lanes) {
    v.store(p, count);
    return;
  }
  for (int i = 0; i < N; ++i) {
    store(v[i], p + i * lanes, lanes);
  }
}
template <typename T, int N>
inline void store(const at::vec::VectorizedN<T, N>& v, T* p) {
  store(v, p, N * at::vec::Vectorized<T>::size());
}
#endif
// Streaming stores are weakly ordered: whoever ran them fences before anyone reads.
struct Fence {
  ~Fence() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_sfence();
#endif
  }
};
}  // namespace torchcx_stream
"""


@functools.cache
def last_level_cache_bytes() -> int:
    """The size of the CPU's largest cache, from sysfs (0 where it cannot be read)."""
    sizes = []
    root = "/sys/devices/system/cpu/cpu0/cache"
    for entry in os.listdir(root) if os.path.isdir(root) else ():
        try:
            with open(os.path.join(root, entry, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        match = re.fullmatch(r"(\d+)([KMG]?)", text)
        if match:
            sizes.append(int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)])
    return max(sizes, default=0)


def cache_tag() -> str:
    """What of this adjustment the generated code depends on (for the FX graph cache key)."""
    from . import config

    return f"stream={config.streaming_stores and config.batch_kernels}:{last_level_cache_bytes()}"


@contextlib.contextmanager
def streaming_stores() -> Iterator[None]:
    """Note [Streaming stores]: the outputs to stream named at each kernel's top."""
    try:
        from torch._inductor.codegen import cpp
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Streaming stores", "torch._inductor.codegen.cpp does not import")
        yield
        return
    group = getattr(cpp, "KernelGroup", None)
    original = getattr(group, "codegen_group", None)
    cache = last_level_cache_bytes()
    if original is None or not cache:
        reason = "KernelGroup.codegen_group is missing" if original is None else "the cache size is unknown"
        cannot_apply("Streaming stores", reason)
        yield
        return

    def nbytes(name: str) -> int | None:
        """The buffer's size in bytes; None where it is not known until run time."""
        try:
            numel = V.graph.get_numel(name)
            if not getattr(numel, "is_number", isinstance(numel, int)):
                return None
            return int(numel) * V.graph.get_dtype(name).itemsize
        except (KeyError, AttributeError, TypeError):
            return 0  # (a buffer Inductor no longer knows by name: not counted, not streamed)

    def codegen_group(self: Any, name: Any = None) -> str:
        code = original(self, name)
        args = self.args
        sizes = {n: nbytes(n) for n in (*args.input_buffers, *args.output_buffers, *args.inplace_buffers)}
        # A kernel with a size known only at run time keeps its stores: compiled for one size,
        # it may run at another that fits in the cache, where streaming loses.
        if not code or None in sizes.values() or sum(sizes.values()) < cache:
            return code
        streamed = [
            pointer
            for buffer, pointer in args.output_buffers.items()
            if isinstance(pointer, str)
            and _MIN_STREAMED_BYTES <= sizes[buffer] < _MAX_STREAMED_BYTES
            and V.graph.get_dtype(buffer).itemsize >= _MIN_STREAMED_ITEMSIZE
        ]
        return f"{_MARKER} {' '.join(streamed)}\n{code}" if streamed else code

    with patched_for_this_thread((group, "codegen_group", codegen_group)):
        yield


def streamed(body: str) -> str:
    """``body`` (one kernel's source) with its whole-vector stores to the outputs named in
    its marker comment turned into ``torchcx_stream::store``, and its fences; the body as it
    is where there is no marker (Note [Streaming stores])."""
    marked = _MARKED.search(body)
    if marked is None:
        return body
    body = body[: marked.start()] + body[marked.end() :]
    if body.count("#pragma omp parallel") != body.count(_THREAD_START):
        return body  # a parallel region whose threads we could not make fence: Inductor's stores
    pointers = [p for p in marked.group(1).split() if _only_stored(body, p)]
    if not pointers:
        return body
    for pointer in pointers:
        body = _stores_streamed(body, pointer)
    body = body.replace(_THREAD_START, f"{_THREAD_START} torchcx_stream::Fence torchcx_thread_fence;")
    # the calling thread's fence: the first statement of the function, so it runs last
    entry = body.index("{", re.search(r"\bvoid\s+kernel\s*\(", body).end())
    return f"{body[: entry + 1]}\n    torchcx_stream::Fence torchcx_fence;{body[entry + 1 :]}"


def _only_stored(body: str, pointer: str) -> bool:
    """True if every use of ``pointer`` in ``body`` (past its declaration) is a store to it."""
    uses = [m.start() for m in re.finditer(rf"\b{pointer}\b", body)]
    declared = re.search(rf"\*\s*{pointer}\b", body)
    for at in uses:
        if declared is not None and at == declared.end() - len(pointer):
            continue
        if body.endswith(".store(", 0, at):
            continue
        scalar = re.match(rf"{pointer}\[[^\]]*\]\s*=(?!=)", body[at:])
        if scalar is None:
            return False
    return True


def _stores_streamed(body: str, pointer: str) -> str:
    """Each ``value.store(pointer ...)`` statement of ``body`` as ``torchcx_stream::store(value, pointer ...)``."""
    out, done = [], 0
    for match in re.finditer(rf"\.store\({pointer}\b", body):
        start, opening = match.start(), match.end() - len(pointer) - 1
        # the stored value: back to the statement's start (after ';', '{', '}' or the line's start)
        statement = body[max(body.rfind(c, 0, start) for c in ";{}\n") + 1 : start]
        value = statement.strip()
        close = _closing_paren(body, opening)
        if not value or close is None or not body.startswith(";", close + 1):
            continue
        arguments = body[opening + 1 : close]
        out.append(body[done : start - len(statement.lstrip())])
        out.append(f"torchcx_stream::store({value}, {arguments})")
        done = close + 1
    out.append(body[done:])
    return "".join(out)


def _closing_paren(text: str, opening: int) -> int | None:
    depth = 0
    for i in range(opening, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
