"""Adjustments to Inductor 2.13, applied only while torchcx compiles a graph.

(The stride-2 pairs and the complex64 words have their own modules: Note [Interleaved
access] in _interleaved.py, Note [Words as pairs] in _words.py; so have the one that builds a
graph's kernels as a few libraries, Note [Kernels built together] in _kernel_batches.py, and
the one that writes large outputs with streaming stores in those libraries, Note [Streaming
stores] in _streaming_stores.py.)

Two concern the bitcasts that unpack complex64 words into float32 parts
(Note [Interleaved layouts]); one keeps Inductor's code generation linear in the
size of the graph (Note [Shared subexpressions]); one answers the stride queries of
linear indices without SymPy's simplify (Note [Strides of linear indices]); one loads
whole integer vectors directly (Note [Full vector loads]); one stores broadcast
transcendental values instead of recomputing them (Note [Heavy values computed
once]). None of these changes what a graph computes. One makes a vectorized
expm1 as accurate as eager's (Note [Accurate expm1]); one computes the hypot of
floats in double, faster and as accurate (Note [Hypot of floats in double]); one runs a
pointwise producer in the loops of its row reduction (Note [Reductions fused with their
producers]); one skips Inductor's ISA probe
where it already succeeded for the same files (Note [The ISA probe remembered]); one
lets graphs with nan constants compile (Note [Nan constants in index
propagation]); one calls extern kernels without the dispatcher (Note [Extern
calls without the dispatcher]); two compute a reshaped extern or cat operand in its own shape
first (Notes [Reshaped extern inputs realized in their own shape] and [Reshaped cat inputs
realized in their own shape]); one copies an extern operand gathered through merged dims in
loops over the dims it merges (Note [Merged dims split before a copy]); the last installs
Inductor's dtype rules once per compile instead of once per emitted op (Note [Dtype rules
built once]).

Note [Vectorized bitcasts]
--------------------------
Inductor's vectorized C++ kernels emit a bitcast as a scalar loop through a
stack buffer (``CppVecOverrides`` has no vector override for
``to_dtype_bitcast``), which made the boundary cost 2.7x the planar kernel's
time; ATen's ``at::vec::cast<To>(Vectorized<From>)`` reinterprets a vector
register in one instruction. We emit that cast for same-width 32-bit types
(one per vector where a tile spans several, as beside 16-bit elements), and
otherwise leave the code as it was.

The int64 <-> int32 conversions that split and join the words are shuffles
(Note [Words as pairs], torchcx/_words.py).

Note [Bitcasts of computed values]
----------------------------------
``aten.view.dtype`` of a value that is not a buffer yet lowers to a
``DtypeView``. When Inductor's reinplacing pass later turns a scatter on that
value into a mutation (``diagonal_scatter`` becomes ``diagonal(x).copy_(src)``),
the scheduler needs a reindexer the ``DtypeView`` does not have and compilation
fails. In a functional graph a bitcast of a computed value is just a pointwise
op, so we lower it as one (it fuses exactly as the view would); bitcasts of
buffers (graph inputs) stay views.

Note [Shared subexpressions]
----------------------------
Inductor lowers a pointwise node to a closure (``Pointwise.inner_fn``) that calls
the loaders of its inputs; an input not stored in a buffer is evaluated again
inside every reader. A graph whose values are read several times is thus
evaluated as the tree of its paths, exponentially larger than the graph, and
everything that evaluates it (tracing the loop body into an FX graph, then
dtype propagation and the CSE of every codegen pass over that graph) walks
the tree before CSE folds it back into the DAG it was (pytorch/pytorch#148073).
torchcx's decompositions are such graphs: the special-value blends of ``acos``
& co. (ops/pointwise.py) select among many branches computed from the same few
intermediates, and so do their backward graphs. torch.acos of a complex64
tensor is a 229-node real graph that Inductor traced into a loop body of
28,000 nodes: 30-50 s to compile.

Inductor's guard against this, storing a reused value in a buffer
(``StorageBox.should_realize_on_reuse``), fires when it reads more than
``realize_reads_threshold`` (4) buffers, holds a heavy op, or has more than
``realize_cpu_opcount_threshold`` (50) ops after CSE. torchcx's graphs pass
under all three: one or two buffers (the parts of one input), cheap
comparisons and selects, and a count after CSE does not see the repeated
evaluation. Lowering those thresholds (``realize_reads_threshold=1`` is the
workaround suggested upstream), or storing values whose inlining costs more
than a budget, does bound the work, but it changes the kernels: stored values
that a reduction reads in its own loop become buffers in memory (tried: the
elementwise chain's kernel wrote two more arrays and ran 17% slower).

We keep Inductor's decisions and evaluate each inlined value once instead:
while torchcx compiles, a pointwise node's loader memoizes its value per
(ops handler, index). An ops handler is one evaluation (one loop body's trace,
one op count, one read/write analysis) and a masked sub-block is traced with a
handler of its own, so a value is only reused where it was computed; a reader
that indexes its input differently (a view) evaluates it again, as before.
The loop body becomes the DAG itself (torch.acos: 511 nodes instead of 28,000;
30-50 s to compile became 3-10 s), and Inductor's decisions (what to store,
fuse, and how) stay its own, made on the same IR: the generated code is the
same, byte for byte but a comment's counter, for torch.acos and for six of the
eight benchmark workloads. The exception is Inductor's CPU tiling heuristic
(``TilingSelect.select_tiling``), which counts the loop body's nodes to decide
whether non-contiguous loads make vectorization unprofitable (35 of them, or
12% of the ops): on the tree it counted copies that CSE removes, now it counts
the kernel's own. That vectorized two loops of the split-step NLS solver that
were scalar and left six loops of the complex MLP's training step scalar that
were vectorized; both workloads ran within 1% of their previous times
(minimum of 60 interleaved calls, benchmark's quick sizes, one thread).
Written for torch 2.13
(``ir.Pointwise.make_loader`` returning ``inner_fn``, ``V.get_ops_handler``);
where that is missing, nothing is patched. tests/test_compile_cost.py fails
when the memo stops taking effect.

Note [Heavy values computed once]
---------------------------------
Inductor stores a pointwise value in a buffer instead of inlining it into
each reader when it is read more than once (graph fanout or a broadcast) and,
on CPU, computes one of a list of heavy ops: ``exp``, ``log`` and kin,
``sigmoid``, ``tanh`` (``StorageBox.should_realize_on_reuse``). ``sin`` and
``cos`` are not on it, so ``torch.polar`` of a [T, D/2] angle, broadcast over
batch and heads by the rotary embedding, was evaluated again for every
element of q and k: 32 evaluations of each sine and cosine at B4 H8, 0.79x
eager where eager computes them once. While torchcx compiles, the other
transcendental functions and ``pow`` count as heavy too where the reuse is
a broadcast (``expand``). Where several nodes of the graph read the value,
the transcendental functions count (not ``pow``: ``x ** 2`` is a product):
Inductor realizes a reused ``exp`` value there, and a value with ``sin`` and
``cos`` is no cheaper to recompute. The suite's elementwise chain showed it
once Note [Exponentials of imaginary numbers] (``_graph_passes.py``) took the
``exp`` out of ``exp(1j * |x|)``: ``z`` was no longer stored, and its row
reduction computed the hypot, sine and cosine a second time (7.1 -> 9.8 ms;
with this rule 5.8 ms). A value read several times at the same index within
one kernel is computed once there already (Note [Shared subexpressions]).

Note [Large intermediates freed between kernels]
------------------------------------------------
Inductor's C++ backend emits consecutive scheduled nodes as one C++ function (a
``KernelGroup``), flushed only at an extern call, a template or 500 arguments. The
wrapper allocates every buffer the function writes before calling it and frees them
after, so the intermediates of a long chain are all alive at once and none is reused:
the benchmark suite's 30-gate quantum circuit (18 qubits) held 56 planar buffers of
1 MiB each, 56 MiB where a few suffice, and where the allocator returned that memory
after each call, every call faulted it in again (13,826 page faults, 45 ms against 21 ms
for the same code). While torchcx compiles, the group is flushed after a node that
writes at least ``_LARGE_INTERMEDIATE_BYTES`` (1 MiB): such a kernel runs for 100 us or
more, so the extra Python call (a few us) is noise, and between the calls the wrapper
frees what is dead and reuses it for the next allocations (Inductor's own buffer
reuse). Smaller graphs keep one function, and their per-call cost (issue #13). The
loops are the same; the longest chain compiles a little slower (quantum: 6 s of 76 s).

Note [Accurate expm1]
---------------------
Inductor's vectorized C++ kernels compute ``expm1(x)`` as ``exp(x) - 1``
(``CppVecOverrides.expm1``, "for a better performance"), which cancels for small
|x|: expm1(1e-30) is 0 and expm1(-0.0) is +0, where eager's kernel (Sleef's
expm1) gives 1e-30 and -0.0. torchcx's complex expm1 is built on the real one
precisely to avoid that cancellation (``expm1_impl``), so while torchcx compiles
we emit ATen's ``Vectorized::expm1()``, as upstream did after torch 2.13
(pytorch/pytorch#189803, fixed by #190533). The compiled edge-value parity test
(tests/test_numerics.py) fails when this stops taking effect.

Note [Hypot of floats in double]
--------------------------------
|z| of a complex64 value is ``hypot(re, im)``, and Inductor's vectorized hypot
is ATen's ``Vectorized<float>::hypot``, Sleef's ``hypotf`` (0.5001 ULP), which
rescales through a division: in the suite's elementwise chain at 2^20 elements
it took 1.5 ms of the kernel's 3.4 ms (one thread, AMD Zen 4, 2026-12-06),
where a plain ``sqrt(re^2 + im^2)`` takes 0.1 ms but loses accuracy and
overflows from 1.9e19. While torchcx compiles, a vectorized float32 hypot is
``sqrt(double(a)^2 + double(b)^2)`` rounded to float: the squares of 24-bit
significands are exact in double, the sum and the root each round at 2^-53,
so the float result is within 0.5 ULP plus 2^-29 ULP of the exact value (the
rounding of 1/2^29 of halfway cases aside: at least as accurate as Sleef),
and nothing overflows or underflows (float's range squared lies inside
double's). C99 wants ``hypot(inf, nan) = inf`` where the sum is nan, so an
infinite operand is blended in. glibc's scalar ``hypotf`` (``std::hypot``, the
scalar loop's code) is the same formula, so vector body and scalar tail agree.
The kernel took 2.5 ms (hypot 0.55 ms). float64 hypot keeps Sleef's. In torchcx's
kernel libraries on AVX-512 and AVX2, the hypot as emitted here is rewritten to one
computed in float and corrected, with the same values and faster (Note [Float math in
registers] in _kernel_batches.py); a kernel built alone keeps this one.

Note [Reductions fused with their producers]
--------------------------------------------
``z = f(x); return z, (z * z.conj()).real.sum(-1)`` computes ``z``'s parts in
one pointwise loop, stores them, and reads them back in the reduction's loop:
Inductor's C++ scheduler fuses a pointwise node into a reduction only when
its loop ranges are the reduction's (``vars1 == vars2 + reduce2``,
``ReasonFusedNodes.COMPATIBLE_REDUCTION``), and the pointwise node's
contiguous (16, 65536) had been merged into one loop of 1048576 by
``simplify_loops``. Its "compatible ranges" recomputation (sizes recomputed
under the other node's index expressions) exists only between pointwise
nodes. While torchcx compiles, a pointwise node (or group) whose element count
equals a reduction's, and whose buffers have the same default loop ranges as
the reduction's, has its sizes recomputed under the reduction's index
expressions, as a query (the loop states are restored) and then for the
fusion; where that gives the reduction's ranges, they fuse as
``COMPATIBLE_REDUCTION`` nodes always do, and the parts no longer leave the
kernel (its planar buffers are removed). The suite's elementwise chain at
2^20 elements lost its second kernel and 8 bytes of the 40 it moved per
element. The chain, fused against not (with the hypot of Note [Hypot of floats
in double] both ways; one thread, AMD Zen 4, 2026-12-06,
``benchmarks/kernel_adjustments.py``): 0.729 -> 0.679 ms at 2^18 elements,
3.15 -> 2.87 ms at 2^20, 40 -> 28 ms at 2^22; the same at 2^14 and 2^16, and
12% slower at 2^12 (0.038 -> 0.043 ms), where the stored values never leave
the L2 cache and the reduction's accumulation in the loop costs more than it
saves. So only producers of at least ``_FUSED_ELEMENTS_MIN`` (2^16) elements
fuse, and only into rows of at least ``_FUSED_ROW_MIN`` (32): at 16 elements
a row, one vector per row, the fused kernel ran 6% slower (the math of
successive rows no longer overlaps), at 32 and 64 the same. A reduction over
leading dimensions has other default ranges and is left alone.

Note [Nan constants in index propagation]
-----------------------------------------
Inductor's index propagation evaluates ops whose operands are all constants as
SymPy expressions, and ``maximum``/``minimum`` build SymPy's ``Max``/``Min``,
which raise "The argument 'nan' is not comparable" for a nan constant. torchcx's
decompositions take ``max(|re|, |im|)`` (sqrt, rsqrt, log|z|, ...); where
Inductor had folded the parts to nan constants (``0 / 0`` of an input zeroed in
place, found by the differential fuzzer), compilation failed. For a nan operand
we return ``NotImplemented``, Inductor's own answer for values it cannot
represent: the op is then computed in the kernel, and propagates the nan.

Note [Extern calls without the dispatcher]
------------------------------------------
Inductor's Python wrapper calls a fallback op through the dispatcher
(``torch.ops.torchcx.extern.default(op, spec, tensors, ints)``), which for
torchcx's extern op lands in its Python kernel after a C++ round trip: 6 us of
the 22 us an extern call of a 64-point FFT cost (the FFT itself 8-9 us; one
thread, 2026-12-06). Every compiled FFT and GEMM is such a call, and at small
sizes they decide whether a compiled program beats eager. Inductor's registry of
custom codegen for fallback kernels (``CUSTOM_EXTERN_KERNEL_CODEGEN``, keyed by
the op's Python name) lets the wrapper call torchcx's kernel function directly
instead: the same function, the same arguments, and its results cloned where they
alias an input as before (``extern._call_plan``). The entry exists only while
torchcx compiles, and only torchcx's graphs hold the op.

Note [Reshaped extern inputs realized in their own shape]
----------------------------------------------------------
An extern kernel (a vendor FFT or GEMM) takes its operands with fixed strides. Where an
operand is a reshape of a pointwise value not yet computed, Inductor's
``ExternKernel.require_strides`` copies the reshape: one kernel over the reshape's shape, each
merged index split by division and modulo into the value's own indices. In the FNO's
channel mixing that operand is each corner's modes, a permuted copy of the spectrum merged
into (256 modes, 8, 32) for a batched GEMM: the spectrum's contiguous dim (its rows, from
the FFT) is hidden in the merged mode index, so Inductor cannot tile the loop and runs it
as a scalar gather with an 8 KiB stride (0.5-0.6 ms per corner). While torchcx compiles,
such a value is computed first in its own shape, where Inductor tiles the transposition
into 16x16 blocks, and the extern gets a reinterpretation of that buffer: only where the
strides asked for are the reshape's contiguous ones, which the reinterpretation then has
(other strides would need a second copy). The same bytes are written once; the loops
differ. The suite's FNO step: 1.03-1.04x.

Note [Reshaped cat inputs realized in their own shape]
-----------------------------------------------------
The same gather as Note [Reshaped extern inputs realized in their own shape], where the
operand is built by a ``cat``: the planar real GEMM of a complex one stacks the parts of
its operands (``[re, im]``). In the FNO's backward, the weight gradient's operand is each
corner of the output gradient's spectrum, a row-major copy (a ``clone``) of the FFT's
columns-outer result, reshaped to merge its two mode dims; ``ConcatKernel.realize_into``
copies it into the cat's slice through that reshape, each merged index split by division
and modulo (a scalar gather, 65536 elements per corner and part). While torchcx compiles,
where such a copy would be a gather (``extract_read_writes`` of the input's loader: an
index divided or taken modulo, and along the copy's innermost dim a read that is not
contiguous or is itself divided; division in an outer dim alone, a reshaped broadcast,
vectorizes and is left alone), and the input reads an unrealized pointwise value through
views one of which merges dims, that value is realized first in a row-major layout (frozen: left
flexible, Inductor orders it as it reads, and the transposition moves into the cat's
copy); its own loops tile the transposition, and the cat's copy reads it linearly (a tiled
16x16 transpose). Only the FNO step of the suite has such an input; 1.03-1.05x per round.

Note [Merged dims split before a copy]
--------------------------------------
Where an extern kernel's operand is not stored with the strides it asks for,
``ExternKernel.require_strides`` copies it: one loop over the operand's own shape. When the
operand reads its data through a reshape that merged dims whose strides do not merge (a
permuted corner of an FFT's output, flattened into a batch of GEMMs), each merged index is
split back by division and modulo inside that loop, so Inductor can neither vectorize it nor
tile the transposition: a scalar gather with large strides on both sides. In the FNO's
backward the weight gradient's operand is such a copy: 65,536 words per corner, read at
``64*(m % 16) + m // 16`` from the inverse FFT's columns-outer output and written across a
(256, 8, 32) row-major operand. While torchcx compiles, where the copy would be a gather
(the test of Note [Reshaped cat inputs realized in their own shape]) and every divisor and
modulus applied to a loop index divides that index's range, the copy runs over the dims the
index merges (``m = 16*i + j``, each a loop of its own), its indices then affine, written
with the strides the extern asked for split the same way; the extern gets a reinterpretation
of that buffer in its own shape. The same elements move, with the same values; Inductor then
tiles the transposition. Only where every dim split off is a whole number of Inductor's tiles
(16 lanes with AVX-512, 8 with AVX2): neuraloperator's FNO with 24 x 13 kept modes has 42
such copies per compile, and split there its forward and backward took 1.03x longer (1.01x
for TFNO; 11 interleaved rounds), the 13-wide dims leaving every tile a scalar tail. Static
shapes only; any other index, or a divisor that does not divide its range, leaves the copy
as it was.

Note [Dtype rules built once]
----------------------------
Inductor's code generation asks ``DtypePropagationOpsHandler()`` for the type of every op
it emits (``CSEProxy._default``). The class is a singleton, but Python runs ``__init__``
again on each construction, and that ``__init__`` installs a rule per op from three
registries and checks the coverage with ``dir``: about 100 us each time on this machine,
3600 times for ``acosh`` forward and backward (a third of a second of a 3-4 s compile).
While torchcx compiles, ``__init__`` returns at once when the one registry that grows
(``utils.op_dtype_propagation_rules``, filled as lowerings are registered) equals what it
was at the instance's last full ``__init__``; the other two are module-level tables. The
instance then holds the same rules as after a full run, for every caller.

Note [Empty tails not generated]
--------------------------------
Inductor's C++ backend generates each fused kernel's loop body three times: a
scalar kernel, a vectorized one for the tiled main loop, and a vectorized one
for the tail the tiles leave (``CppKernelProxy.codegen_functions``). Where the
loop's size is a known multiple of the tile, the tail's range is empty and its
code is never emitted (``codegen_conditions`` drops a kernel whose range is
empty), yet it was generated: a third of the code generation of every kernel
at such sizes. torchcx's kernels are large (the 30-gate quantum circuit: 31
kernels of 15 fused nodes each, 5.3 s of code generation), so while torchcx
compiles, a pointwise kernel whose every tiled loop has a tail of statically
zero length takes the scalar kernel, already generated, as its tail instead
(``cpp.enable_loop_tail_vec`` off for that kernel alone): an empty range either
way, so the emitted code is the same. Kernels with a reduction keep Inductor's
path, where a scalar tail would change the reduction's prefix code.

Note [Full vector loads]
------------------------
Inductor's vectorized C++ kernel loads every tile with a count,
``Vectorized<T>::loadu(ptr, n)``, also in the main loop where ``n`` is the whole
tile. ATen's AVX2 ``loadu(ptr, count)`` of float and double checks for a whole
vector and loads it directly; that of int64, int32, int16 and int8 always copies
``count`` elements into a stack buffer and loads the buffer, so each load waits
for the copy's stores (a failed store-to-load forward). complex64 crosses
torchcx's graphs as int64 words (Note [Interleaved layouts]): the in-place
update ``x.mul_(p); x.add_(y)`` on 2^18 complex64 elements spent 1.3-2 ms in its
one fused kernel, slower than eager's two passes. While torchcx compiles, a load
in a kernel's main loop (no tail, no mask) that fills its vectors exactly is
emitted without the count, ``loadu(ptr)``: the same elements, loaded directly.
Partial tiles (a tail loop; 16-bit elements beside 32-bit ones, which fill half
a vector) keep Inductor's line.

Note [Strides of linear indices]
--------------------------------
Inductor's CPU backend decides how to tile and vectorize each loop from the
stride of every access along the loop variables (``stride_at_vec_range``): it
rewrites the index for the vector's range and runs ``sympy.simplify`` on the
index and on ``index(v + 1) - index(v)``, milliseconds each. torchcx's real
graphs have several times the kernels of the complex program's stock
compile, and their indices are mostly linear forms (``x0 + 4096*x1``): in
neuraloperator's TFNO forward and backward, 680 such simplifications took
3.4 s of a 45 s compile (profiled 2026-12-04). For a linear form with integer
coefficients (no ``FloorDiv``, ``ModularIndexing`` or product of symbols)
the answer is the variable's coefficient, and SymPy's automatic evaluation
already holds the form in canonical order, so ``simplify`` returns it
unchanged: while torchcx compiles we return that coefficient and leave every
other index to Inductor. The strides, hence the generated code, are the same
(tests/test_compile_cost.py compares them with Inductor's own).

The adjustments change the code Inductor generates, which its FX graph cache
does not see: ``inductor_patches`` adds them (this file's hash and the settings
they read) to ``torch.compiler.config.cache_key_tag`` for the compilation, so a
graph compiled without them (by default ``torch.compile``, or an older torchcx)
is never loaded in their place.

Note [The ISA probe remembered]
-------------------------------
Before it compiles or loads a C++ kernel, every process checks which vector ISAs work
(``cpu_vec_isa.valid_vec_isa_list``): for each ISA the CPU reports, it builds a test
library (cached on disk since pytorch/pytorch#100378, "ISA dry compile will cost about
1 sec time each startup time") and then ``dlopen``s it in a new Python process
(``VecISA._probe_load``), which loads libtorch_cpu. On the 2-core Xeon that is four
probes (AMX, VNNI, AVX-512, AVX2), 2.1-2.3 s in every new process: most of a torchcx
program's load from the caches (docs/performance.md). While torchcx compiles, a
successful probe leaves a stamp beside the test library, and a later probe of the same
library returns True without the process when the stamp matches: the library (its path
is Inductor's hash of the code, the compiler's version, the ISA flags and torch's
version; its size and mtime), libtorch_cpu's size and mtime, the Python executable and
the CPU's flags. Anything else, and a failed probe, runs Inductor's probe again. The
answer is the one the probe gave for the same files on the same CPU; the time saved is
the probe's processes, nothing else.

Note [Adjustments and torch versions]
-------------------------------------
Every adjustment was written against torch 2.13's Inductor (``WRITTEN_FOR``) and
works around something upstream; ``ADJUSTMENTS`` below names the upstream issue or
PR for each (or says that none was found, and what was searched). On another torch
minor, ``_written_for_this_torch`` warns once, and:

* the two that replace Inductor's generated code for some accesses and match its
  C++ spelling of others, Notes [Interleaved access] and [Words as pairs] (and with them
  [Pairs in lane order]), stay off:
  a changed spelling or kernel protocol could make them emit wrong code;
* the others stay on where the internals they patch exist, because the attribute
  check is the better guard for them: Note [Bitcasts of computed values] is what
  makes ``diagonal_scatter`` & co. compile at all (off, they fail to compile), and
  the rest change a method or lowering whose protocol they check and whose effect
  the tests check (tests/test_internals.py).

Where an internal an adjustment patches is missing, it patches nothing and says so
once (``_patching.cannot_apply``); nothing is left silently off. Each has a test
that fails when it stops taking effect (docs/internals.md lists them).

Note [Patches in one thread at a time]
--------------------------------------
The adjustments replace module and class attributes that every thread sees. They are
installed under Dynamo's compile lock for the whole time they are in force, so torchcx
compiles in two threads (a backward graph compiled lazily at the first ``backward()``
included, which Dynamo's lock does not otherwise cover) take turns, as do Dynamo's own
compiles; and each replaced function acts only in the thread that installed it, falling
back to Inductor's own in any other. The alternative, a reference count so that
overlapping torchcx compiles share one installation, would still show the adjustments to
a stock compile in another thread and cannot share the cache tag (settings may differ per
compile). Details in Note [Patches and threads], torchcx/_patching.py.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import unittest.mock
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from . import _fresh_pages, _kernel_batches, config
from ._interleaved import interleaved_access
from ._kernel_batches import kernels_built_together
from ._patching import cannot_apply, for_this_thread, patch_window, patched_for_this_thread
from ._streaming_stores import cache_tag as streaming_cache_tag
from ._streaming_stores import streaming_stores
from ._words import joining_words, words_as_pairs

_FOUR_BYTE = (torch.float32, torch.int32)

#: The torch (major, minor) whose Inductor every adjustment was written against
#: (Note [Adjustments and torch versions]).
WRITTEN_FOR = (2, 13)

#: Every adjustment torchcx makes to Inductor while it compiles: its Note, the upstream
#: issue or PR it works around (checked to exist; "none found" lists what was searched),
#: and what it does on a torch other than ``WRITTEN_FOR`` ("off", or "checked": applied
#: where the internals it patches exist). docs/internals.md has the same table with tests.
ADJUSTMENTS: dict[str, tuple[str, str]] = {
    "Vectorized bitcasts": (
        "no upstream issue found (searched pytorch/pytorch issues for CppVecOverrides to_dtype_bitcast "
        "vectorization / bit_cast scalar loop); the scalar loop is Inductor's generic fallback for ops "
        "without a vector override, pytorch/pytorch#134569",
        "checked",
    ),
    "Bitcasts of computed values": (
        "pytorch/pytorch#189584 (DtypeView has no make_reindexer: 'make_reindexer NYI on DtypeView'; not in 2.13)",
        "checked",
    ),
    "Shared subexpressions": ("pytorch/pytorch#148073", "checked"),
    "Accurate expm1": ("pytorch/pytorch#189803, fixed by pytorch/pytorch#190533 (after 2.13)", "checked"),
    "Hypot of floats in double": (
        "no upstream issue found (searched pytorch/pytorch issues: Vectorized hypot slow, Sleef hypotf "
        "performance, inductor cpp hypot vectorization)",
        "checked",
    ),
    "Reductions fused with their producers": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp fuse pointwise into reduction "
        "different loop ranges, COMPATIBLE_REDUCTION simplify_loops, cpp reduction reads intermediate buffer); "
        "the scheduler's own TODO in CppScheduling._why_fuse_nodes ('allow fusion pointwise (vars1, ()) suffix')",
        "checked",
    ),
    "The ISA probe remembered": (
        "pytorch/pytorch#100378 (the ISA check's startup cost; upstream caches the test build, the dlopen "
        "probe still runs in every process); no issue found for the probe itself (searched: inductor VecISA "
        "dlopen probe subprocess startup time, check_build _probe_load)",
        "checked",
    ),
    "Nan constants in index propagation": (
        "no upstream issue found (searched pytorch/pytorch issues: index_propagation Max nan "
        "'is not comparable', inductor nan constant maximum)",
        "checked",
    ),
    "Heavy values computed once": (
        "no upstream issue found (searched: inductor sin/cos recomputed through a broadcast, "
        "should_realize_on_reuse heavy ops); the heavy-op list is from pytorch/torchdynamo#1468 "
        "('can be further revised')",
        "checked",
    ),
    "Empty tails not generated": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp tail kernel codegen when "
        "divisible, enable_loop_tail_vec compile time, CppKernelProxy codegen_functions three kernels)",
        "checked",
    ),
    "Extern calls without the dispatcher": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor python wrapper custom op "
        "dispatcher overhead, fallback kernel call overhead); the registry it uses is Inductor's own, "
        "added for the print HOP (torch/_inductor/codegen/custom_extern_kernel_codegen.py)",
        "checked",
    ),
    "Reshaped cat inputs realized in their own shape": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cat input view reshape permute gather "
        "div mod, ConcatKernel realize_into slow copy); related: pytorch/pytorch#115217 (copy kernels of cat inputs)",
        "checked",
    ),
    "Merged dims split before a copy": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor require_strides copy_input "
        "div mod gather, cpp scalar loop ModularIndexing FloorDiv reshape permute copy, split merged dims)",
        "checked",
    ),
    "Dtype rules built once": (
        "pytorch/pytorch#192820 (skips the rebuild when op_dtype_propagation_rules is unchanged; after 2.13), "
        "after pytorch/pytorch#141882 made the handler a singleton whose __init__ still runs on each construction",
        "checked",
    ),
    "Reshaped extern inputs realized in their own shape": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor require_strides copy_input view "
        "div mod scalar loop, cpp tiling reshape of permute, extern kernel input reshape gather slow)",
        "checked",
    ),
    "Large intermediates freed between kernels": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp KernelGroup flush peak memory, "
        "cpu fused kernel buffers freed late, cpp_fused intermediate buffer reuse)",
        "checked",
    ),
    "Interleaved access": (
        "no upstream issue found (searched: inductor cpp stride-2 / non-contiguous loads, deinterleave, "
        "view_as_complex rotary embedding vectorization); related: pytorch/pytorch#99966",
        "off",
    ),
    "Pairs in lane order": (
        "no upstream issue found (searched: at::vec deinterleave2 avx2 vpermps slow, inductor cpp complex "
        "interleaved shuffle cost); it exists because of the pair layout of Notes [Interleaved access] and "
        "[Words as pairs]",
        "off",
    ),
    "Words as pairs": (
        "no upstream issue found (searched: inductor cpp int64 to int32 conversion vectorized, "
        "complex64 view as int64); it exists because of torchcx's own word layout",
        "off",
    ),
    "Full vector loads": (
        "no upstream issue found (searched pytorch/pytorch issues and PRs: Vectorized int64 loadu count "
        "avx2 memcpy tmp_values, inductor cpp int64 load slow); ATen's AVX2 float/double loadu(ptr, count) "
        "has the whole-vector check, the integer ones do not",
        "checked",
    ),
    "Strides of linear indices": (
        "no upstream issue found (searched pytorch/pytorch issues: stride_at_vec_range slow, "
        "simplify_index_in_vec_range compile time, cpp select_tiling sympy simplify); sympy.simplify's cost "
        "in Inductor is sympy/sympy#28200's kind (cited in torch/_inductor/sizevars.py)",
        "checked",
    ),
    "Kernels built together": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp one shared library per kernel, "
        "cpp kernel compile time g++ per kernel, batch cpp kernels); it amortizes the precompiled prefix of "
        "pytorch/pytorch#144293 over several kernels",
        "checked",
    ),
    "64-bit transposes in registers": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp transpose_mxn int64 / double "
        "vectorized, tiled transpose 64-bit scalar fallback); Inductor's tiled transposes came with "
        "pytorch/pytorch#91532, vectorized for float32 (ATen since added bfloat16 and half)",
        "checked",
    ),
    "Sines and cosines of one value": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp sin cos of the same value, "
        "sincos vectorized, Vectorized sincos Sleef); Sleef's sincosf is what ATen's complex exp would use "
        "(its commented-out vectorized exp in vec512_complex_float.h)",
        "checked",
    ),
    "Bfloat16 rounding in one instruction": (
        "no upstream issue found (searched pytorch/pytorch issues: cvtfp32_bf16 avx512_bf16 vcvtne2ps2bf16, "
        "inductor bfloat16 store conversion slow, Vectorized<BFloat16> convert_float_bfloat16 native "
        "instruction)",
        "checked",
    ),
    "Large buffers on huge pages": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpu output allocation page faults, "
        "empty_strided_cpu madvise hugepage, cpu caching allocator large tensors mmap); PyTorch's process-wide "
        "remedy is THP_MEM_ALLOC_ENABLE (c10/core/impl/alloc_cpu.cpp)",
        "checked",
    ),
    "Streaming stores": (
        "no upstream issue found (searched pytorch/pytorch issues: inductor cpp non-temporal store, streaming "
        "store _mm512_stream, memory bound kernel write allocate / read for ownership)",
        "checked",
    ),
    "quiet_complex_warning": (
        "no upstream issue for the warning from the joint-graph passes; the warning itself is discussed "
        "in pytorch/torchtitan#15",
        "checked",
    ),
}


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
        cannot_apply("quiet_complex_warning", "torch._inductor.lowering does not import")
        yield
        return
    with patch_window():  # Note [Patches and threads]
        original = getattr(lowering, "_warn_complex_not_supported", None)
        if original is None:
            cannot_apply("quiet_complex_warning", "torch._inductor.lowering._warn_complex_not_supported is missing")
            yield
            return
        with patched_for_this_thread((lowering, "_warn_complex_not_supported", lambda: None)):
            yield


@contextlib.contextmanager
def inductor_patches() -> Iterator[None]:
    """The patches above, for the duration of one compile_fx_inner call.

    Installed for the calling thread only, one thread at a time (Note [Patches and threads]).
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(patch_window())
        # They change the code Inductor generates (not what it computes): key the FX graph
        # cache on them, so that a graph compiled without them is not loaded instead.
        tag = torch.compiler.config.cache_key_tag
        stack.enter_context(torch.compiler.config.patch(cache_key_tag=f"{tag}|{_cache_tag()}"))
        if config.vectorized_bitcast:
            stack.enter_context(_vectorized_bitcasts())
        stack.enter_context(_pointwise_bitcasts())
        stack.enter_context(_shared_subexpressions())
        stack.enter_context(_accurate_expm1())
        stack.enter_context(_hypot_in_double())
        stack.enter_context(_reductions_fused_with_producers())
        stack.enter_context(_isa_probe_remembered())
        stack.enter_context(_nan_constants_not_compared())
        stack.enter_context(_heavy_values_computed_once())
        stack.enter_context(_strides_of_linear_indices())
        stack.enter_context(_full_vector_loads())
        stack.enter_context(_empty_tails_not_generated())
        stack.enter_context(_direct_extern_calls())
        stack.enter_context(_reshaped_extern_inputs_realized())
        stack.enter_context(_reshaped_cat_inputs_realized())
        stack.enter_context(_merged_dims_split())
        stack.enter_context(_dtype_rules_built_once())
        if config.free_large_intermediates:
            stack.enter_context(_large_intermediates_freed())
        if config.huge_pages and _fresh_pages.advisable():
            stack.enter_context(_large_buffers_on_huge_pages())
        if config.batch_kernels:
            stack.enter_context(kernels_built_together())
            if config.streaming_stores:
                stack.enter_context(streaming_stores())
        if config.interleaved_access and _written_for_this_torch():
            stack.enter_context(interleaved_access())
            stack.enter_context(words_as_pairs())
            stack.enter_context(_vec_override("bitwise_or", joining_words, "Words as pairs"))
        yield


