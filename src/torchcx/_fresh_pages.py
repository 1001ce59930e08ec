"""Huge pages for the large buffers a compiled graph allocates (Note [Large buffers on huge pages]).

Note [Large buffers on huge pages]
----------------------------------
glibc's ``malloc`` serves a request of 32 MiB or more (``DEFAULT_MMAP_THRESHOLD_MAX``
on 64-bit, the most its adaptive threshold reaches) with a fresh ``mmap`` and returns
it with ``munmap`` when it is freed. A compiled call that writes such a buffer (an
output, or an intermediate the wrapper allocates) therefore faults in every 4 KiB page
of it, every call, and the kernel zeroes each: the suite's elementwise chain at 2^22
complex64 elements (a 32 MiB ``z``) took 24.7 ms per call with 8,193 page faults, of
which about 13 ms in the kernel (one thread, AMD Zen 4, 2026-12-07), against 2.1 ms for
a quarter of the elements, whose buffers the heap keeps. Eager pays the same for its
own large tensors (PyTorch's ``THP_MEM_ALLOC_ENABLE=1``, read once at start-up, is the
process-wide remedy).

Where the kernel's transparent huge pages are ``madvise`` (the default of most
distributions), torchcx's wrapper code asks for them on each CPU buffer it allocates of
``HUGE_BUFFER_BYTES`` or more, before any kernel writes it: ``madvise(MADV_HUGEPAGE)``
on the 2 MiB-aligned part of the buffer, a few microseconds. Its pages are then faulted
in 2 MiB at a time: 528 faults and 11.8 ms for that call. Only such buffers: they are
written whole by the kernels of the call, so a huge page never holds memory nobody
asked for, and smaller ones come from the heap, whose pages stay mapped. Where huge
pages are ``always`` (every such mapping has them already) or ``never``, or off Linux,
nothing is emitted. Memory the kernel cannot gather into a huge page at once is faulted
as before (``defrag`` decides whether it compacts first). ``config.huge_pages = False``
leaves the allocations as Inductor writes them.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path

import torch

#: Buffers this large are mapped afresh by glibc at each allocation (see the Note).
HUGE_BUFFER_BYTES = 32 << 20
_HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14  # linux/mman.h
_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@functools.cache
def advisable() -> bool:
    """True where the kernel gives a mapping huge pages only when asked (``[madvise]``)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return "[madvise]" in _THP.read_text()
    except OSError:
        return False


@functools.cache
def _madvise() -> ctypes._CFuncPtr:
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def on_huge_pages(buffer: torch.Tensor) -> None:
    """Ask for huge pages on the 2 MiB-aligned part of ``buffer``'s storage, not yet written.

    Called by the generated wrapper right after it allocates a large CPU buffer. A refusal
    (an old kernel, a seccomp filter) leaves the buffer as it was: this is advice.
    """
    storage = buffer.untyped_storage()
    start = storage.data_ptr()
    end = start + storage.nbytes()
    first = -(-start // _HUGE_PAGE) * _HUGE_PAGE
    last = end // _HUGE_PAGE * _HUGE_PAGE
    if last - first >= _HUGE_PAGE:
        _madvise()(first, last - first, _MADV_HUGEPAGE)
