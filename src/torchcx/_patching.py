"""When and where torchcx's Inductor adjustments are in force (Note [Patches and threads]).

Note [Patches and threads]
--------------------------
torchcx's Inductor adjustments (_inductor_patches.py, _interleaved.py, _words.py) are
installed by replacing module and class attributes, which every thread sees, and only
for as long as torchcx compiles a graph. Two threads compiling at once broke that:

* Dynamo compiles forward graphs under its process-wide ``compile_lock``, but AOTAutograd
  compiles a backward graph lazily, at the first ``backward()``, outside that lock; a
  torchcx backward compile in one thread could thus overlap with any compile in another.
* Two overlapping install/restore pairs that do not nest (A installs, B installs, A
  restores, B restores) leave B's saved "original", which was A's patch, installed for
  good; and a thread whose patches were restored by the other mid-compile generated code
  without them (without Note [Bitcasts of computed values], a compile failure).
* A stock ``torch.compile`` running in another thread meanwhile saw torchcx's patches.

So the patches are installed inside ``patch_window()``, which holds Dynamo's
``compile_lock`` (a re-entrant lock) for the whole time they are installed: torchcx
compiles in two threads take turns (nested ones, in one thread, re-enter), and so do
Dynamo's own compiles in other threads (they take the same lock), which never see the
patches. The one compile that takes no lock, a stock backward graph compiled lazily in
another thread, is kept out by ``for_this_thread``: each patched function runs the
original unless it is called from the thread that holds the window
(``patched_for_this_thread`` installs such functions for a block and puts the originals
back). What remains global
is Inductor's config (``cache_key_tag``), read by such a stock backward compile if it
overlaps the window; it then stores its (stock) code under torchcx's key, which computes
the same values (docs/limitations.md, "Threads").

We take Dynamo's lock rather than one of our own because holding two locks in two orders
would deadlock: a torchcx forward compile already holds ``compile_lock`` when it installs
the patches. Where Dynamo has no such lock, a lock of ours stands in.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

_OWN_LOCK = threading.RLock()
_owner: int | None = None  # the thread holding the window (only one can: it holds the lock)
_depth = 0  # (re-entries by that thread)


def _lock() -> Any:
    try:
        from torch._dynamo import convert_frame
    except ImportError:  # pragma: no cover
        return _OWN_LOCK
    return getattr(convert_frame, "compile_lock", _OWN_LOCK)


@contextlib.contextmanager
def patch_window() -> Iterator[None]:
    """Hold the compile lock while torchcx's patches are installed (Note [Patches and threads])."""
    global _owner, _depth
    with _lock():
        _owner = threading.get_ident()
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
            if _depth == 0:
                _owner = None


def in_patch_window() -> bool:
    """True in the thread that holds the window."""
    return _owner == threading.get_ident()


def for_this_thread(patched: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    """``patched`` in the thread holding the window, ``original`` in every other thread."""

    # Inductor finds some overrides' fallbacks by the function's name (CppVecOverrides falls
    # back to the scalar op of that name when no argument is a vector): the original's name.
    @functools.wraps(original)
    def chosen(*args: Any, **kwargs: Any) -> Any:
        return (patched if _owner == threading.get_ident() else original)(*args, **kwargs)

    return chosen


@contextlib.contextmanager
def patched_for_this_thread(*patches: tuple[Any, str, Callable[..., Any]]) -> Iterator[None]:
    """Each ``(owner, name, patched)``: ``owner.name`` is ``patched`` in the thread holding the
    window and what it was in every other (``for_this_thread``) until the block ends; then each
    owner is as it was (the very entry of its own ``__dict__``, or none for an attribute it
    inherited)."""
    saved = [(owner, name, getattr(owner, name), vars(owner).get(name, _INHERITED)) for owner, name, _ in patches]
    for (owner, name, patched), (_, _, original, _) in zip(patches, saved):
        setattr(owner, name, for_this_thread(patched, original))
    try:
        yield
    finally:
        for owner, name, _, entry in saved:
            if entry is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, entry)


_INHERITED = object()


@functools.cache
def cannot_apply(adjustment: str, reason: str) -> None:
    """Say once per process that an Inductor adjustment is not in force, and why.

    Each adjustment checks for the internals it patches before patching them; where they
    are missing (a torch other than the one it was written for, docs/internals.md), it
    patches nothing and calls this. Cached: one warning per (adjustment, reason).
    """
    log.warning('torchcx: %s is not applied: %s (docs/internals.md, "The Inductor adjustments")', adjustment, reason)
