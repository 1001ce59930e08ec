"""Adjustments to Inductor 2.13, applied only while torchcx compiles a graph.

Two concern the bitcasts that unpack complex64 words into float32 parts
(Note [Interleaved layouts]); the third keeps Inductor's code generation linear
in the size of the graph (Note [Bounded inlining]). None changes what a graph
computes.

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

Note [Bounded inlining]
-----------------------
Inductor lowers a pointwise node to a closure (``Pointwise.inner_fn``) that calls
the loaders of its inputs; an input not stored in a buffer is evaluated again
inside every reader. A graph whose values are read several times is thus
evaluated as the tree of its paths, exponentially larger than the graph, and
code generation (tracing the loop body, dtype propagation, the CSE of each
codegen pass) walks that tree before CSE folds it back into the DAG it was
(pytorch/pytorch#148073). torchcx's decompositions are such graphs: the
special-value blends of ``acos`` & co. (ops/pointwise.py) select
among many branches computed from the same few intermediates, and so do their
backward graphs. torch.acos of a complex64 tensor is a 229-node real graph, of
which Inductor traced 28,000 ops into one loop body: 30-50 s to compile.

Inductor stores a reused value (``StorageBox.should_realize_on_reuse``) when it
reads more than ``realize_reads_threshold`` (4) buffers, holds a heavy op (exp,
log... on CPU), or has more than ``realize_cpu_opcount_threshold`` (50) ops
*after CSE*. torchcx's graphs pass under all three: they read one or two
buffers (the parts of one input), the blends are cheap comparisons and
selects, and a count after CSE does not see the repeated evaluation. We add a
fourth rule, for torchcx's compilations only: a reused pointwise value is stored
when inlining it costs its ``users`` readers more than ``_INLINE_BUDGET`` op
evaluations together, counted as inlining evaluates it (no CSE), and stopped as
soon as it passes ``_INLINE_BUDGET // users``, so the check itself costs at
most the budget. Every value left inline then costs its readers a bounded
amount, and the work of code generation is at most the budget times the number
of graph nodes (torch.acos: 1,000 ops traced, 3-4 s).

Storing a value does not slow the kernel: a buffer whose readers all fuse into
the kernel that writes it becomes a local of that kernel (torch.acos compiles
to the same single kernel, with the same 494 temporaries, as before). We chose
this cost rule over Inductor's knobs: ``realize_reads_threshold=0`` (the
workaround suggested upstream) stores every reused value, 40 buffers for
torch.acos against 15 here, and more buffers reach ``max_fusion_size`` sooner
and cost memory traffic where a reader does not fuse (a reduction); a lower
``realize_cpu_opcount_threshold`` changes single-reader chains too. Rewriting
the decompositions would leave their backward graphs, which autograd builds.
Written for torch 2.13 (``ir.StorageBox.should_realize_on_reuse``,
``Loops.inner_fn``/``inner_fn_args``, ``ops_handler.DefaultHandler``,
``OpCounterCSE``, ``MockHandler``); where one is missing, nothing is patched.
tests/test_compile_cost.py fails when the rule stops taking effect.

The adjustments change the code Inductor generates, which its FX graph cache
does not see: ``inductor_patches`` adds them (this file's hash and the settings
they read) to ``torch.compiler.config.cache_key_tag`` for the compilation, so a
graph compiled without them (by default ``torch.compile``, or an older torchcx)
is never loaded in their place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path
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
    """The patches above, for the duration of one compile_fx_inner call."""
    with contextlib.ExitStack() as stack:
        # They change the code Inductor generates (not what it computes): key the FX graph
        # cache on them, so that a graph compiled without them is not loaded instead.
        tag = torch.compiler.config.cache_key_tag
        stack.enter_context(torch.compiler.config.patch(cache_key_tag=f"{tag}|{_cache_tag()}"))
        if config.vectorized_bitcast:
            stack.enter_context(_vectorized_bitcasts())
        stack.enter_context(_pointwise_bitcasts())
        stack.enter_context(_bounded_inlining())
        yield


@functools.cache
def _source_hash() -> str:
    try:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    except OSError:  # pragma: no cover - no source file
        from . import __version__

        return __version__


def _cache_tag() -> str:
    return f"torchcx-patches:{_source_hash()}:vectorized_bitcast={config.vectorized_bitcast}:inline={_INLINE_BUDGET}"


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


#: Op evaluations a reused pointwise value's expression may cost, summed over its
#: readers, before it is stored once instead of inlined into each of them
#: (Note [Bounded inlining]). None switches the adjustment off (benchmarks only).
_INLINE_BUDGET: int | None = 50


class _OverBudget(Exception):
    pass


@contextlib.contextmanager
def _bounded_inlining() -> Iterator[None]:
    try:
        from torch._inductor import ir
        from torch._inductor.ops_handler import DefaultHandler, MockHandler, OpCounterCSE
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        yield
        return
    original = ir.StorageBox.__dict__.get("should_realize_on_reuse")
    original_loader = ir.ComputedBuffer.__dict__.get("make_loader")
    budget = _INLINE_BUDGET
    if original is None or original_loader is None or budget is None:  # pragma: no cover
        yield
        return

    class Counter(DefaultHandler):
        """Counts every op an expression evaluates, as inlining does (no CSE), up to a limit."""

        def __init__(self, limit: int) -> None:
            super().__init__()
            # Inductor's own op counter (ir.Loops.inner_fn_opcount) as the inner handler,
            # so that values stay short names rather than growing expression strings.
            self.inner = OpCounterCSE(MockHandler())
            self.left = limit

        def _default(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            self.left -= 1
            if self.left < 0:
                raise _OverBudget
            return getattr(self.inner, name)(*args, **kwargs)

    def inlining_costs_more_than(node: Any, limit: int) -> bool:
        try:
            with (
                V.set_ops_handler(Counter(limit)),
                ir.patch.object(ir.FlexibleLayout, "allow_indexing", True),
            ):
                node.inner_fn(*node.inner_fn_args())
        except _OverBudget:
            return True
        return False

    def should_realize_on_reuse(self: Any, users: int, *, graph_reuse: bool = True) -> bool:
        if original(self, users, graph_reuse=graph_reuse):
            return True
        return (
            users > 1 and isinstance(self.data, ir.Pointwise) and inlining_costs_more_than(self.data, budget // users)
        )

    stored: dict[str, bool] = {}  # buffer name -> read with a load although it reads nothing

    def make_loader(self: Any) -> Any:
        # Inductor inlines a stored value that reads no buffer (computed from constants)
        # into every reader, which would undo the rule above for those.
        if isinstance(self.data, ir.Pointwise) and not self.get_reduction_type():
            name = self.get_name()
            if name not in stored:
                stored[name] = self.num_reads() == 0 and inlining_costs_more_than(self.data, budget)
            if stored[name]:
                return super(ir.ComputedBuffer, self).make_loader()
        return original_loader(self)

    ir.StorageBox.should_realize_on_reuse = should_realize_on_reuse
    ir.ComputedBuffer.make_loader = make_loader
    try:
        yield
    finally:
        ir.StorageBox.should_realize_on_reuse = original
        ir.ComputedBuffer.make_loader = original_loader