@functools.cache
def _written_for_this_torch() -> bool:
    """True on the torch the adjustments were written for (Note [Adjustments and torch versions]).

    Elsewhere: a warning, once; the adjustments marked "off" in ``ADJUSTMENTS`` stay off.
    """
    import logging

    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if version == WRITTEN_FOR:
        return True
    off = [name for name, (_, other) in ADJUSTMENTS.items() if other == "off"]
    logging.getLogger(__name__).warning(
        "torchcx: the Inductor adjustments were written for torch %d.%d, this is torch %s: Notes %s are "
        "off (interleaved data is read element by element); the others are applied where the internals "
        "they patch exist (docs/internals.md)",
        *WRITTEN_FOR,
        torch.__version__,
        " and ".join(f"[{name}]" for name in off),
    )
    return False


@functools.cache
def source_hash() -> str:
    """torchcx's version and a hash of all its source, once per process (3 ms).

    All of it, not the adjustment modules alone: Inductor's FX graph cache saves with an entry
    every guard the shape environment holds on the graph's sizes, including those torchcx's
    lowering and graph passes added before Inductor ran. An entry that an older torchcx saved
    for the same real graph brings its guards back: in CI, one saved while a graph pass still
    compared ``3*n <= 64`` made an automatically dynamic function compile a third time, for
    ``n = 64``, under the torchcx that no longer asks. An edited install compiles afresh.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("torchcx")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        ours = "unknown"
    return hash_of_sources(Path(__file__).parent, ours)


def hash_of_sources(root: Path, version: str) -> str:
    """A hash of ``version`` and every ``.py`` file under ``root``, with their paths."""
    digest = hashlib.sha256(version.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_tag() -> str:
    return (
        f"torchcx:{source_hash()}:vectorized_bitcast={config.vectorized_bitcast}"
        f":interleaved={config.interleaved_access}:lanes={config.lane_order}:shared={_SHARE_SUBEXPRESSIONS}"
        f":free_large={config.free_large_intermediates}:{streaming_cache_tag()}"
        f":bf16_rounding={_kernel_batches._ROUND_BF16_IN_ONE_INSTRUCTION}"
        f":float_math={_kernel_batches._FLOAT_MATH_IN_REGISTERS}"
        f":huge_pages={config.huge_pages and _fresh_pages.advisable()}"
    )


@contextlib.contextmanager
def _vec_override(name: str, make: Any, adjustment: str) -> Iterator[None]:
    """``CppVecOverrides.<name>`` replaced by ``make(original)`` for the duration.

    ``original`` is the override Inductor would use (possibly inherited from the scalar
    ``CppOverrides``); where Inductor has no such override, nothing is patched (and
    ``adjustment`` is named in a warning, once).
    """
    try:
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.codegen.cpp does not import")
        yield
        return
    overrides = getattr(cpp, "CppVecOverrides", None)
    original = getattr(overrides, name, None)
    if original is None:
        cannot_apply(adjustment, f"torch._inductor.codegen.cpp.CppVecOverrides.{name} is missing")
        yield
        return
    own = overrides.__dict__.get(name)  # None if inherited
    setattr(overrides, name, staticmethod(for_this_thread(make(original), original)))
    try:
        yield
    finally:
        if own is None:
            delattr(overrides, name)
        else:
            setattr(overrides, name, own)


#: Ops that make a value read by several nodes worth a buffer (beyond Inductor's own list).
_TRANSCENDENTAL = frozenset(
    ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf")
)
#: Ops that make a value read through a broadcast worth a buffer (a power too: it is computed
#: again for every element the broadcast repeats it to).
_HEAVY = _TRANSCENDENTAL | {"pow"}


@contextlib.contextmanager
def _heavy_values_computed_once() -> Iterator[None]:
    """Note [Heavy values computed once] (upstream: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor import ir
    except ImportError:  # pragma: no cover
        cannot_apply("Heavy values computed once", "torch._inductor.ir does not import")
        yield
        return
    original = ir.StorageBox.__dict__.get("should_realize_on_reuse")
    if original is None or not hasattr(ir, "is_cpu") or not hasattr(ir.Pointwise, "inner_fn_opcount"):
        cannot_apply(
            "Heavy values computed once",
            "ir.StorageBox.should_realize_on_reuse, ir.is_cpu or inner_fn_opcount is missing",
        )
        yield
        return

    def should_realize_on_reuse(self: Any, users: int, **kwargs: Any) -> bool:
        if users > 1 and isinstance(self.data, ir.Pointwise) and ir.is_cpu(self.data):
            heavy = _HEAVY if kwargs.get("graph_reuse", True) is False else _TRANSCENDENTAL
            if heavy & set(self.data.inner_fn_opcount().used_ops):
                return True
        return original(self, users, **kwargs)

    with patched_for_this_thread((ir.StorageBox, "should_realize_on_reuse", should_realize_on_reuse)):
        yield


#: Note [Large intermediates freed between kernels]: a node writing at least this many bytes
#: ends its C++ function.
_LARGE_INTERMEDIATE_BYTES = 1 << 20


@contextlib.contextmanager
def _large_intermediates_freed() -> Iterator[None]:
    """Note [Large intermediates freed between kernels] (upstream: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor.codegen import cpp
        from torch._inductor.utils import sympy_product
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover
        cannot_apply("Large intermediates freed between kernels", "torch._inductor.codegen.cpp does not import")
        yield
        return
    scheduling = getattr(cpp, "CppScheduling", None)
    original = vars(scheduling).get("codegen_node") if scheduling is not None else None
    if original is None or not hasattr(scheduling, "_set_flush_status"):
        cannot_apply(
            "Large intermediates freed between kernels", "CppScheduling.codegen_node or _set_flush_status is missing"
        )
        yield
        return

    def written_bytes(node: Any) -> int:
        total = 0
        for buffer in node.get_outputs():
            layout = buffer.node.get_layout()
            if getattr(layout, "size", None) is None or getattr(layout, "dtype", None) is None:
                continue  # (a multi-output or no-output layout: its parts are counted)
            numel = V.graph.sizevars.optimization_hint(sympy_product(layout.size), fallback=0)
            total += int(numel) * layout.dtype.itemsize
        return total

    def codegen_node(self: Any, node: Any) -> None:
        original(self, node)
        if written_bytes(node) >= _LARGE_INTERMEDIATE_BYTES:
            self._set_flush_status(True)

    with patched_for_this_thread((scheduling, "codegen_node", codegen_node)):
        yield


#: The name the generated wrapper calls ``_fresh_pages.on_huge_pages`` by.
_ON_HUGE_PAGES = "torchcx_on_huge_pages"


@contextlib.contextmanager
def _large_buffers_on_huge_pages() -> Iterator[None]:
    """Note [Large buffers on huge pages] (torchcx/_fresh_pages.py; upstream: ``ADJUSTMENTS``)."""
    adjustment = "Large buffers on huge pages"
    try:
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen
        from torch._inductor.utils import sympy_product
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.codegen.wrapper does not import")
        yield
        return
    original = vars(PythonWrapperCodegen).get("make_buffer_allocation")
    if original is None:
        cannot_apply(adjustment, "PythonWrapperCodegen.make_buffer_allocation is missing")
        yield
        return

    def large(buffer: Any) -> bool:
        layout = buffer.get_layout()
        pinned = getattr(buffer, "get_is_pinned", lambda: False)()  # (CUDA's host allocator's memory)
        if buffer.get_device().type != "cpu" or pinned or getattr(layout, "size", None) is None:
            return False
        numel = int(V.graph.sizevars.optimization_hint(sympy_product(layout.size), fallback=0))
        return numel > 0 and numel * buffer.get_dtype().itemsize >= _fresh_pages.HUGE_BUFFER_BYTES

    def make_buffer_allocation(self: Any, buffer: Any) -> str:
        line = original(self, buffer)
        if not large(buffer):
            return line
        root = self.get_root_graph() if hasattr(self, "get_root_graph") else self
        if not getattr(root, "_torchcx_huge_pages_imported", False):
            root.header.writeline(f"from torchcx._fresh_pages import on_huge_pages as {_ON_HUGE_PAGES}")
            root._torchcx_huge_pages_imported = True
        return f"{line}; {_ON_HUGE_PAGES}({buffer.get_name()})"

    with patched_for_this_thread((PythonWrapperCodegen, "make_buffer_allocation", make_buffer_allocation)):
        yield


def _accurate_expm1() -> contextlib.AbstractContextManager[None]:
    """Note [Accurate expm1]: ATen's vectorized expm1 in place of Inductor's exp(x) - 1.

    Works around pytorch/pytorch#189803 (fixed upstream by #190533, after torch 2.13).
    """
    return _vec_override("expm1", lambda original: lambda x: f"{x}.expm1()", "Accurate expm1")


def _hypot_in_double() -> contextlib.AbstractContextManager[None]:
    """Note [Hypot of floats in double] (no upstream issue found: ``ADJUSTMENTS``)."""

    def make(original: Any) -> Any:
        from torch._inductor.virtualized import V

        def hypot(a, b):  # noqa: ANN001, ANN202
            kernel = V.kernel
            if not (
                getattr(a, "dtype", None) == getattr(b, "dtype", None) == torch.float32
                and hasattr(kernel, "_get_num_vectors")
            ):
                return original(a, b)
            return _kernel_batches.hypot_in_double(a, b, kernel._get_num_vectors(torch.float32))

        return hypot

    return _vec_override("hypot", make, "Hypot of floats in double")


#: Note [Reductions fused with their producers]: the shortest innermost reduction range a producer
#: is fused into (its loop then runs a few vectors per row, enough to overlap their math), and the
#: fewest elements (below, the values it would store stay in the L2 cache anyway).
_FUSED_ROW_MIN = 32
_FUSED_ELEMENTS_MIN = 1 << 16


@contextlib.contextmanager
def _reductions_fused_with_producers() -> Iterator[None]:
    """Note [Reductions fused with their producers] (upstream: ``ADJUSTMENTS``)."""
    adjustment = "Reductions fused with their producers"
    try:
        from torch._inductor.codegen import cpp
        from torch._inductor.scheduler import FusedSchedulerNode, SchedulerNode
        from torch._inductor.utils import sympy_product
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.codegen.cpp or .scheduler does not import")
        yield
        return
    scheduling = getattr(cpp, "CppScheduling", None)
    why, fuse = (vars(scheduling).get(name) for name in ("_why_fuse_nodes", "fuse")) if scheduling else (None, None)
    compatible = getattr(getattr(cpp, "ReasonFusedNodes", None), "COMPATIBLE_REDUCTION", None)
    needed = [
        (SchedulerNode, "recompute_size_and_body"),
        (SchedulerNode, "snapshot_loop_state"),
        (SchedulerNode, "restore_loop_state"),
        (scheduling, "_get_indexing_ranges_exprs"),
    ]
    if why is None or fuse is None or compatible is None or not all(hasattr(o, a) for o, a in needed):
        cannot_apply(adjustment, "CppScheduling._why_fuse_nodes/fuse or the loop recomputation it uses is missing")
        yield
        return

    def parts(node: Any) -> list[Any]:
        return list(node.snodes) if isinstance(node, FusedSchedulerNode) else [node]

    def target(self: Any, node1: Any, node2: Any) -> tuple[Any, tuple[Any, ...]] | None:
        """(node2's ranges and index expressions, its loop ranges) where pointwise ``node1`` could
        run in reduction ``node2``'s loops but has other (merged) ones; else None."""
        _, (vars1, reduce1) = node1.group
        _, (vars2, reduce2) = node2.group
        ranges = (*vars2, *reduce2)
        if reduce1 or not reduce2 or tuple(vars1) == ranges or sympy_product(vars1) != sympy_product(ranges):
            return None
        known_geq = V.graph.sizevars.statically_known_geq
        if not (known_geq(reduce2[-1], _FUSED_ROW_MIN) and known_geq(sympy_product(ranges), _FUSED_ELEMENTS_MIN)):
            return None
        if not all(isinstance(n, SchedulerNode) and not n.is_template() for n in parts(node1) + parts(node2)):
            return None
        constraints = [self._get_indexing_ranges_exprs(n) for n in parts(node2)]
        var_ranges = constraints[0][0]
        if any(r != var_ranges for r, _ in constraints) or any(
            self._get_indexing_ranges_exprs(n)[0] != var_ranges for n in parts(node1)
        ):
            return None
        exprs = list(dict.fromkeys(e for _, es in constraints for e in es))
        return (var_ranges, exprs), ranges

    def aligned(node1: Any, found: tuple[Any, tuple[Any, ...]], keep: bool) -> bool:
        """Whether ``node1``'s loops, recomputed under ``found``'s index expressions, are the
        reduction's; kept so only where they are and ``keep`` (a query restores them)."""
        (constraints, ranges), states = found, [(n, n.snapshot_loop_state()) for n in parts(node1)]
        ok = False
        try:
            for n in parts(node1):
                n.recompute_size_and_body(extra_indexing_constraints=constraints)
            ok = all(tuple(n.group[1][0]) == ranges and not n.group[1][1] for n in parts(node1))
            return ok
        finally:
            if not (ok and keep):
                for n, state in reversed(states):
                    n.restore_loop_state(state)

    def why_fuse_nodes(self: Any, node1: Any, node2: Any) -> Any:
        reason = why(self, node1, node2)
        if reason is not None or (found := target(self, node1, node2)) is None:
            return reason
        return compatible if aligned(node1, found, keep=False) else None

    def fuse_nodes(self: Any, node1: Any, node2: Any) -> Any:
        plain = not (node1.is_foreach() or node2.is_foreach() or node1.is_template())
        if plain and why(self, node1, node2) is None and (found := target(self, node1, node2)) is not None:
            if aligned(node1, found, keep=True):
                return FusedSchedulerNode.fuse(node1, node2)
        return fuse(self, node1, node2)

    with patched_for_this_thread((scheduling, "_why_fuse_nodes", why_fuse_nodes), (scheduling, "fuse", fuse_nodes)):
        yield


def _probe_stamp(library: str) -> str | None:
    """What a successful ISA probe of ``library`` depended on (Note [The ISA probe remembered])."""
    from torch._inductor import cpu_vec_isa

    try:
        torch_lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
        lib, tlib = os.stat(library), os.stat(torch_lib)
    except OSError:
        return None
    flags = sorted(cpu_vec_isa.x86_isa_checker()) if hasattr(cpu_vec_isa, "x86_isa_checker") else []
    return "\n".join(
        [
            "torchcx ISA probe 1",
            torch.__version__,
            f"{library} {lib.st_size} {lib.st_mtime_ns}",
            f"{torch_lib} {tlib.st_size} {tlib.st_mtime_ns}",
            sys.executable,
            " ".join(flags),
        ]
    )


@contextlib.contextmanager
def _isa_probe_remembered() -> Iterator[None]:
    """Note [The ISA probe remembered] (upstream: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("The ISA probe remembered", "torch._inductor.cpu_vec_isa does not import")
        yield
        return
    original = cpu_vec_isa.VecISA.__dict__.get("_probe_load")
    if original is None or sys.platform != "linux":
        if original is None:
            cannot_apply("The ISA probe remembered", "cpu_vec_isa.VecISA._probe_load is missing")
        yield
        return

    def probe_load(self: Any, output_path: str) -> bool:
        stamp, stamp_path = _probe_stamp(output_path), Path(f"{output_path}.torchcx-probe")
        try:
            if stamp is not None and stamp_path.read_text() == stamp:
                return True
        except (OSError, UnicodeDecodeError):
            pass
        loaded = bool(original(self, output_path))
        if loaded and stamp is not None:
            with contextlib.suppress(OSError):  # a read-only cache: probe again next time
                scratch = stamp_path.with_name(f"{stamp_path.name}.{os.getpid()}")
                scratch.write_text(stamp)
                os.replace(scratch, stamp_path)
        return loaded

    with patched_for_this_thread((cpu_vec_isa.VecISA, "_probe_load", probe_load)):
        yield


@contextlib.contextmanager
def _nan_constants_not_compared() -> Iterator[None]:
    """Note [Nan constants in index propagation] (upstream: ``ADJUSTMENTS``)."""
    adjustment = "Nan constants in index propagation"
    try:
        from torch._inductor import index_propagation
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.index_propagation does not import")
        yield
        return
    ops = getattr(index_propagation, "SymPyOps", None)
    originals = {name: vars(ops).get(name) for name in ("maximum", "minimum")} if ops is not None else {}
    if not originals or not all(isinstance(f, staticmethod) for f in originals.values()):
        cannot_apply(adjustment, "index_propagation.SymPyOps.maximum or .minimum is missing")
        yield
        return

    def make(original: Any) -> Any:
        def compare(x: Any, y: Any) -> Any:
            if any(isinstance(v.expr, float) and v.expr != v.expr for v in (x, y)):  # a nan
                return NotImplemented
            return original(x, y)

        return compare

    for name, original in originals.items():
        setattr(ops, name, staticmethod(for_this_thread(make(original.__func__), original.__func__)))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(ops, name, original)


#: The Python name of torchcx's extern op in Inductor's wrapper, and what calls it instead.
_EXTERN_OP = "torch.ops.torchcx.extern.default"
_EXTERN_KERNEL = "torchcx_extern_kernel"


@contextlib.contextmanager
def _empty_tails_not_generated() -> Iterator[None]:
    """Note [Empty tails not generated] (upstream: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor import config as inductor_config
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover
        cannot_apply("Empty tails not generated", "torch._inductor.codegen.cpp does not import")
        yield
        return
    proxy, nest = getattr(cpp, "CppKernelProxy", None), getattr(cpp, "LoopNest", None)
    original_codegen = vars(proxy).get("codegen_functions") if proxy is not None else None
    original_tile = vars(nest).get("tile") if nest is not None else None
    if original_codegen is None or original_tile is None or not hasattr(inductor_config.cpp, "enable_loop_tail_vec"):
        cannot_apply(
            "Empty tails not generated",
            "CppKernelProxy.codegen_functions, LoopNest.tile or config.cpp.enable_loop_tail_vec is missing",
        )
        yield
        return
    # (the setting as it was, whether the kernel is pointwise, the tails of its tiled loops so
    # far): one entry per codegen_functions call in progress, in the one thread patched
    kernels: list[tuple[bool, bool, list[Any]]] = []

    def codegen_functions(self: Any, fn_list: Any, var_sizes_list: Any) -> Any:
        tail_vec = inductor_config.cpp.enable_loop_tail_vec
        kernels.append((tail_vec, all(not reduction for _, reduction in var_sizes_list), []))
        try:
            return original_codegen(self, fn_list, var_sizes_list)
        finally:
            kernels.pop()
            inductor_config.cpp.enable_loop_tail_vec = tail_vec

    def tile(self: Any, depth: int, factor: int) -> Any:
        loop = original_tile(self, depth, factor)
        if kernels:
            tail_vec, pointwise, tails = kernels[-1]
            tails.append(loop.size - loop.tiled_size)
            # read right after the last tiling; restored when the kernel is generated
            empty = pointwise and all(tail == 0 for tail in tails)
            inductor_config.cpp.enable_loop_tail_vec = tail_vec and not empty
        return loop

    with patched_for_this_thread((proxy, "codegen_functions", codegen_functions), (nest, "tile", tile)):
        yield


@contextlib.contextmanager
def _direct_extern_calls() -> Iterator[None]:
    """Note [Extern calls without the dispatcher] (no upstream issue found: ``ADJUSTMENTS``)."""
    adjustment = "Extern calls without the dispatcher"
    try:
        from torch._inductor.codegen import custom_extern_kernel_codegen as registry
    except ImportError:
        cannot_apply(adjustment, "torch._inductor.codegen.custom_extern_kernel_codegen does not import")
        yield
        return
    table = getattr(registry, "CUSTOM_EXTERN_KERNEL_CODEGEN", None)
    custom = getattr(registry, "CustomCodegen", None)
    if not isinstance(table, dict) or custom is None or _EXTERN_OP in table:
        cannot_apply(adjustment, "CUSTOM_EXTERN_KERNEL_CODEGEN or CustomCodegen is missing, or has the op")
        yield
        return
    table[_EXTERN_OP] = custom(python=_extern_call_line)
    try:
        yield
    finally:
        del table[_EXTERN_OP]


@contextlib.contextmanager
def _reshaped_extern_inputs_realized() -> Iterator[None]:
    """Note [Reshaped extern inputs realized in their own shape] (no upstream issue found:
    ``ADJUSTMENTS``)."""
    names = ("TensorBox", "View", "StorageBox", "Pointwise", "FlexibleLayout", "significant_strides_equal")
    modules = _ir_modules(
        "Reshaped extern inputs realized in their own shape", "ExternKernel", "require_strides", names, traces=False
    )
    if modules is None:
        yield
        return
    _, ir = modules

    def before(x: Any, order: Any = None, exact_strides: Any = None, **kwargs: Any) -> None:
        if _reshape_of_pointwise(ir, x, order, exact_strides):
            x.data.data.realize()  # (then Inductor's method passes a reinterpretation of it)

    with _classmethod_preceded(ir.ExternKernel, "require_strides", before):
        yield


@contextlib.contextmanager
def _dtype_rules_built_once() -> Iterator[None]:
    """Note [Dtype rules built once] (upstream: ``ADJUSTMENTS``)."""
    adjustment = "Dtype rules built once"
    try:
        from torch._inductor import dtype_propagation, utils
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.dtype_propagation does not import")
        yield
        return
    handler = getattr(dtype_propagation, "DtypePropagationOpsHandler", None)
    original = vars(handler).get("__init__") if handler is not None else None
    rules = getattr(utils, "op_dtype_propagation_rules", None)
    if original is None or not isinstance(rules, dict):
        cannot_apply(adjustment, "DtypePropagationOpsHandler.__init__ or utils.op_dtype_propagation_rules is missing")
        yield
        return

    def __init__(self: Any) -> None:
        if vars(self).get("_torchcx_rules") == rules:
            return
        original(self)
        self._torchcx_rules = dict(rules)  # (a copy: the registry may grow)

    with patched_for_this_thread((handler, "__init__", __init__)):
        yield


@contextlib.contextmanager
def _reshaped_cat_inputs_realized() -> Iterator[None]:
    """Note [Reshaped cat inputs realized in their own shape] (no upstream issue found:
    ``ADJUSTMENTS``)."""
    names = ("TensorBox", "BaseView", "View", "ReinterpretView", "StorageBox", "Pointwise")
    modules = _ir_modules("Reshaped cat inputs realized in their own shape", "ConcatKernel", "realize_into", names)
    if modules is None:
        yield
        return
    dependencies, ir = modules

    def before(src: Any, dst: Any) -> None:
        base = _pointwise_under_merging_reshape(ir, src)
        if base is not None and _gathers(_traced(dependencies, ir, src.make_loader(), src.get_size()).reads):
            # in its own, row-major shape (left flexible, Inductor orders it as its reads):
            # the reshape then reads it through a linear index
            base.realize()
            base.data.freeze_layout()

    with _classmethod_preceded(ir.ConcatKernel, "realize_into", before):
        yield


def _ir_modules(
    adjustment: str, owner: str, method: str, names: tuple[str, ...], traces: bool = True
) -> tuple[Any, Any] | None:
    """Inductor's ``dependencies`` and ``ir`` modules for an adjustment that precedes
    ``ir.<owner>.<method>`` (an own classmethod) and reads the IR classes ``names`` (and, where
    it ``traces`` loaders, ``extract_read_writes``); None, after the adjustment's one warning,
    where any is missing."""
    try:
        from torch._inductor import dependencies, ir
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply(adjustment, "torch._inductor.ir or torch._inductor.dependencies does not import")
        return None
    if (
        _own_classmethod(getattr(ir, owner, None), method) is None
        or not all(hasattr(ir, name) for name in names)
        or (traces and not hasattr(dependencies, "extract_read_writes"))
    ):
        cannot_apply(adjustment, f"ir.{owner}.{method}, the IR classes it reads or extract_read_writes changed")
        return None
    return dependencies, ir


def _own_classmethod(owner: Any, name: str) -> classmethod | None:
    """``owner``'s own classmethod ``name`` (in its ``__dict__``, not inherited), or None."""
    method = vars(owner).get(name) if owner is not None else None
    return method if isinstance(method, classmethod) else None


@contextlib.contextmanager
def _classmethod_preceded(owner: Any, name: str, before: Callable[..., None]) -> Iterator[None]:
    """``owner``'s own classmethod ``name`` calling ``before`` with its arguments first (the
    realizations of the reshaped-inputs adjustments), in the patch window's thread only."""
    method = _own_classmethod(owner, name)
    assert method is not None
    original = method.__func__

    def preceded(cls: Any, *args: Any, **kwargs: Any) -> Any:
        before(*args, **kwargs)
        return original(cls, *args, **kwargs)

    setattr(owner, name, classmethod(for_this_thread(preceded, original)))
    try:
        yield
    finally:
        setattr(owner, name, method)


def _pointwise_under_merging_reshape(ir: Any, x: Any) -> Any:
    """The unrealized pointwise value (its ``StorageBox``) that ``x`` reads through views of
    which one is a reshape merging dims, or None (Note [Reshaped cat inputs realized in their
    own shape])."""
    node = x.data if isinstance(x, ir.TensorBox) else x
    merges = False
    while isinstance(node, ir.BaseView) and not isinstance(node, ir.ReinterpretView):
        if type(node) is ir.View:
            kept = [s for s in node.get_size() if s != 1]
            merges = merges or len(kept) < len([s for s in node.data.get_size() if s != 1])
        node = node.data
    if merges and isinstance(node, ir.StorageBox) and type(node.data) is ir.Pointwise:
        return node
    return None


def _traced(dependencies: Any, ir: Any, loader: Callable[..., Any], size: Any) -> Any:
    """Inductor's ``ReadWrites`` of ``loader`` over ``size`` (its reads' indices, per dim its
    loop index). Tracing a loader indexes buffers whose layout is not decided yet, as
    Inductor's own read analysis does."""
    with unittest.mock.patch.object(ir.FlexibleLayout, "allow_indexing", True):
        return dependencies.extract_read_writes(loader, size)


def _gathers(reads: Any) -> bool:
    """Whether copying a value elementwise, ``reads`` its traced reads, would be a gather: what
    it reads is indexed by division or modulo, and along the copy's innermost dim some read is
    not contiguous (or is itself divided), so Inductor can neither vectorize the copy nor tile
    it. Division in an outer dim alone (a broadcast reshaped) costs little and is left as it is."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    indexed = [dep for dep in reads if isinstance(getattr(dep, "index", None), sympy.Expr)]
    if not any(dep.index.has(FloorDiv, ModularIndexing) for dep in indexed):
        return False
    for dep in indexed:
        names = getattr(dep, "var_names", ())
        if not names:
            continue
        inner, index = names[-1], dep.index
        divided = (t for t in sympy.preorder_traversal(index) if isinstance(t, (FloorDiv, ModularIndexing)))
        if any(t.has(inner) for t in divided) or index.subs(inner, 1) - index.subs(inner, 0) not in (0, 1):
            return True
    return False


def _reshape_of_pointwise(ir: Any, x: Any, order: Any, exact_strides: Any) -> bool:
    """Whether ``x`` is a reshape of an unrealized pointwise value of as many elements, asked for
    in the reshape's contiguous layout (Note [Reshaped extern inputs realized in their own shape])."""
    from torch._inductor.virtualized import V

    if not (isinstance(x, ir.TensorBox) and type(x.data) is ir.View and isinstance(x.data.data, ir.StorageBox)):
        return False
    base = x.data.data
    if type(base.data) is not ir.Pointwise:
        return False
    if not V.graph.sizevars.statically_known_equals(base.get_numel(), x.get_numel()):
        return False
    size = x.get_size()
    if exact_strides is not None:
        return ir.significant_strides_equal(exact_strides, ir.FlexibleLayout.contiguous_strides(size), size)
    return order is not None and list(order) == list(reversed(range(len(size))))


@contextlib.contextmanager
def _merged_dims_split() -> Iterator[None]:
    """Note [Merged dims split before a copy] (no upstream issue found: ``ADJUSTMENTS``)."""
    names = ("TensorBox", "StorageBox", "Pointwise", "ReinterpretView", "FixedLayout", "FlexibleLayout")
    modules = _ir_modules("Merged dims split before a copy", "ExternKernel", "require_strides", names)
    if modules is None:
        yield
        return
    dependencies, ir = modules

    def before(x: Any, order: Any = None, exact_strides: Any = None, **kwargs: Any) -> None:
        # (a stored buffer, or a reinterpretation of one, is read linearly: not traced)
        viewed = isinstance(getattr(x, "data", None), ir.BaseView) and not isinstance(x.data, ir.ReinterpretView)
        computed = isinstance(getattr(x, "data", None), ir.StorageBox) and type(x.data.data) is ir.Pointwise
        if (
            isinstance(x, ir.TensorBox)
            and (viewed or computed)
            and not _reshape_of_pointwise(ir, x, order, exact_strides)
        ):
            _copy_over_merged_dims(dependencies, ir, x, order, exact_strides)

    with _classmethod_preceded(ir.ExternKernel, "require_strides", before):
        yield


def _copy_over_merged_dims(dependencies: Any, ir: Any, x: Any, order: Any, exact_strides: Any) -> None:
    """Where copying the TensorBox ``x`` with the strides asked for would be a gather through
    merged dims, copy it in loops over those dims and make ``x`` a reinterpretation of that copy
    (Note [Merged dims split before a copy])."""
    import sympy

    size = x.get_size()
    if not all(isinstance(s, (int, sympy.Integer)) for s in size):
        return  # static shapes only
    size = [int(s) for s in size]
    if exact_strides is not None:
        strides = list(exact_strides)
    elif order is not None:
        strides = ir.FlexibleLayout.stride_ordered(size, order)
    else:
        return
    if not all(isinstance(s, (int, sympy.Integer)) and int(s) > 0 for s in strides):
        return
    traced = _traced(dependencies, ir, x.make_loader(), size)
    if not _gathers(traced.reads):
        return
    factors = _merged_factors(traced, size)
    tile = _vector_tile()
    if (
        factors is None
        or not tile
        or any(f % tile for dim_factors in factors if len(dim_factors) > 1 for f in dim_factors)
    ):
        return  # (split dims in whole tiles only: Note [Merged dims split before a copy])
    loader = x.make_loader()

    def merged(index: list[Any]) -> list[Any]:
        parts, out = iter(index), []
        for dim_factors in factors:
            value = 0
            for factor in dim_factors:
                value = value * factor + next(parts)
            out.append(value)
        return out

    split_size = [f for dim_factors in factors for f in dim_factors]
    split_strides = []
    for stride, dim_factors in zip(strides, factors):
        inner = [int(stride)]
        for factor in reversed(dim_factors[1:]):
            inner.append(inner[-1] * factor)
        split_strides.extend(reversed(inner))
    copy = ir.Pointwise.create(
        device=x.get_device(), dtype=x.get_dtype(), inner_fn=lambda index: loader(merged(index)), ranges=split_size
    )
    if not _affine_reads(dependencies, ir, copy, split_size):
        return
    storage = copy.data
    storage.realize()
    storage.data.freeze_layout_with_exact_strides(split_strides)
    layout = ir.FixedLayout(x.get_device(), x.get_dtype(), size, [int(s) for s in strides], 0)
    x.data = ir.ReinterpretView(data=storage, layout=layout)


def _vector_tile() -> int:
    """The side of Inductor's CPU tiles (its vector lanes for float32), 0 without a vector ISA."""
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        isa = pick_vec_isa()
        return int(isa.nelements()) if isa else 0
    except Exception:  # pragma: no cover - Inductor's layout changed: no split
        return 0


def _merged_factors(rw: Any, size: list[int]) -> list[list[int]] | None:
    """Per dim of a value of ``size`` whose traced reads are ``rw``, the sizes of the dims its
    reads divide it into (outermost first), from every ``FloorDiv(v, d)`` and
    ``ModularIndexing(v, d, k)`` of a loop index ``v`` in them; None where a division takes
    anything but a loop index, or a divisor does not divide its range."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    dims = {var: i for i, var in enumerate(rw.range_vars) if isinstance(var, sympy.Symbol)}
    cuts: dict[int, set[int]] = {i: set() for i in dims.values()}
    for dep in rw.reads:
        index = getattr(dep, "index", None)
        if not isinstance(index, sympy.Expr):
            continue
        for term in sympy.preorder_traversal(index):
            if not isinstance(term, (FloorDiv, ModularIndexing)):
                continue
            base, *rest = term.args
            if base not in dims or not all(isinstance(a, sympy.Integer) for a in rest):
                return None
            divisor = int(rest[0])
            cuts[dims[base]].update(
                [divisor, divisor * int(rest[1])] if isinstance(term, ModularIndexing) else [divisor]
            )
    factors: list[list[int]] = []
    for i, n in enumerate(size):
        bounds = sorted(b for b in cuts.get(i, ()) if 1 < b < n)
        if any(n % b for b in bounds) or any(b % a for a, b in zip(bounds, bounds[1:])):
            return None
        edges = [1, *bounds, n]
        factors.append([edges[j + 1] // edges[j] for j in reversed(range(len(edges) - 1))])
    return factors if any(len(f) > 1 for f in factors) else None


def _affine_reads(dependencies: Any, ir: Any, copy: Any, size: list[int]) -> bool:
    """Whether every read of ``copy`` (a pointwise over the split dims) is free of division and
    modulo once simplified with its loops' ranges."""
    import sympy
    from torch._inductor.virtualized import V
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    rw = _traced(dependencies, ir, copy.make_loader(), size)
    for dep in rw.reads:
        index = getattr(dep, "index", None)
        if isinstance(index, sympy.Expr):
            simplified = V.graph.sizevars.simplify_with_ranges(index, rw.var_ranges)
            if simplified.has(FloorDiv, ModularIndexing):
                return False
    return True


def _extern_call_line(node: Any, writeline: Any) -> None:
    """``bufN = torchcx_extern_kernel(op, spec, tensors, ints)``, the import once per module."""
    from torch._inductor.virtualized import V

    wrapper = V.graph.wrapper_code
    if not getattr(wrapper, "_torchcx_extern_imported", False):
        wrapper.header.writeline(f"from torchcx.ops.extern import extern_kernel as {_EXTERN_KERNEL}")
        wrapper._torchcx_extern_imported = True
    args = [*node.codegen_args(), *node.codegen_kwargs()]
    writeline(f"{node.get_name()} = {_EXTERN_KERNEL}({', '.join(args)})")


@contextlib.contextmanager
def _strides_of_linear_indices() -> Iterator[None]:
    """Note [Strides of linear indices] (no upstream issue found: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Strides of linear indices", "torch._inductor.codegen.cpp does not import")
        yield
        return
    original = getattr(cpp, "stride_at_vec_range", None)
    if original is None:
        cannot_apply("Strides of linear indices", "torch._inductor.codegen.cpp.stride_at_vec_range is missing")
        yield
        return

    def stride_at_vec_range(index: Any, var: Any, *args: Any, **kwargs: Any) -> Any:
        stride = linear_coefficient(index, var)
        return original(index, var, *args, **kwargs) if stride is None else stride

    with patched_for_this_thread((cpp, "stride_at_vec_range", stride_at_vec_range)):
        yield


@contextlib.contextmanager
def _full_vector_loads() -> Iterator[None]:
    """Note [Full vector loads] (no upstream issue found: ``ADJUSTMENTS``)."""
    try:
        from torch._inductor.codegen import cpp
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Full vector loads", "torch._inductor.codegen.cpp does not import")
        yield
        return
    kernel = getattr(cpp, "CppVecKernel", None)
    original = getattr(kernel, "_get_vec_load_line", None)
    if original is None or not hasattr(kernel, "_get_vec_type"):
        cannot_apply("Full vector loads", "CppVecKernel._get_vec_load_line or _get_vec_type is missing")
        yield
        return

    def _get_vec_load_line(self: Any, var: str, index: Any, dtype: torch.dtype, load_mask: Any = None) -> str:
        if load_mask is None and dtype != torch.bool and fills_its_vectors(self, dtype):
            from torch._inductor.codegen.cpp_utils import cexpr_index

            loadbuf = f"{var} + {cexpr_index(index)}" if index != 0 else var
            return f"{self._get_vec_type(dtype)}::loadu({loadbuf})"
        return original(self, var, index, dtype, load_mask)

    with patched_for_this_thread((kernel, "_get_vec_load_line", _get_vec_load_line)):
        yield


def fills_its_vectors(kernel: Any, dtype: torch.dtype) -> bool:
    """True where a tile of ``dtype`` in ``kernel``'s main loop (not its tail) is whole vectors."""
    if getattr(kernel, "tail_size", None) or not isinstance(kernel.tiling_factor, int):
        return False
    bits = kernel.tiling_factor * dtype.itemsize * 8
    return bits % kernel.vec_isa.bit_width() == 0


def linear_coefficient(index: Any, var: Any) -> Any:
    """The coefficient of ``var`` in ``index`` (a SymPy Integer, zero where ``var`` is absent) if
    ``index`` is an integer linear form in symbols, else None (Note [Strides of linear indices])."""
    import sympy

    coefficient = sympy.S.Zero
    for term in index.args if index.is_Add else (index,):
        if term.is_Integer:
            continue
        if term.is_Symbol:
            factor, symbol = sympy.S.One, term
        elif term.is_Mul and len(term.args) == 2 and term.args[0].is_Integer and term.args[1].is_Symbol:
            factor, symbol = term.args
        else:
            return None
        if symbol == var:
            coefficient = factor
    return coefficient


def _vectorized_bitcasts() -> contextlib.AbstractContextManager[None]:
    """Note [Vectorized bitcasts] (no upstream issue found: ``ADJUSTMENTS``)."""

    def make(original: Any) -> Any:
        from torch._inductor.codegen import cpp
        from torch._inductor.virtualized import V

        def to_dtype_bitcast(x, dtype, src_dtype):  # noqa: ANN001, ANN202
            kernel = V.kernel
            if (
                dtype in _FOUR_BYTE
                and src_dtype in _FOUR_BYTE
                and dtype != src_dtype
                and hasattr(kernel, "_get_num_vectors")
            ):
                to, n = cpp.DTYPE_TO_CPP[dtype], kernel._get_num_vectors(torch.float32)
                if n == 1:
                    return f"at::vec::cast<{to}>({x})"
                # A tile of n vectors (16-bit elements beside these): one cast per vector.
                casts = " ".join(f"r[{k}] = at::vec::cast<{to}>({x}[{k}]);" for k in range(n))
                return f"[&] {{ at::vec::VectorizedN<{to}, {n}> r; {casts} return r; }}()"
            return original(x, dtype, src_dtype)

        return to_dtype_bitcast

    return _vec_override("to_dtype_bitcast", make, "Vectorized bitcasts")


@contextlib.contextmanager
def _pointwise_bitcasts() -> Iterator[None]:
    """Note [Bitcasts of computed values]: works around pytorch/pytorch#189584 (not in 2.13)."""
    try:
        from torch._inductor import ir, lowering
        from torch._inductor.virtualized import ops
    except ImportError:  # pragma: no cover
        cannot_apply("Bitcasts of computed values", "torch._inductor.ir or .lowering does not import")
        yield
        return
    key = torch.ops.aten.view.dtype
    original = lowering.lowerings.get(key)
    if original is None or not hasattr(ir, "is_storage_and_layout"):
        cannot_apply(
            "Bitcasts of computed values", "no lowering of aten.view.dtype, or ir.is_storage_and_layout is missing"
        )
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

    lowering.lowerings[key] = for_this_thread(view_dtype, original)
    try:
        yield
    finally:
        lowering.lowerings[key] = original


#: Switches Note [Shared subexpressions] off when False (benchmarks and tests only).
_SHARE_SUBEXPRESSIONS: bool = True

_MEMO = "_torchcx_loader_memo"  # the attribute each ops handler keeps its memo in


@contextlib.contextmanager
def _shared_subexpressions() -> Iterator[None]:
    """Note [Shared subexpressions]: works around pytorch/pytorch#148073."""
    if not _SHARE_SUBEXPRESSIONS:  # (switched off by a benchmark or test)
        yield
        return
    try:
        from torch._inductor import ir
        from torch._inductor.virtualized import V
    except ImportError:  # pragma: no cover - Inductor's layout changed
        cannot_apply("Shared subexpressions", "torch._inductor.ir does not import")
        yield
        return
    original = ir.Pointwise.__dict__.get("make_loader")
    if original is None or not hasattr(V, "get_ops_handler"):
        cannot_apply("Shared subexpressions", "ir.Pointwise.make_loader or V.get_ops_handler is missing")
        yield
        return

    def make_loader(self: Any) -> Any:
        loader = original(self)
        if loader is not self.inner_fn:
            return loader  # (a zero-element no-op)

        def load(index: Any) -> Any:
            # One memo per ops handler: a handler is one evaluation (a loop body's trace,
            # an op count, a read/write analysis); a masked sub-block gets its own.
            memo = getattr(V.get_ops_handler(), "__dict__", None)
            key = (loader, tuple(index))
            try:
                hash(key)
            except TypeError:  # an index that does not hash
                memo = None
            if memo is None:  # (or a handler that keeps no attributes)
                return loader(index)
            values = memo.setdefault(_MEMO, {})
            if key not in values:
                values[key] = loader(index)
            return values[key]

        return load

    with patched_for_this_thread((ir.Pointwise, "make_loader", make_loader)):
        yield
