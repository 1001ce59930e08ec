"""Rewrites of the graphs torchcx compiles: Dynamo's graph as it arrives (complex space,
before AOTAutograd), and the real graph torchcx hands to Inductor (after lowering).

Note [Dynamo's addcdiv]
-----------------------
Dynamo rewrites ``torch.addcdiv(x, t1, t2, value=v)`` into ``torch.add(x,
torch.mul(torch.div(t1, t2), v))`` while it traces (``handle_addcdiv`` in
torch/_dynamo/variables/torch.py: a graph break on ``value`` avoided). Eager's
kernel computes ``x + v * t1 / t2``: it multiplies first. The two orders
round differently (by an ulp for finite values), and where ``t1 / t2``
overflows (a subnormal ``t2``) the quotient is an infinity, and ``inf * (v + 0i)`` in complex arithmetic is
nan, where eager's ``(v * t1) / t2`` is the infinity (stock torch.compile
differs from eager the same way). The three nodes Dynamo made carry the
source line of the call in ``stack_trace``: a ``div``, ``mul``, ``add`` chain
whose nodes all come from one line that calls ``addcdiv`` is put back as the
``torch.addcdiv`` the user wrote, which AOTAutograd then decomposes in eager's
order (``torch/_refs``). A chain the user wrote as three ops keeps its own
rounding, unless it is written on the same source line as an ``addcdiv``
call; code whose source Dynamo cannot read (no stack trace) keeps Dynamo's
rewrite, and stock torch.compile's result.

Note [Conversions of packed pairs]
----------------------------------
A complex result that leaves the complex world as real pairs
(``view_as_real``, or a complex output in a graph whose real outputs are
then converted) is packed by concatenating its parts along a trailing axis
of 2, and Inductor's CPU backend always lowers ``cat`` to a ``ConcatKernel``:
each part is computed straight into its half of one buffer. A conversion
that follows (``view_as_real(q * freqs).flatten(3).type_as(xq)`` in the
LLaMA rotary embedding with bfloat16 activations) then reads that buffer in
a kernel of its own: a float32 buffer written and read back for nothing (the
rotary embedding wrote 12 bytes per element where 2 are needed).

A dtype conversion is elementwise, so it commutes with ``cat`` and with the
views between the two: ``convert(view(cat([a, b])))`` is
``view(cat([convert(a), convert(b)]))``, bit for bit. Moving it onto the
parts lets Inductor fuse it into the kernels that compute them, which then
write the converted pairs directly (Note [Interleaved access] vectorizes
those stride-2 stores). Only a chain whose every node has that one user is
rewritten: another reader of the float buffer would otherwise need it too.

Note [Masks are logical]
------------------------
torchcx's special-value blends combine boolean masks with ``&`` and ``|``
(``bitwise_and``/``bitwise_or`` of bool tensors). Inductor's value-range
analysis gives a bool mask it cannot bound (``isinf``, ``isnan``: no range
rule) an unknown float range, and ``bitwise_and`` of a bool and an unknown
is an integer range that ``where`` then rejects: compiling failed with
"not bool like VR[0, int_oo]" wherever Inductor could bound the other
operand (``torch.sin(x * 0)``, a sum over an empty dim; stock
torch.compile fails on ``where(isinf(y) & (y == 0), ...)`` the same way).
``logical_and``/``logical_or``/``logical_xor`` are the same functions on
bools and Inductor's ranges handle them: bitwise ops of two bool tensors are
rewritten to those.

Note [Moves on words]
---------------------
The lowering splits a complex64 word into its parts and joins parts into words
(Note [Words as pairs]), and a complex op that only moves elements (a pad, a
transpose written by ``clone``, a slice written into zeros, a ``cat``) is applied
to each part (``make_partwise``). When such moves sit between a split and a join,
the kernel Inductor generates reads words, splits them, moves the halves and joins
them again: the FNO step's inverse FFT pads its 16 kept columns to 33 with the
transpose MKL's layouts need, and that kernel took 0.55-0.80 ms of the step
against 0.36-0.52 ms for the same pad of the words (profiled, one thread). On the
real graph, a join whose two
halves are the same moves (same op, same arguments) of the two halves of the same
words is rewritten to those moves of the words: the same bits land in the same
places. The fill values of a pad or a ``full`` become the words of the pair of
fill values (packed as the join would; a nan fill is left to the halves, its bits
being the C++ compiler's). Only chains whose nodes have no reader
outside the chain are rewritten, and only where the words come out strided as the
join did; complex32 words (int32 with float16 halves) likewise. Note [Packed
form] does the same for views and clones while the lowering runs; this catches
every move, and those the backward's decompositions make.

Note [Aliases dropped before Inductor]
--------------------------------------
Functionalization writes every ``view(dtype)`` the lowering makes (a complex64 word
split into its float halves: Note [Words as pairs]) as that view followed by an
``alias``. Inductor's post-grad passes drop the aliases (``remove_noop_ops``), but
they take their snapshot of the graph first (``FakeTensorUpdater``): the readers of
every alias then count as changed, their fake values are computed again, each a new
storage, so each of *their* readers counts as changed too, down the whole graph.
``acosh``'s forward and backward re-ran fake propagation on 380 of its real graph's
438 nodes (0.13 s of a 2.6 s compile; ``pow``: 497 of 562 nodes, 0.17 s). The real
graph is handed to Inductor with those aliases already gone: the same rule
(an alias that is a graph output of an input or of another output stays), and an
alias shares its operand's storage, so its readers' fake values stay right as they are.

Note [Scalar factors after transforms]
--------------------------------------
A training step's backward starts from the loss's gradient, a 0-d tensor, and
the first thing it does with it is scale the saved error (``mse_loss``'s
backward: ``grad * saved``), a pass over the whole array; in the FNO step the
product then goes straight into an FFT, an extern kernel, so nothing fuses the
pass away (0.34 ms of a 9 ms step). An FFT is linear: ``fft(x * s) = fft(x) * s``
for a real scalar ``s`` (complex-linear c2c, real-linear r2c and c2r). On the
complex graph, before the lowering, a transform whose input is a product of a
tensor with a real 0-d tensor or a real number, read by nothing else and of the
tensor's dtype and shape, takes the tensor, and its result is scaled: the
scaling fuses into the kernel that reads the transform's result. With ``s = 1``,
the gradient of ``loss.backward()``, the bits are the same; otherwise the
product is rounded after the sums instead of before them, which is within the
transform's own error bound (each output's error is already a few ulps of the
sum of the magnitudes).

Note [Exponentials of imaginary numbers]
----------------------------------------
``torch.exp(1j * theta)`` is how phases are written (the NLS solver's nonlinear step,
the suite's elementwise chain). Eager promotes the real ``theta`` to complex and
multiplies, so the real part is ``0 * theta - 1 * 0``: +-0 where ``theta`` is finite,
nan where it is not. The real graph then computes ``exp`` of it, with its overflow
reduction and the C99 blends that test it for +-inf, per element: on the 2-core Xeon
Sleef's ``exp`` alone was a fifth of ``exp(1j * abs(x))``'s kernel (perf), for a value
that is 1. On the real graph, after the lowering, a value is marked *zero or nan* when
it is a product with a constant zero, a product with, a quotient of, a negation or
absolute value of, a sum or difference of such values (and constant zeros), or a
``where`` whose branches are (only the branch a constant condition picks counts: the
values computed from constants alone are evaluated, so the real part survives Smith's
division by a real number, ``/ 2``); a comparison of it that is false for +-0 and nan
(``> c`` for c >= 0, ``== c`` for c != 0, ...) is *false*, and so is an ``&`` with a
false mask; ``where`` of a false mask is its other operand (same shape and dtype only).
Then ``exp(v)`` and ``cos(v)`` of such a ``v`` become ``v + 1``, and ``sin(v)``,
``expm1(v)`` become ``v``: the same values, nan included (exp(+-0) = 1 = +-0 + 1,
exp(nan) = nan = nan + 1). A ``where`` of a false mask whose other operand is one
number (exp's overflow scale: ``where(x > 88, e^88, 1)``, with x zero or nan) is that
number, and a product by a value that is the number 1 is the other factor (x * 1 is x,
nan and -0 included): the compare, the blend and two products per element that
``exp(1j * abs(x))`` kept. A few percent: three interleaved runs (one thread,
2026-12-07; ``python benchmarks/phase_exponentials.py``'s "ones kept" mode and an A/B
like it) read the suite's elementwise chain 1.045x, 0.975x and 1.022x faster by median
(1.03-1.07x by fastest sample), the NLS solver 1.051x, 1.012x and 1.000x. Nothing else changes.

That left ``(v + 1) * cos(w)`` and ``(v + 1) * sin(w)``, with ``v = 0 * t - 0`` and
``w = t + 0``: the product is ``cos(w)`` itself. v is nan only where t is not finite: a
zero-or-nan value made as ``0 * t`` has t as its *witness*, and keeps its witnesses through a
product or quotient by a finite number (not 0, for a quotient), a negation or absolute value,
and a sum or difference of such values (the witnesses of both, the real part of ``1j * t *
dt``). Where every witness is not finite, neither is w (a sum, difference or product with a
value that is not finite is inf or nan, whatever the other operand), so cos(w) and sin(w) are
nan where v is; elsewhere v + 1 is 1. Both products are dropped, and with them the blend
``where(w == 0, w, sin(w))`` that kept the sign of a zero through the product (sin(+-0) is
+-0, C99). In the chain's kernel: 5 of its roughly 100 vector instructions per 16 elements,
1.02-1.04x (its kernel alone in a C++ loop, one thread, a 2-core Intel Xeon VM with AVX-512,
2026-12-07); the whole chain 1.005x and 1.037x in two runs, the NLS solver 0.99-1.00x
(``python benchmarks/phase_exponentials.py``'s "phase products kept" mode).

Note [Small contractions in place]
----------------------------------
A quantum gate applied with ``einsum`` (``torch.einsum("ab,cbd->cad", gate, state)``,
a 2x2 or 2x2x2x2 gate on one or two axes of a ``(2,) * n`` state) reaches
AOTAutograd as an einsum, which decomposes it into a permuted copy of the
state, a ``bmm`` with an inner dimension of 2 or 4 and a permutation back:
three passes over the state for a product that reads each amplitude once, and
a GEMM that at that inner dimension is all memory traffic. An einsum of two
complex operands of which one is small (at most 16 elements, known sizes),
with no batch letters, no diagonals and no letter summed out of one operand
alone, is the sum over the small operand's entries of an entry times a slice
of the large one: ``out[f, ...] = sum_k small[f, k] * big[..., k, ...]``. It is
computed in that form, in complex space, before AOTAutograd: the slices are
views (``select``), and the sum has one product per summed index ``k``, of the
small operand's column ``small[:, k]``, viewed with size 1 on the large
operand's free axes, and the slice ``big[..., k, ...]``, viewed with size 1
where the output has the small operand's free axes: each product computes
every output slice by broadcasting (``_broadcast_products``). torchcx lowers
the products to real pointwise ops that Inductor computes in one pass that
writes the output in place of the permutes and the GEMM. The rounding is that
of the sum of products (as NumPy's einsum and eager's ``einsum`` of non-finite
values: docs/limitations.md, "Special values follow NumPy"); every other einsum
keeps eager's decomposition. The replacement is ``einsum_small_in_place``, a
drop-in ``torch.einsum`` that checks its operands again when it is traced. Its
cost is compile time: in the stacked form below, each
gate's products become up to 16 complex (about 100 real) pointwise nodes, and
a 9-gate circuit compiled 4-5x slower cold than in the bmm form, for run
times within 10% of it; the 30-gate benchmark ran 2.6x faster (both measured
in docs/performance.md, "Quantum gates in the state's layout"). Two choices keep
that cost down. The large operand's free axes that the output keeps together, in
order, are viewed as one axis first (``_merge_free_runs``): a gate on one qubit of
an 18-qubit state reads a 3-dim view, and its products are 2- or 3-dim where they
had 16 or 17 dims, which Inductor's loop analysis (about the square of a loop's
dims per node) walked for each; and each entry of the small operand is one select
of it flattened, not one per axis. The 30-gate circuit's cold compile went from
50 s to 34-38 s (same machine and hour, two runs each).

The broadcast form replaced (2026-12-06) one where each output slice was its own
sum of products and the slices were stacked: 4 products per term of a two-qubit
gate where the broadcast has one, so its real graph had 3374 nodes against 1716,
and every loop body 2-4 times the ops. The stacked form wrote all output slices
from one read of the slices, where the broadcast's loops read them once per
output slice (from L1 where a row of them fits; from L2 or L3 for gates on the
first qubits), and the circuit ran 3-11% slower in the broadcast form (three
runs); it compiles in half the time (benchmarks/small_contractions.py, docs/performance.md). Where
the small operand's free axis is the output's last (a gate on the last qubit),
the broadcast's innermost loop would be that axis of 2 or 4: the stacked form is
kept there, its slices read and written as pairs (Note [Interleaved access]).
The merged output is unflattened with ``as_strided`` rather than ``unflatten``:
Inductor takes a strided view of the stored products, where a reshape of
products not yet stored is an index computation that each reader composes with
its own view and SymPy simplifies (the 30 gates' loop bodies took 22 s of
``simplify_with_ranges``).

Gradients: differentiated as products of slices, each slice's gradient was a zero-filled
tensor of the large operand's size with the slice's gradient scattered in
(``select_scatter``), one per summed index. A 30-gate circuit's training step compiled in
57-70 s (its backward alone 38 s; the default backend 25 s). A contraction whose
operand needs a gradient is now ``_SmallContraction``, whose gradients are contractions
of the output's gradient with the other operand's conjugate. The large operand's is a
small contraction again (products of slices), and the small operand's, which sums over
all of the large operand's free axes, is eager's ``einsum`` (a GEMM). The step compiles
in 42-47 s, and runs about 4% slower than with the scattered slices (40.6-41.6 ms against
38.2-40.7 ms; 1.5x eager). A sum of products per entry of the small operand instead
ran 9% faster than the scattered slices but compiled in 74-79 s.

One case is left to eager's decomposition: a large operand that is (a view of) a graph
input, read in blocks of 2 to 15 contiguous elements per summed index (a gate on one of
the last four qubits but the last: the stride of its innermost summed axis). The kernel
then reads the input's complex64 words a few at a time, and a single gate on qubit 14,
15 or 16 of 18 took 7-60 ms against eager's 0.8-1.4 ms (the bmm form: 1.0-1.9 ms). A
stride of 1 (the last qubit: pairs, Note [Interleaved access]) or of 16 and more (whole
vectors) is fast, and so is any stride when the operand is a value the graph computed
(planar parts): such a gate inside a circuit runs at the speed of the others.

Note [Truncated spectra]
------------------------
A Fourier neural operator's spectral convolution transforms its input with
``rfft2``, keeps a few low modes (``x_ft[..., :k, :k]`` and ``x_ft[..., -k:, :k]``
in the reference FNO; a centered block after ``fftshift`` in neuraloperator),
mixes channels there, writes the result into an otherwise zero spectrum and
transforms back with ``irfft2``. The FFTs compute every mode, and the
backward pass runs two more: at a 64x64 grid with 16 modes, 32 of 64 rows
and 16 of 33 columns are used. On Dynamo's graph (before AOTAutograd, so
that the backward is derived from the rewritten forward), such a pair is
recognized and computed as DFT products over the kept modes only
(``truncated_rfft2``: a real GEMM against the kept columns' cosines and
sines, then one against the kept rows'; ``truncated_irfft2`` the same in
reverse, with c2r's weights), whose gradients are DFT products of the same
size. The rewrite applies to a 2-D real FFT over the last two dims with
known sizes whose spectrum (or its ``fftshift`` along dim -2) is read only
through contiguous slices of the last two dims, and to an inverse of the same
kind whose input is a ``torch.zeros`` written only through such slices (not
overlapping) and read by nothing else; each axis at least ``_MIN_LENGTH``
long, at most ``_MAX_KEPT_FRACTION`` of its spectrum kept and few enough
modes kept for the products to beat the FFT (``_truncation``, measured
with benchmarks/truncated_spectra.py). A product of length n sums n
terms where an FFT sums log2(n) levels; both are backward stable, and the
results agree with the FFT's to a few eps times sqrt(n) of the data's norm
(tests/test_truncated_spectra.py). Where the products would not win (a
larger fraction of the modes kept) but the kept columns are at most half of
the half spectrum, the transforms are instead done one axis at a time with
the columns pruned between them (``pruned_rfft2``: the real FFT along the
last dim, cut to the kept columns, then the complex FFT along dim -2 of those
columns alone; ``pruned_irfft2`` the reverse, with the zeros built only as
wide as the kept columns, and the kept columns padded to the half spectrum by a ``cat``
of them and the zero columns: Inductor generates irfft's own padding of a value laid
out column-major for the column FFT as a masked gather, element by element (0.82 ms
of the suite's 8.8 ms FNO step), and the ``cat`` as a tiled transpose and a fill
(0.38 ms; one thread, 2026-12-07: the step 1.031x faster, median of the per-round
ratios of ``python benchmarks/fno_step.py --rounds 21``, 1.043x and 1.022x in two
other interleaved runs of 41 rounds). That is what ``rfft2``/``irfft2`` compute, stage
by stage, less the column FFTs of modes that are dropped or zero, so the
results agree with the vendor's 2-D transform to rounding (the vendor may
order its sums differently). ``config.truncated_spectra = False`` keeps the
full FFTs.

Note [Gradients in their inputs' layout]
----------------------------------------
A backward graph returns one gradient per input of its forward, each strided as
AOTAutograd traced it, which is how eager's derivative formulas leave it: the
gradient of ``einsum('bixy,ioxy->boxy', x, w)`` with respect to ``w`` is a
permuted view of a batched product over the modes, strided ``(x, y, i, o)`` for a
weight stored ``(i, o, x, y)``. Autograd then gives a parameter a gradient strided
as the parameter is (``AccumulateGrad``'s layout contract): it copied each FNO
weight's gradient, 2 MiB, into a new tensor on every step, after the graph had
written it once in the other order. The backward graph now returns each complex
gradient strided as its forward input was, where that input is dense, non-
overlapping and strided otherwise, and the gradient is computed in the graph (not a
view of one of its inputs): a permute to the input's order, a contiguous ``clone``
and the inverse permute, which Inductor fuses into the kernel that computes the
gradient. The values are the same; the gradient is written once, in the order the
parameter keeps it. A gradient that flows on to another op instead (an input that
is not a leaf) arrives strided as that input is, as a gradient from eager often is.
The suite's FNO step (``backward()``, one thread): 1.39-1.46x eager before, 1.82x with
this and Note [64-bit transposes in registers] (_kernel_batches.py), which makes the
transposed writes cheap. Where the gradients are taken with ``torch.autograd.grad``
no copy is saved (neuraloperator's FNO 1.29x -> 1.28x, TFNO 1.23x -> 1.18x, one run).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
import string
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, fx
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental.symbolic_shapes import statically_known_true, sym_eq
from torch.utils import _pytree as pytree

aten, prims = torch.ops.aten, torch.ops.prims

_VIEWS = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)


def _conversion_dtype(node: fx.Node) -> torch.dtype | None:
    """The dtype ``node`` converts to, if it is a plain dtype conversion."""
    if node.op != "call_function":
        return None
    if node.target is prims.convert_element_type.default:
        return node.args[1]
    if node.target is aten._to_copy.default and not node.args[1:] and set(node.kwargs) == {"dtype"}:
        return node.kwargs["dtype"]
    return None


def _fake(target: Any, args: tuple[Any, ...]) -> Any:
    """``target`` applied to the ``val`` metadata of ``args`` (fake tensors)."""
    values = fx.node.map_arg(args, lambda n: n.meta["val"])
    return target(*values)


def push_conversions_into_cat(gm: fx.GraphModule) -> int:
    """Note [Conversions of packed pairs]; returns how many conversions moved."""
    moved = 0
    for node in list(gm.graph.nodes):
        dtype = _conversion_dtype(node)
        if dtype is None:
            continue
        views, source = [], node.args[0]
        while isinstance(source, fx.Node) and source.target in _VIEWS and len(source.users) == 1:
            views.append(source)
            source = source.args[0]
        if not (isinstance(source, fx.Node) and source.target is aten.cat.default and len(source.users) == 1):
            continue
        parts, *rest = source.args
        if not all(isinstance(p, fx.Node) and "val" in p.meta for p in parts):
            continue
        with gm.graph.inserting_before(source):
            converted = []
            for part in parts:
                c = gm.graph.call_function(prims.convert_element_type.default, (part, dtype))
                c.meta["val"] = _fake(prims.convert_element_type.default, (part, dtype))
                converted.append(c)
            value = gm.graph.call_function(aten.cat.default, (converted, *rest))
            value.meta["val"] = _fake(aten.cat.default, (converted, *rest))
        with gm.graph.inserting_before(node):
            for view in reversed(views):
                args = (value, *view.args[1:])
                value = gm.graph.call_function(view.target, args, dict(view.kwargs))
                value.meta["val"] = _fake(view.target, args)
        node.replace_all_uses_with(value)
        for dead in (node, *views, source):
            gm.graph.erase_node(dead)
        moved += 1
    return _recompiled(gm, moved)


def aliases_dropped(gm: fx.GraphModule) -> int:
    """Note [Aliases dropped before Inductor]; returns how many aliases were dropped."""
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outputs = set(pytree.tree_leaves(output.args))
    dropped = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.alias.default:
            continue
        source = node.args[0]
        if not isinstance(source, fx.Node):
            continue
        # (an output aliasing an input or another output is what the graph promises)
        if node in outputs and (source.op == "placeholder" or source in outputs):
            continue
        node.replace_all_uses_with(source)
        gm.graph.erase_node(node)
        dropped += 1
    return _recompiled(gm, dropped)


def _recompiled(gm: fx.GraphModule, changes: int) -> int:
    """``gm`` checked and its code regenerated if a pass changed ``changes`` places in it."""
    if changes:
        gm.graph.lint()
        gm.recompile()
    return changes


def _sole_user(node: fx.Node) -> fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def restore_addcdiv(gm: fx.GraphModule) -> int:
    """Note [Dynamo's addcdiv]; returns how many chains became ``torch.addcdiv`` again."""
    restored = 0
    for div in list(gm.graph.nodes):
        if div.op != "call_function" or div.target is not torch.div or len(div.args) != 2 or div.kwargs:
            continue
        mul = _sole_user(div)
        if mul is None or mul.target is not torch.mul or mul.args[:1] != (div,) or len(mul.args) != 2 or mul.kwargs:
            continue
        add = _sole_user(mul)
        if add is None or add.target is not torch.add or len(add.args) != 2 or add.args[1] is not mul or add.kwargs:
            continue
        trace = div.meta.get("stack_trace")
        if not trace or "addcdiv(" not in trace or any(n.meta.get("stack_trace") != trace for n in (mul, add)):
            continue
        t1, t2 = div.args
        with gm.graph.inserting_before(add):
            fused = gm.graph.call_function(torch.addcdiv, (add.args[0], t1, t2), {"value": mul.args[1]})
        fused.meta = dict(add.meta)
        add.replace_all_uses_with(fused)
        for dead in (add, mul, div):
            gm.graph.erase_node(dead)
        restored += 1
    return _recompiled(gm, restored)


_LOGICAL = {
    aten.bitwise_and.Tensor: aten.logical_and.default,
    aten.bitwise_or.Tensor: aten.logical_or.default,
    aten.bitwise_xor.Tensor: aten.logical_xor.default,
}


def _is_bool(x: Any) -> bool:
    return isinstance(x, fx.Node) and getattr(x.meta.get("val"), "dtype", None) is torch.bool


def logical_masks(gm: fx.GraphModule) -> int:
    """Note [Masks are logical]; returns how many ops were rewritten."""
    rewritten = 0
    for node in gm.graph.nodes:
        logical = _LOGICAL.get(node.target) if node.op == "call_function" else None
        if logical is not None and not node.kwargs and len(node.args) == 2 and all(map(_is_bool, node.args)):
            node.target = logical
            rewritten += 1
    return _recompiled(gm, rewritten)


# -- Note [Moves on words] ----------------------------------------------------------------------

#: Ops that move elements without reading their values: their tensor arguments named here are
#: values (both halves, or words); any other tensor argument (an index) is shared by the halves.
_MOVES: dict[Any, tuple[str, ...]] = {
    **{
        op: ("self",)
        for op in (
            aten.alias.default,
            aten.view.default,
            aten._unsafe_view.default,
            aten.reshape.default,
            aten.permute.default,
            aten.transpose.int,
            aten.expand.default,
            aten.slice.Tensor,
            aten.select.int,
            aten.unsqueeze.default,
            aten.squeeze.dim,
            aten.squeeze.dims,
            aten.squeeze.default,
            aten.clone.default,
            aten.constant_pad_nd.default,
            aten.flip.default,
            aten.roll.default,
            aten.repeat.default,
            aten.index.Tensor,
        )
    },
    prims.rev.default: ("a",),  # (flip's decomposition)
    aten.cat.default: ("tensors",),
    aten.stack.default: ("tensors",),
    aten.copy.default: ("self", "src"),
    aten.slice_scatter.default: ("self", "src"),
    aten.select_scatter.default: ("self", "src"),
    aten.full.default: (),
    aten.empty_strided.default: (),
    aten.empty.memory_format: (),
}
#: (word dtype, half-word dtype, part dtype, bits in a half word): a row of ``_layout._WORDS``.
_WordKind = tuple[torch.dtype, torch.dtype, torch.dtype, int]
#: The Scalar arguments that are element values (packed into a word as the join would).
_FILLS = {aten.constant_pad_nd.default: "value", aten.full.default: "fill_value"}


def _skip_aliases(node: Any) -> Any:
    while isinstance(node, fx.Node) and node.target is aten.alias.default:
        node = node.args[0]
    return node


def _bitcast_of(node: Any, dtype: torch.dtype) -> Any:
    """x where ``node`` is ``x.view(dtype)`` (through aliases), else None."""
    node = _skip_aliases(node)
    if isinstance(node, fx.Node) and node.target is aten.view.dtype and node.args[1] == dtype:
        return node.args[0]
    return None


def _converted(node: Any, dtype: torch.dtype) -> Any:
    """x where ``node`` is ``convert_element_type(x, dtype)``, else None."""
    if isinstance(node, fx.Node) and node.target is prims.convert_element_type.default and node.args[1] == dtype:
        return node.args[0]
    return None


def _scalar_op(node: Any, target: Any) -> tuple[Any, Any]:
    if isinstance(node, fx.Node) and node.target is target and len(node.args) == 2 and not node.kwargs:
        return node.args[0], node.args[1]
    return None, None


def _split_words(low: Any, high: Any, words: _WordKind) -> Any:
    """w where ``low`` and ``high`` are the halves of the same words w, as ``_layout.unpack``
    makes them, else None."""
    word, half, part, bits = words
    w = _converted(_bitcast_of(low, part), half)
    shifted, by = _scalar_op(_converted(_bitcast_of(high, part), half), aten.__rshift__.Scalar)
    if w is None or w is not shifted or by != bits or getattr(w.meta.get("val"), "dtype", None) != word:
        return None
    return w


def _word_fill(low: Any, high: Any, words: _WordKind) -> int | None:
    """The word that packs fill values ``low`` and ``high`` (the halves' dtype), else None."""
    import struct

    word, half, part, bits = words
    if not all(isinstance(v, (bool, int, float)) and not math.isnan(v) for v in (low, high)):
        return None  # (a nan fill's bits are the C++ compiler's: left to the halves' ops)
    code = {torch.float32: "f", torch.float16: "e"}[part]
    try:
        lo, hi = (int.from_bytes(struct.pack("<" + code, float(v)), "little") for v in (low, high))
    except OverflowError:  # (a fill the part dtype cannot hold: left to the halves' ops)
        return None
    packed = lo | (hi << bits)
    return packed - (1 << (2 * bits)) if packed >> (2 * bits - 1) else packed  # (as a signed word)


def _schema_arguments(node: fx.Node) -> dict[str, Any] | None:
    """Every argument of ``node``'s op by its schema name, defaults filled in."""
    given, arguments = dict(node.kwargs), {}
    for i, argument in enumerate(node.target._schema.arguments):
        if i < len(node.args) and not argument.kwarg_only:
            arguments[argument.name] = node.args[i]
        elif argument.name in given:
            arguments[argument.name] = given.pop(argument.name)
        elif argument.has_default_value():
            arguments[argument.name] = argument.default_value
        else:
            return None
    return arguments if not given and len(node.args) <= len(arguments) else None


@dataclasses.dataclass
class _MovePlan:
    """How a pair of halves is computed as words: the words themselves (``words``), or the op
    of ``low`` (a half's node) with ``args`` by schema name, planned words among them."""

    words: fx.Node | None = None
    low: fx.Node | None = None
    args: dict[str, Any] | None = None


#: (low, high) -> its plan (None: not moves of words), for one join
_Plans = dict[tuple[Any, Any], "_MovePlan | None"]


def _moves_of(low: Any, high: Any, words: _WordKind, chain: _Plans) -> _MovePlan | None:
    """How ``low``/``high`` (halves) are the same moves of the halves of the same words; ``chain``
    holds every pair planned so far (each planned once, however often the moves read it)."""
    key = (low, high)
    if key not in chain:
        chain[key] = _planned(low, high, words, chain)
    return chain[key]


def _planned(low: Any, high: Any, words: _WordKind, chain: _Plans) -> _MovePlan | None:
    found = _split_words(low, high, words)
    if found is not None:
        return _MovePlan(words=found)
    if not (isinstance(low, fx.Node) and isinstance(high, fx.Node)) or low.op != "call_function":
        return None
    values = _MOVES.get(low.target)
    if values is None or high.target is not low.target:
        return None
    bound = [_schema_arguments(node) for node in (low, high)]
    if bound[0] is None or bound[1] is None:
        return None
    lo_args, hi_args = bound
    if set(lo_args) != set(hi_args):
        return None
    args: dict[str, Any] = {}
    for name, lo in lo_args.items():
        hi = hi_args[name]
        if name in values:
            pairs = list(zip(lo, hi)) if isinstance(lo, (list, tuple)) else [(lo, hi)]
            if isinstance(lo, (list, tuple)) and len(lo) != len(hi):
                return None
            plans = [_moves_of(a, b, words, chain) for a, b in pairs]
            if any(p is None for p in plans):
                return None
            args[name] = plans if isinstance(lo, (list, tuple)) else plans[0]
        elif name == _FILLS.get(low.target):
            fill = _word_fill(lo, hi, words)
            if fill is None:
                return None
            args[name] = fill
        elif name == "dtype":
            if lo != words[2] or hi != words[2]:
                return None
            args[name] = words[0]
        elif lo is not hi and lo != hi:
            return None  # (a shared argument: an index, a dim, a size must be the same)
        else:
            args[name] = lo
    return _MovePlan(low=low, args=args)


def _built(gm: fx.GraphModule, plan: _MovePlan, before: fx.Node, done: dict[int, fx.Node]) -> fx.Node:
    """The nodes ``plan`` computes the words by, inserted before ``before`` (``done``: the plans
    built so far, by id)."""
    if plan.words is not None:
        return plan.words
    if id(plan) in done:
        return done[id(plan)]
    assert plan.low is not None
    target = plan.low.target

    def value(v: Any) -> Any:
        if isinstance(v, _MovePlan):
            return _built(gm, v, before, done)
        return [value(p) for p in v] if isinstance(v, list) else v

    args, kwargs = [], {}
    for argument in target._schema.arguments:  # (positionally, as Inductor's lowerings take them)
        if argument.kwarg_only:
            kwargs[argument.name] = value(plan.args[argument.name])
        else:
            args.append(value(plan.args[argument.name]))
    with gm.graph.inserting_before(before):
        node = gm.graph.call_function(target, tuple(args), kwargs)
    fake_args, fake_kwargs = fx.node.map_arg((tuple(args), kwargs), lambda n: n.meta["val"])
    node.meta["val"] = target(*fake_args, **fake_kwargs)
    done[id(plan)] = node
    return node


def _joined_halves(node: fx.Node) -> tuple[Any, Any, _WordKind] | None:
    """(low, high, words) where ``node`` joins halves into words as ``_layout.pack`` does."""
    from ._layout import _WORDS

    if node.target is not aten.bitwise_or.Tensor or len(node.args) != 2 or node.kwargs:
        return None
    for words in _WORDS.values():
        word, half, part, bits = words
        for a, b in (node.args, node.args[::-1]):
            masked, mask = _scalar_op(a, aten.bitwise_and.Scalar)
            shifted, by = _scalar_op(b, aten.__lshift__.Scalar)
            if mask != (1 << bits) - 1 or by != bits:
                continue
            low, high = _bitcast_of(_converted(masked, word), half), _bitcast_of(_converted(shifted, word), half)
            if low is not None and high is not None:
                return low, high, words
    return None


def _same_layout(a: Any, b: Any) -> bool:
    return (
        isinstance(a, Tensor)
        and isinstance(b, Tensor)
        and a.dtype == b.dtype
        and statically_known_true(sym_eq(a.shape, b.shape))
        and statically_known_true(sym_eq(a.stride(), b.stride()))
    )


def moves_on_words(gm: fx.GraphModule) -> int:
    """Note [Moves on words]; returns how many joins became moves of words."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        found = _joined_halves(node) if node.op == "call_function" else None
        if found is None:
            continue
        low, high, words = found
        low, high = _skip_aliases(low), _skip_aliases(high)
        chain: _Plans = {}
        plan = _moves_of(low, high, words, chain)
        if plan is None:
            continue
        # the halves' moves must be read by nothing else (or they would be computed twice)
        moved = {n for pair, p in chain.items() if p is not None and p.low is not None for n in pair}
        if any(u not in moved for n in moved - {low, high} for u in n.users):
            continue
        if any(len(n.users) != 1 for n in (low, high) if n in moved):
            continue
        value = _built(gm, plan, node, {})
        if not _same_layout(value.meta.get("val"), node.meta.get("val")):
            _erase_unused(gm, value)
            continue
        node.replace_all_uses_with(value)
        _erase_unused(gm, node)
        rewritten += 1
    return _recompiled(gm, rewritten)


def _erase_unused(gm: fx.GraphModule, node: fx.Node) -> None:
    """Erase ``node`` and the nodes only it used, if nothing reads it."""
    pending, erased = [node], set()
    while pending:
        n = pending.pop()
        if n in erased or n.users or n.op != "call_function":
            continue
        inputs = list(n.all_input_nodes)
        gm.graph.erase_node(n)
        erased.add(n)
        pending.extend(inputs)


# -- Note [Scalar factors after transforms] -----------------------------------------------------

_TRANSFORMS = (aten._fft_r2c.default, aten._fft_c2c.default, aten._fft_c2r.default)


def _real_scalar(arg: Any) -> bool:
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return True
    value = arg.meta.get("val") if isinstance(arg, fx.Node) else None
    return isinstance(value, Tensor) and value.dim() == 0 and value.dtype.is_floating_point


def scalar_factors_after_transforms(gm: fx.GraphModule) -> int:
    """Note [Scalar factors after transforms]; returns how many scalings moved."""
    moved = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _TRANSFORMS or node.kwargs:
            continue
        mul = node.args[0]
        if not (isinstance(mul, fx.Node) and mul.target in (aten.mul.Tensor, aten.mul.Scalar)) or len(mul.users) != 1:
            continue
        if mul.kwargs or len(mul.args) != 2:
            continue
        x, scalar = mul.args if _real_scalar(mul.args[1]) else mul.args[::-1]
        if not (isinstance(x, fx.Node) and _real_scalar(scalar)):
            continue
        before, product = x.meta.get("val"), mul.meta.get("val")
        if not (isinstance(before, Tensor) and isinstance(product, Tensor)):
            continue
        if before.dtype != product.dtype or not statically_known_true(sym_eq(before.shape, product.shape)):
            continue  # (a promotion or a broadcast: not a scaling of x)
        with gm.graph.inserting_before(node):
            transform = gm.graph.call_function(node.target, (x, *node.args[1:]))
            transform.meta["val"] = _fake(node.target, (x, *node.args[1:]))
            target = aten.mul.Tensor if isinstance(scalar, fx.Node) else aten.mul.Scalar
            scaled = gm.graph.call_function(target, (transform, scalar))
            scaled.meta["val"] = _fake(target, (transform, scalar))
        node.replace_all_uses_with(scaled)
        gm.graph.erase_node(node)
        gm.graph.erase_node(mul)
        moved += 1
    return _recompiled(gm, moved)


# -- Note [Exponentials of imaginary numbers] ---------------------------------------------------

_ZERO_OR_NAN, _FALSE = "zero or nan", "false"

#: comparisons of a zero-or-nan value with a constant c that are false for +-0 and for nan
_FALSE_WHEN = {
    aten.gt.Scalar: lambda c: c >= 0,
    aten.gt.Tensor: lambda c: c >= 0,
    aten.ge.Scalar: lambda c: c > 0,
    aten.ge.Tensor: lambda c: c > 0,
    aten.lt.Scalar: lambda c: c <= 0,
    aten.lt.Tensor: lambda c: c <= 0,
    aten.le.Scalar: lambda c: c < 0,
    aten.le.Tensor: lambda c: c < 0,
    aten.eq.Scalar: lambda c: c != 0,
    aten.eq.Tensor: lambda c: c != 0,
}

#: Switched off by a benchmark that measures the products by one the pass drops.
_MULTIPLIES_BY_ONE = True

#: Switched off by a benchmark that measures the products by e^v and the blend the pass drops.
_PHASES_AS_SINES = True

#: f(v) for v zero or nan: f(v) = v + offset
_OF_ZERO_OR_NAN = {aten.exp.default: 1.0, aten.cos.default: 1.0, aten.sin.default: 0.0, aten.expm1.default: 0.0}


#: the largest constant the pass evaluates (the parts of a complex scalar and what is made of them)
_FOLDED_NUMEL = 64

#: ops that make a constant from numbers alone
_CONSTANT_MAKERS = frozenset((aten.full.default, aten.scalar_tensor.default, aten.zeros.default, aten.ones.default))


def _folded(gm: fx.GraphModule, arg: Any, memo: dict[fx.Node, Tensor | None]) -> Tensor | float | None:
    """``arg``'s value if the graph computes it from constants alone: a Python number, a tensor
    constant, or a small pure aten op of such values (Smith's division by ``2 + 0j`` computes
    its ratio from the divisor's parts)."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return float(arg)
    if not isinstance(arg, fx.Node):
        return None
    if arg not in memo:
        memo[arg] = None
        value = arg.meta.get("val")
        if arg.op == "get_attr":
            constant = getattr(gm, str(arg.target), None)
            memo[arg] = constant if isinstance(constant, Tensor) else None
        elif (
            arg.op == "call_function"
            and isinstance(arg.target, torch._ops.OpOverload)
            and not arg.target._schema.is_mutable
            and torch.Tag.nondeterministic_seeded not in arg.target.tags
            and (arg.target in _CONSTANT_MAKERS or any(isinstance(a, fx.Node) for a in arg.args))
            and isinstance(value, Tensor)
            and all(isinstance(d, int) for d in value.shape)  # no guard on a symbolic size
            and value.numel() <= _FOLDED_NUMEL
        ):  # (an op of no graph value makes a constant only if it is a filler: not empty, rand)
            inputs = [_folded(gm, a, memo) if isinstance(a, fx.Node) else a for a in arg.args]
            nested: list[fx.Node] = []
            fx.node.map_arg((inputs, arg.kwargs), nested.append)  # a node inside a list: not folded
            if all(i is not None for i in inputs) and not nested:
                with unset_fake_temporarily():  # the pass runs inside the compile's fake mode
                    memo[arg] = arg.target(*inputs, **arg.kwargs)
    return memo[arg]


def _constant(gm: fx.GraphModule, arg: Any, memo: dict[fx.Node, Tensor | None]) -> float | None:
    """The value of ``arg`` if the graph computes it from constants and it is one number."""
    value = _folded(gm, arg, memo)
    if isinstance(value, float) or value is None:
        return value
    if not value.numel() or not value.dtype.is_floating_point:
        return None
    with unset_fake_temporarily():
        first = value.reshape(-1)[0]
        return float(first) if bool((value == first).all()) else None


def _same_value_type(a: fx.Node, b: Any) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val") if isinstance(b, fx.Node) else None
    if not (isinstance(va, Tensor) and isinstance(vb, Tensor) and va.dtype == vb.dtype and va.dim() == vb.dim()):
        return False
    # sizes compared without installing a guard on a symbolic one (a guard would recompile)
    return all(statically_known_true(sym_eq(x, y)) for x, y in zip(va.shape, vb.shape))


def _finite(c: float | None) -> bool:
    return c is not None and math.isfinite(c)


def _sine_kept_at_zero(node: fx.Node, constant: Callable[[Any], float | None]) -> bool:
    """Whether ``node`` is ``where(w == 0, w, sin(w))``, which is ``sin(w)`` (C99: sin(+-0) is +-0)."""
    cond, w, other = node.args
    return (
        isinstance(cond, fx.Node)
        and cond.target in (aten.eq.Scalar, aten.eq.Tensor)
        and not cond.kwargs
        and cond.args[0] is w
        and constant(cond.args[1]) == 0.0
        and isinstance(other, fx.Node)
        and other.target is aten.sin.default
        and other.args[0] is w
        and _same_value_type(node, other)
    )


def imaginary_exponentials(gm: fx.GraphModule) -> int:
    """Note [Exponentials of imaginary numbers]; returns how many ops were replaced."""
    kind: dict[fx.Node, str] = {}
    memo: dict[fx.Node, Tensor | None] = {}
    replaced = 0

    def kind_of(arg: Any) -> str | None:
        # nodes only: hashing a symbolic size to look it up would guard on its value
        return kind.get(arg) if isinstance(arg, fx.Node) else None

    uniform: dict[fx.Node, float | None] = {}

    def constant(arg: Any) -> float | None:
        # asked of the same node by each of its users: a large constant is compared once
        if not isinstance(arg, fx.Node):
            return _constant(gm, arg, memo)
        if arg not in uniform:
            uniform[arg] = _constant(gm, arg, memo)
        return uniform[arg]

    def zero_or_nan(arg: Any) -> bool:
        return kind_of(arg) == _ZERO_OR_NAN or constant(arg) == 0.0

    # v zero or nan -> its witnesses: values one of which is not finite wherever v is nan
    witness: dict[fx.Node, frozenset[fx.Node]] = {}
    # exp(v) or cos(v) rewritten as v + 1 -> v
    plus_one: dict[fx.Node, fx.Node] = {}

    def not_finite_with(w: Any, t: fx.Node, depth: int = 0) -> bool:
        # w is not finite wherever t is not: t, or a sum, difference or product with such a value
        # (inf + y, inf * y: inf or nan, whatever y is), a quotient of one, negated or absolute
        if w is t:
            return True
        if depth > 16 or not isinstance(w, fx.Node) or w.op != "call_function" or w.kwargs:
            return False
        if w.target in (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor):
            return any(not_finite_with(a, t, depth + 1) for a in w.args)
        if w.target in (aten.div.Tensor, aten.neg.default, aten.abs.default):
            return not_finite_with(w.args[0], t, depth + 1)
        return False

    def live_branches(args: Any) -> tuple[Any, ...]:
        # where(cond, a, b): both branches, or the one a constant condition picks
        cond = _folded(gm, args[0], memo)
        if isinstance(cond, Tensor) and cond.dtype is torch.bool:
            with unset_fake_temporarily():
                if bool(cond.all()):
                    return (args[1],)
                if not bool(cond.any()):
                    return (args[2],)
        return (args[1], args[2])

    for node in list(gm.graph.nodes):
        value = node.meta.get("val")
        if node.op != "call_function" or node.kwargs or not isinstance(value, Tensor):
            continue
        target, args = node.target, node.args
        if value.dtype.is_floating_point:
            if target is aten.mul.Tensor and _MULTIPLIES_BY_ONE:
                same = next(
                    (a for a, b in (args, args[::-1]) if constant(b) == 1.0 and _same_value_type(node, a)), None
                )
                if same is not None:  # x * 1 is x, nan and -0 included
                    node.replace_all_uses_with(same)
                    gm.graph.erase_node(node)
                    replaced += 1
                    continue
            if target is aten.mul.Tensor and _PHASES_AS_SINES:
                # (v + 1) * cos(w) is cos(w) where v is nan only where w is not finite: then
                # cos(w) is nan too, and elsewhere v + 1 is 1; sin likewise
                trig = next(
                    (
                        b
                        for a, b in (args, args[::-1])
                        if isinstance(b, fx.Node)
                        and b.target in (aten.cos.default, aten.sin.default)
                        and isinstance(a, fx.Node)
                        and a in plus_one
                        and plus_one[a] in witness
                        and all(not_finite_with(b.args[0], t) for t in witness[plus_one[a]])
                        and _same_value_type(node, b)
                    ),
                    None,
                )
                if trig is not None:
                    node.replace_all_uses_with(trig)
                    gm.graph.erase_node(node)
                    replaced += 1
                    continue
            if target is aten.where.self and _PHASES_AS_SINES and _sine_kept_at_zero(node, constant):
                node.replace_all_uses_with(args[2])  # where(w == 0, w, sin(w)): sin(+-0) is +-0
                gm.graph.erase_node(node)
                replaced += 1
                continue
            if target is aten.mul.Tensor and any(map(zero_or_nan, args)):
                kind[node] = _ZERO_OR_NAN  # 0 * x, and (+-0 or nan) * x
                for a, b in (args, args[::-1]):
                    if isinstance(a, fx.Node) and constant(b) == 0.0:
                        # 0 * x is nan where x is not finite (never, for a finite number)
                        witness[node] = frozenset() if _finite(constant(a)) else frozenset((a,))
                    elif a in witness and _finite(constant(b)):
                        witness[node] = witness[a]
            elif target in (aten.add.Tensor, aten.sub.Tensor, aten.div.Tensor) and zero_or_nan(args[0]):
                if target is aten.div.Tensor or zero_or_nan(args[1]):
                    kind[node] = _ZERO_OR_NAN
                    if target is aten.div.Tensor:
                        if args[0] in witness and _finite(c := constant(args[1])) and c != 0.0:
                            witness[node] = witness[args[0]]
                    elif all(a in witness or constant(a) == 0.0 for a in args):
                        witness[node] = frozenset().union(*(witness.get(a, frozenset()) for a in args))
            elif target in (aten.neg.default, aten.abs.default) and zero_or_nan(args[0]):
                kind[node] = _ZERO_OR_NAN
                if args[0] in witness:
                    witness[node] = witness[args[0]]
            elif target is aten.where.self and all(map(zero_or_nan, live_branches(args))):
                kind[node] = _ZERO_OR_NAN  # (Smith's division by a real number picks a branch)
            elif target in _OF_ZERO_OR_NAN and kind_of(args[0]) == _ZERO_OR_NAN:
                offset = _OF_ZERO_OR_NAN[target]
                if offset:
                    with gm.graph.inserting_before(node):
                        new = gm.graph.call_function(aten.add.Tensor, (args[0], offset))
                    new.meta["val"] = value
                    plus_one[new] = args[0]
                else:
                    new = args[0]
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
                replaced += 1
        elif value.dtype is torch.bool:
            if target in _FALSE_WHEN and kind_of(args[0]) == _ZERO_OR_NAN:
                c = constant(args[1])
                if c is not None and _FALSE_WHEN[target](c):
                    kind[node] = _FALSE
            elif target in (aten.bitwise_and.Tensor, aten.logical_and.default) and _FALSE in (
                kind_of(args[0]),
                kind_of(args[1]),
            ):
                kind[node] = _FALSE
        if target is aten.where.self and kind_of(args[0]) == _FALSE:
            if _same_value_type(node, args[2]):
                node.replace_all_uses_with(args[2])
                gm.graph.erase_node(node)
                replaced += 1
            elif (c := constant(args[2])) is not None:
                uniform[node] = c  # every element is the other operand's one number
    if replaced:
        # What the replacements left unused (the blends' masks and constants): Inductor would
        # never compute it, but would lower it (its dead-code pass is off by default).
        gm.graph.eliminate_dead_code()
    return _recompiled(gm, replaced)


# -- Note [Small contractions in place] ---------------------------------------------------------

#: The most entries a small operand may have: terms per output element, at most 16 products.
_SMALL_OPERAND = 16


def _small_contraction(equation: str, operands: tuple[Any, ...]) -> tuple[Tensor, str, Tensor, str, str] | None:
    """(small, its letters, big, its letters, output letters) if ``einsum(equation, *operands)``
    is a contraction Note [Small contractions in place] computes as products of slices."""
    if len(operands) != 2 or not all(isinstance(t, Tensor) for t in operands):
        return None
    equation = equation.replace(" ", "")
    if "..." in equation or equation.count("->") != 1:
        return None
    inputs, out = equation.split("->")
    letters = inputs.split(",")
    if len(letters) != 2 or any(len(set(s)) != len(s) for s in (*letters, out)):
        return None
    (a, b), (sa, sb) = operands, letters
    if (len(sa), len(sb)) != (a.dim(), b.dim()) or a.dtype != b.dtype or not a.is_complex():
        return None
    summed = set(sa) & set(sb)
    if summed & set(out) or set(out) != (set(sa) | set(sb)) - summed:
        return None  # batch letters, or a letter summed out of one operand alone

    def small(t: Tensor) -> bool:
        return all(isinstance(n, int) for n in t.shape) and math.prod(t.shape) <= _SMALL_OPERAND

    if small(a) == small(b):
        return None
    (s, ss), (g, sg) = ((a, sa), (b, sb)) if small(a) else ((b, sb), (a, sa))
    # the summed axes of the large operand: the same known sizes (no broadcasting of size 1)
    if any(g.shape[sg.index(c)] != s.shape[ss.index(c)] for c in summed):
        return None
    return s, ss, g, sg, out


def einsum_small_in_place(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum(equation, *operands)``, as products of slices where Note [Small contractions
    in place] applies."""
    found = _small_contraction(equation, operands)
    if found is None:
        return torch.einsum(equation, *operands)
    if torch.is_grad_enabled() and any(t.requires_grad for t in operands):
        return _SmallContraction.apply(equation, *operands)
    return _small_contraction_products(*found)


class _SmallContraction(torch.autograd.Function):
    """A small contraction whose gradients are contractions too (Note [Small contractions in
    place], "Gradients")."""

    @staticmethod
    def forward(equation: str, a: Tensor, b: Tensor) -> Tensor:  # type: ignore[override]
        found = _small_contraction(equation, (a, b))
        assert found is not None
        return _small_contraction_products(*found)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
        equation, a, b = inputs
        ctx.equation = equation
        ctx.save_for_backward(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, Tensor | None, Tensor | None]:  # type: ignore[override]
        a, b = ctx.saved_tensors
        inputs, out = ctx.equation.replace(" ", "").split("->")
        sa, sb = inputs.split(",")
        # (as for a product: each operand's gradient is the output's gradient contracted with
        # the other operand's conjugate, over the letters the operand lacks)
        grad_a = einsum_small_in_place(f"{out},{sb}->{sa}", grad, b.conj()) if ctx.needs_input_grad[1] else None
        grad_b = einsum_small_in_place(f"{out},{sa}->{sb}", grad, a.conj()) if ctx.needs_input_grad[2] else None
        return None, grad_a, grad_b


def _small_contraction_products(small: Tensor, ss: str, big: Tensor, sb: str, out: str) -> Tensor:
    """Note [Small contractions in place]: the contraction as products of slices."""
    big, sb, out, merged = _merge_free_runs(ss, big, sb, out)
    if _BROADCAST_PRODUCTS and out[-1] in sb:
        result = _broadcast_products(small, ss, big, sb, out)
        if not merged:
            return result
        # unflattened as a strided view, which Inductor takes of the stored products (a
        # view of products not stored yet is an index computation in each reader)
        size, stride = list(result.shape), list(result.stride())
        for axis, sizes in reversed(merged):
            inner = [math.prod(sizes[i + 1 :]) * stride[axis] for i in range(len(sizes))]
            size[axis : axis + 1], stride[axis : axis + 1] = sizes, inner
        return result.as_strided(size, stride, result.storage_offset())
    result = _products_of_slices(small, ss, big, sb, out)
    for axis, sizes in reversed(merged):
        result = result.unflatten(axis, sizes)
    return result


def _merge_free_runs(ss: str, big: Tensor, sb: str, out: str) -> tuple[Tensor, str, str, list[tuple[int, list[int]]]]:
    """The large operand with each run of its free axes that the output keeps together, in
    order, viewed as one axis; with the letters of it and of the output, and (output axis,
    sizes) of each merged run, in output order, for unflattening the result.

    A gate on one qubit of an 18-qubit state then reads a 3-dim view instead of 18 dims: the
    same elements in the same order, but Inductor's loop analysis, which costs about the
    square of a loop's dims per node, runs on 3 (Note [Small contractions in place])."""
    shape, strides = big.shape, big.stride()
    if not all(isinstance(n, int) for n in (*shape, *strides)):
        return big, sb, out, []
    runs: list[list[int]] = []
    for i, c in enumerate(sb):
        follows = (
            i > 0
            and c not in ss
            and sb[i - 1] not in ss
            and out.index(c) == out.index(sb[i - 1]) + 1
            and strides[i - 1] == strides[i] * shape[i]
        )
        if follows:
            runs[-1].append(i)
        else:
            runs.append([i])
    if len(runs) == len(sb):
        return big, sb, out, []
    fresh = iter(c for c in string.ascii_letters if c not in ss + sb)
    letters = [sb[run[0]] if len(run) == 1 else next(fresh) for run in runs]
    new_out = out
    for run, letter in zip(runs, letters):
        if len(run) > 1:
            new_out = new_out.replace("".join(sb[i] for i in run), letter)
    merged = sorted(
        (new_out.index(letter), [shape[i] for i in run]) for run, letter in zip(runs, letters) if len(run) > 1
    )
    view = big.view([math.prod(shape[i] for i in run) for run in runs])
    return view, "".join(letters), new_out, merged


#: Switches the broadcast form of Note [Small contractions in place] off when False (benchmarks
#: and tests only).
_BROADCAST_PRODUCTS: bool = True


def _products_of_slices(small: Tensor, ss: str, big: Tensor, sb: str, out: str) -> Tensor:
    summed = [c for c in sb if c in ss]  # in the large operand's order
    free_small = [c for c in ss if c not in summed]
    free_big = [c for c in sb if c not in summed]
    size = {c: small.shape[ss.index(c)] for c in ss}
    order = [free_big.index(c) for c in out if c in free_big]  # the large operand's axes as out has them
    slices = {}
    for k in itertools.product(*(range(size[c]) for c in summed)):
        view = big
        for axis, value in sorted(((sb.index(c), v) for c, v in zip(summed, k)), reverse=True):
            view = view.select(axis, value)
        slices[k] = view.permute(order)

    # Entries read from the flattened small operand: one select each, where indexing by a
    # tuple selects once per axis (for a two-qubit gate, 4 of them: 96 more real nodes).
    flat = small.reshape(-1)
    place = [math.prod(small.shape[i + 1 :]) for i in range(len(ss))]

    def term(at: dict[str, int]) -> Tensor:
        def entry(k: tuple[int, ...]) -> Tensor:
            index = {**at, **dict(zip(summed, k))}
            return flat[sum(index[c] * p for c, p in zip(ss, place))]

        return functools.reduce(operator.add, [entry(k) * view for k, view in slices.items()])

    # One stack of every output slice (a nested stack would copy the inner ones into the outer
    # one), at the first of the small operand's free axes, unflattened and moved into place.
    placed = sorted(free_small, key=out.index)
    if not placed:
        return term({})
    axis = sum(1 for c in out[: out.index(placed[0])] if c in free_big)
    slices_out = [term(dict(zip(placed, f))) for f in itertools.product(*(range(size[c]) for c in placed))]
    result = torch.stack(slices_out, dim=axis).unflatten(axis, [size[c] for c in placed])
    have = [c for c in out if c in free_big]
    have[axis:axis] = placed
    return result.permute([have.index(c) for c in out])


def _broadcast_products(small: Tensor, ss: str, big: Tensor, sb: str, out: str) -> Tensor:
    """``sum_k small[:, k] * big[..., k, ...]`` with the small operand's free axes broadcast
    (Note [Small contractions in place]): one product per summed index, each computing every
    output slice."""
    summed = [c for c in sb if c in ss]  # in the large operand's order
    # The small operand's summed axes first, then its others in the output's order, with size
    # 1 where it has none: one small copy, viewed once (unsqueezing it to the output's rank
    # took a node per axis and term).
    rest = [c for c in out if c in ss]
    shape = [small.shape[ss.index(c)] for c in summed] + [small.shape[ss.index(c)] if c in ss else 1 for c in out]
    small_p = small.permute([ss.index(c) for c in summed + rest]).contiguous().view(shape)
    # The large operand's summed axes first, then its others in the output's order (a view),
    # with a new axis where the small one's free axes go.
    order = [sb.index(c) for c in summed] + [sb.index(c) for c in out if c in sb]
    big_p = big.permute(order) if order != list(range(len(order))) else big
    for axis, c in enumerate(out):
        if c not in sb:
            big_p = big_p.unsqueeze(len(summed) + axis)

    def at(t: Tensor, k: tuple[int, ...]) -> Tensor:
        for axis in reversed(range(len(k))):
            t = t.select(axis, k[axis])
        return t

    sizes = [small.shape[ss.index(c)] for c in summed]
    terms = [at(small_p, k) * at(big_p, k) for k in itertools.product(*map(range, sizes))]
    return functools.reduce(operator.add, terms)


#: Note [Small contractions in place]: the block lengths (2 to 15 elements) at which reading a
#: graph input's complex64 words is slow.
_SHORT_BLOCKS = range(2, 16)

#: Dynamo-graph calls that return a view of their first argument.
_DYNAMO_VIEWS = frozenset(("view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "flatten", "unflatten"))


def _reads_input_in_short_blocks(found: tuple[Tensor, str, Tensor, str, str], operands: Any, values: Any) -> bool:
    """Whether the large operand is (a view of) a graph input read in short contiguous blocks
    (Note [Small contractions in place]): then eager's decomposition is kept."""
    _, ss, big, sb, _ = found
    strides = [big.stride(i) for i, c in enumerate(sb) if c in ss]
    if not strides or not all(isinstance(n, int) for n in strides) or min(strides) not in _SHORT_BLOCKS:
        return False
    node = operands[next(i for i, v in enumerate(values) if v is big)]
    while isinstance(node, fx.Node) and node.op != "placeholder":
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", None)
        if name not in _DYNAMO_VIEWS or not node.args:
            return False
        node = node.args[0]
    return isinstance(node, fx.Node)


def small_contractions_in_place(gm: fx.GraphModule, rewrites: list[str] | None = None) -> int:
    """Note [Small contractions in place] on Dynamo's graph; returns how many einsums were replaced
    (and describes each in ``rewrites``, for ``torchcx.explain``)."""
    replaced = 0
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not torch.functional.einsum or node.kwargs:
            continue
        equation, *operands = node.args
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])  # einsum(eq, [a, b])
        values = tuple(o.meta.get("example_value") if isinstance(o, fx.Node) else o for o in operands)
        found = _small_contraction(equation, values) if isinstance(equation, str) else None
        if found is not None and not _reads_input_in_short_blocks(found, operands, values):
            node.target = einsum_small_in_place
            node.args = (equation, *operands)
            replaced += 1
            if rewrites is not None:
                shapes = ", ".join(str(tuple(v.shape)) for v in values)
                rewrites.append(
                    f"einsum {equation!r} of {shapes}: as products of slices (Note [Small contractions in place])"
                )
    return _recompiled(gm, replaced)


def native_gradients(gm: fx.GraphModule, rewrites: list[str] | None = None) -> int:
    """Note [Native gradients] (ops/native_gradients.py) on Dynamo's graph: the Householder
    products of complex tensors become torchcx ops whose gradient is one extern kernel.
    Returns how many nodes were replaced (each described in ``rewrites``)."""
    from .ops import native_gradients as native

    replaced = 0
    for node in gm.graph.nodes:
        op = native.replacement(node)
        if op is None:
            continue
        spelling = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", node.target)
        node.op, node.target = "call_function", op
        replaced += 1
        if rewrites is not None:
            rewrites.append(f"{spelling}: its gradient as one extern kernel (Note [Native gradients])")
    return _recompiled(gm, replaced)


# -- Note [Truncated spectra] ------------------------------------------------------------------

#: How a truncated transform is recognized: FFT spellings as Dynamo records them.
_RFFT2 = (torch._C._fft.fft_rfft2, torch._C._fft.fft_rfftn, torch.fft.rfft2, torch.fft.rfftn)
_IRFFT2 = (torch._C._fft.fft_irfft2, torch._C._fft.fft_irfftn, torch.fft.irfft2, torch.fft.irfftn)
_FFTSHIFT = (torch._C._fft.fft_fftshift, torch.fft.fftshift)
#: The spellings whose ``dim`` defaults to the last two dims (rfftn's and irfftn's default to all).
_LAST_TWO_BY_DEFAULT = (torch._C._fft.fft_rfft2, torch.fft.rfft2, torch._C._fft.fft_irfft2, torch.fft.irfft2)
_NORMS = (None, "backward", "forward", "ortho")

#: The smallest transform length the rewrite applies to, and the largest fraction of each
#: axis's spectrum it may keep. Beyond those, the kept modes themselves decide
#: (``_truncation``).
_MIN_LENGTH = 16
_MAX_KEPT_FRACTION = 0.5
#: The keywords of a ``torch.zeros`` that the pruned inverse builds narrower (any other, such
#: as ``out=``, leaves the graph as it is).
_ZEROS_KEYWORDS = {"dtype", "device", "layout", "requires_grad", "pin_memory"}


def _dft_angles(freqs: Tensor, positions: Tensor, length: int) -> Tensor:
    """2*pi*f*p/length for every (f, p), float64, with f*p reduced mod length first (exact in
    int64): the angle of a high harmonic is then as accurate as that of a low one."""
    return (torch.outer(freqs, positions) % length).to(torch.float64) * (2 * math.pi / length)


def _fft_scale(norm: str | None, size: int, inverse: bool) -> float:
    if norm == "ortho":
        return 1 / math.sqrt(size)
    forward_scaled = norm == "forward"
    return 1 / size if forward_scaled != inverse else 1.0


def truncated_rfft2(x: Tensor, rows: tuple[int, ...], cols: int, norm: str | None) -> Tensor:
    """``torch.fft.rfft2(x, norm=norm)[..., rows, :cols]`` for real ``x``, as two real DFT
    products over the kept modes only (Note [Truncated spectra]).

    With x of shape (..., n, m), F = e^{-i theta} the DFT matrices:
    Y = x @ F_m[:, :cols] is (x @ C) - i (x @ S), one real GEMM against [C | -S];
    Z = F_n[rows] @ Y = (C' - i S')(Yr + i Yi), one real GEMM of [C'; -S'] with [Yr | Yi],
    whose four blocks combine into Zr = C'Yr + S'Yi and Zi = C'Yi - S'Yr.
    """
    n, m = x.shape[-2:]
    device, dtype = x.device, x.dtype
    scale = _fft_scale(norm, n * m, inverse=False)
    cols_angle = _dft_angles(torch.arange(m, device=device), torch.arange(cols, device=device), m)
    w = (torch.cat([torch.cos(cols_angle), -torch.sin(cols_angle)], 1) * scale).to(dtype)  # (m, 2 cols)
    freqs = torch.tensor(rows, device=device)
    rows_angle = _dft_angles(freqs, torch.arange(n, device=device), n)
    f = torch.cat([torch.cos(rows_angle), -torch.sin(rows_angle)], 0).to(dtype)  # (2 len(rows), n)
    y = (x.reshape(-1, m) @ w).reshape(*x.shape[:-1], 2 * cols)
    z = torch.matmul(f, y)
    r = len(rows)
    cr, sr = z[..., :r, :], z[..., r:, :]  # C' @ [Yr | Yi], -S' @ [Yr | Yi]
    return torch.complex(cr[..., :cols] - sr[..., cols:], cr[..., cols:] + sr[..., :cols])


def truncated_irfft2(
    values: list[Tensor], rows: list[tuple[int, ...]], col0: list[int], n: int, m: int, norm: str | None
) -> Tensor:
    """``torch.fft.irfft2(Z, s=(n, m), norm=norm)`` where Z is zero except ``values[j]`` at
    rows ``rows[j]`` and columns ``col0[j]...``, as real DFT products over those modes only
    (Note [Truncated spectra]).

    irfft2 is the complex inverse along dim -2, then the real (c2r) inverse along the last
    dim: x[p, q] = sum_k w_k Re(Z'[p, k] e^{i theta k q}) with w_k = 1 for the bins that are
    their own mirror (0, and m/2 for even m), 2 otherwise; c2r takes the real part, so an
    imaginary part in those bins is ignored, as the vendor FFTs do. Re commutes with the real
    weighted sums, so the last dim goes first: P = Z @ (w e^{i theta}) (one real GEMM of
    [Zr | Zi] against [[Gc, Gs], [-Gs, Gc]]), then x = Re(E @ P) = E_c Pr - E_s Pi.
    """
    scale = _fft_scale(norm, n * m, inverse=True)
    out: Tensor | None = None
    for value, freqs, c0 in zip(values, rows, col0):
        device, dtype = value.device, value.real.dtype
        c = value.shape[-1]
        k = torch.arange(c0, c0 + c, device=device)
        mirror = (k == 0) | (k * 2 == m)
        weight = torch.where(mirror, 1.0, 2.0).to(torch.float64)[:, None] * scale
        angle = _dft_angles(k, torch.arange(m, device=device), m)
        gc, gs = torch.cos(angle) * weight, torch.sin(angle) * weight  # (c, m)
        g = torch.cat([torch.cat([gc, gs], 1), torch.cat([-gs, gc], 1)], 0).to(dtype)  # (2c, 2m)
        p = torch.cat([value.real, value.imag], -1) @ g  # (..., r, [Pr | Pi])
        rows_angle = _dft_angles(torch.arange(n, device=device), torch.tensor(freqs, device=device), n)
        e = torch.cat([torch.cos(rows_angle), -torch.sin(rows_angle)], 1).to(dtype)  # (n, 2r): [E_c, -E_s]
        stacked = p.unflatten(-1, (2, m)).transpose(-3, -2).flatten(-3, -2)  # (..., [Pr; Pi], m)
        term = torch.matmul(e, stacked)
        out = term if out is None else out + term
    assert out is not None
    return out


def pruned_rfft2(x: Tensor, cols: int, norm: str | None) -> Tensor:
    """``torch.fft.rfft2(x, norm=norm)[..., :cols]``: the real FFT along the last dim, cut to
    ``cols`` columns, then the complex FFT along dim -2 of those alone (Note [Truncated
    spectra]). Each norm is the product of its per-axis scales, so it applies per axis."""
    return torch.fft.fft(torch.fft.rfft(x, dim=-1, norm=norm)[..., :cols], dim=-2, norm=norm)


def pruned_irfft2(z: Tensor, m: int, norm: str | None) -> Tensor:
    """``torch.fft.irfft2(z', s=(n, m), norm=norm)`` where z' is ``z`` (..., n, c) padded with
    zero columns to m // 2 + 1: the complex inverse along dim -2 of the c columns, padded
    with the zero columns by a ``cat``, then the real inverse along the last dim (Note
    [Truncated spectra])."""
    y = torch.fft.ifft(z, dim=-2, norm=norm)
    if _PAD_AS_CAT:
        # irfft would pad y itself (constant_pad_nd), which Inductor generates as a masked
        # gather of y's transposed columns; a cat is a tiled transpose and a fill
        y = torch.cat([y, y.new_zeros(*y.shape[:-1], m // 2 + 1 - y.shape[-1])], -1)
    return torch.fft.irfft(y, n=m, dim=-1, norm=norm)


#: ``pruned_irfft2`` writes the zero columns as a ``cat`` (False: irfft's own padding; for
#: benchmarks/fno_step.py only).
_PAD_AS_CAT = True


def _explicit_block(ndim: int, block: tuple[range, range]) -> tuple[slice, ...]:
    """An index tuple taking ``block`` (rows, columns) of the last two dims, with bounds that
    do not depend on the dims' sizes (so that it still holds once the columns are cut)."""
    rows, cols = block
    return (*(slice(None),) * (ndim - 2), slice(rows.start, rows.stop), slice(cols.start, cols.stop))


def _set_example(node: fx.Node, fn: Any, *args: Any, **kwargs: Any) -> None:
    """``node``'s ``example_value`` (Dynamo's fake tensor) as ``fn`` computes it from ``args``."""
    value = next(a for a in args if isinstance(a, Tensor))
    with value.fake_mode:
        node.meta["example_value"] = fn(*args, **kwargs)


def _static_shape(node: Any) -> tuple[int, ...] | None:
    value = node.meta.get("example_value") if isinstance(node, fx.Node) else None
    if not isinstance(value, Tensor) or not all(isinstance(s, int) for s in value.shape):
        return None
    return tuple(value.shape)


def _last_two_dims(dim: Any, ndim: int) -> bool:
    return dim is not None and [d % ndim for d in dim] == [ndim - 2, ndim - 1]


def _fft_call(node: fx.Node, ndim: int) -> tuple[Any, str | None] | None:
    """(s, norm) of an rfft2/rfftn/irfft2/irfftn call over the last two dims, else None."""
    names = ("input", "s", "dim", "norm")
    bound = dict(zip(names, node.args))
    if set(bound) & set(node.kwargs) or not set(node.kwargs) <= set(names):
        return None
    bound.update(node.kwargs)
    dim = bound.get("dim", (-2, -1) if node.target in _LAST_TWO_BY_DEFAULT else None)
    norm = bound.get("norm")
    if not _last_two_dims(dim, ndim) or norm not in _NORMS:
        return None  # (an out= keyword was refused above: it is not among ``names``)
    return bound.get("s"), norm


def _shift_of(node: fx.Node, n: int, ndim: int) -> int | None:
    """How far an fftshift call rolls dim -2 (it must roll that dim alone), else None."""
    dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
    if len(node.args) + len(node.kwargs) != 2 or dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return n // 2 if [d % ndim for d in dims] == [ndim - 2] else None


def _mode_block(index: Any, shape: tuple[int, ...]) -> tuple[range, range] | None:
    """The (rows, columns) of the last two dims an index tuple takes, if it is contiguous
    slices there and full slices elsewhere."""
    if not isinstance(index, tuple) or len(index) != len(shape):
        return None
    if any(s != slice(None) for s in index[:-2]):
        return None
    if not all(isinstance(s, slice) and s.step in (None, 1) for s in index[-2:]):
        return None
    rows, cols = (range(*s.indices(size)) for s, size in zip(index[-2:], shape[-2:]))
    return (rows, cols) if len(rows) and len(cols) else None


def _truncation(n: int, m: int, kept_rows: int, kept_cols: int) -> str | None:
    """How a transform of an n x m grid keeping ``kept_rows`` x ``kept_cols`` modes of its
    half spectrum is computed: ``"dft"`` (DFT products over the kept modes), ``"pruned"``
    (the FFTs one axis at a time, the columns pruned between them) or None (the full FFTs).

    The products cost (kept columns) x m per row, then (kept rows) x n per kept column,
    where the FFT costs a few log2(n m) per point at a fraction of a GEMM's rate per
    flop. Measured (``python benchmarks/truncated_spectra.py``, 2026-12-04, quiet machine,
    one thread; the reference FNO layer, batch 8, 32 channels, forward and backward;
    full / truncated time): grid 32 with 4, 8, 16 rows and 2, 4, 8 columns kept: 1.58x,
    1.13x, 1.20x; grid 64 with 8, 16, 32 rows: 2.28x, 1.53x, **0.91x**; grid 128 with
    16, 32, 64 rows: 1.58x, **0.96x**, **0.70x** (columns half the rows each time).
    neuraloperator's FNO (grid 64, 16 rows and 9 columns) gains 1.25x. The bound
    below, at most 2 log2(n m) rows and log2(n m) columns, takes every point that
    won and none that lost; half of an axis was the previous bound, and took
    the three that lost. Pruning the columns saves the column FFTs of the modes that
    are dropped (at most half of the columns kept). Measured the same way on
    2026-12-06 (AMD EPYC, 15 reps; products / pruned / full, ms), where the rule
    picks pruning: grid 64, 32 rows: 12.82 / 12.71 / 14.97; grid 128, 32 rows:
    33.49 / 32.86 / 38.08; 64 rows: 72.49 / 70.54 / 76.07. Where it picks the
    products, pruning measured within 5% of them (either way) but at grid 32 with
    4 rows, 1.62 against 1.32 ms.
    """
    half = m // 2 + 1
    if min(n, m) < _MIN_LENGTH or kept_cols > _MAX_KEPT_FRACTION * half:
        return None
    levels = math.log2(n * m)
    if kept_rows <= _MAX_KEPT_FRACTION * n and kept_rows <= 2 * levels and kept_cols <= levels:
        return "dft"
    return "pruned"


def _truncate_forward(gm: fx.GraphModule, fft: fx.Node) -> str | None:
    shape = _static_shape(fft.args[0]) if fft.args else None
    value = fft.args[0].meta.get("example_value") if shape else None
    if shape is None or len(shape) < 2 or value.dtype not in (torch.float32, torch.float64):
        return None
    call = _fft_call(fft, len(shape))
    if call is None or call[0] is not None:
        return None
    norm = call[1]
    n, m = shape[-2:]
    spectrum, shift = fft, 0
    shifter = _sole_user(fft)
    if shifter is not None and shifter.target in _FFTSHIFT:
        found = _shift_of(shifter, n, len(shape))
        if found is None:
            return None
        spectrum, shift = shifter, found
    out_shape = (*shape[:-1], m // 2 + 1)
    blocks = []
    for user in spectrum.users:
        if user.target is not operator.getitem or len(user.args) != 2 or user.kwargs:
            return None
        block = _mode_block(user.args[1], out_shape)
        if block is None:
            return None
        blocks.append((user, block))
    if not blocks:
        return None
    freqs = [tuple((p - shift) % n for p in rows) for _, (rows, _) in blocks]
    all_rows = tuple(f for fs in freqs for f in fs)
    cols = max(c.stop for _, (_, c) in blocks)
    strategy = _truncation(n, m, len(all_rows), cols)
    if strategy is None:
        return None
    shifted = " after fftshift" if shift else ""
    read = f"rfft2 of {shape}{shifted}: {len(all_rows)} x {cols} of its {n} x {m // 2 + 1} modes read"
    if strategy == "pruned":
        with gm.graph.inserting_before(fft):
            pruned = gm.graph.call_function(pruned_rfft2, (fft.args[0], cols, norm))
        _set_example(pruned, pruned_rfft2, value, cols, norm)
        fft.replace_all_uses_with(pruned)
        gm.graph.erase_node(fft)
        if spectrum is not fft:
            _set_example(spectrum, torch.fft.fftshift, pruned.meta["example_value"], dim=-2)
        for user, block in blocks:  # (a column slice counted from the end would move)
            user.args = (user.args[0], _explicit_block(len(shape), block))
        return f"{read}, computed as FFTs of the first {cols} columns only (Note [Truncated spectra])"
    with gm.graph.inserting_before(fft):
        kept = gm.graph.call_function(truncated_rfft2, (fft.args[0], all_rows, cols, norm))
    start = 0
    for (user, (_, cols_range)), fs in zip(blocks, freqs):
        index = (
            *(slice(None),) * (len(shape) - 2),
            slice(start, start + len(fs)),
            slice(cols_range.start, cols_range.stop),
        )
        start += len(fs)
        with gm.graph.inserting_before(user):
            part = gm.graph.call_function(operator.getitem, (kept, index))
        part.meta.update(user.meta)
        user.replace_all_uses_with(part)
        gm.graph.erase_node(user)
    for dead in (spectrum, fft) if spectrum is not fft else (fft,):  # (users first)
        gm.graph.erase_node(dead)
    return f"{read}, computed as DFT products over those (Note [Truncated spectra])"


def _truncate_inverse(gm: fx.GraphModule, ifft: fx.Node) -> str | None:
    source = ifft.args[0] if ifft.args else ifft.kwargs.get("input")
    shape = _static_shape(source)
    if shape is None or len(shape) < 2:
        return None
    call = _fft_call(ifft, len(shape))
    if call is None:
        return None
    s, norm = call
    n, half = shape[-2:]
    m = 2 * (half - 1) if s is None else s[-1]
    if s is not None and (len(s) != 2 or s[0] != n or m // 2 + 1 != half):
        return None  # (padding or cropping along an axis: not this pattern)
    zeros, shift = source, 0
    if source.target in _FFTSHIFT and len(source.users) == 1:
        found = _shift_of(source, n, len(shape))
        if found is None:
            return None
        zeros, shift = source.args[0], found
    if not (isinstance(zeros, fx.Node) and zeros.target is torch.zeros and _static_shape(zeros) == shape):
        return None
    if zeros.meta["example_value"].dtype not in (torch.complex64, torch.complex128):
        return None
    writes, taken = [], set()
    for user in zeros.users:
        if user is (source if source is not zeros else ifft):
            continue
        if user.target is not operator.setitem or user.args[0] is not zeros or len(user.args) != 3:
            return None
        block = _mode_block(user.args[1], shape)
        value = user.args[2]
        if block is None or _static_shape(value) != (*shape[:-2], len(block[0]), len(block[1])):
            return None
        if value.meta["example_value"].dtype != zeros.meta["example_value"].dtype:
            return None
        cells = {(r, c) for r in block[0] for c in block[1]}
        if cells & taken:
            return None  # (overlapping writes: the later one wins, not modelled)
        taken |= cells
        writes.append((user, block, value))
    if not writes or len(zeros.users) != len(writes) + 1:
        return None
    kept_rows = len({r for _, (rows, _), _ in writes for r in rows})
    kept_cols = max(c.stop for _, (_, c), _ in writes)
    strategy = _truncation(n, m, kept_rows, kept_cols)
    if strategy is None or (strategy == "pruned" and not set(zeros.kwargs) <= _ZEROS_KEYWORDS):
        return None
    shifted = " through fftshift" if shift else ""
    written = f"irfft2 to {(*shape[:-1], m)} of zeros but {kept_rows} x {kept_cols} of its {n} x {half} modes{shifted}"
    if strategy == "pruned":
        with gm.graph.inserting_before(zeros):
            narrow = gm.graph.call_function(torch.zeros, ((*shape[:-1], kept_cols),), dict(zeros.kwargs))
        _set_example(narrow, torch.zeros_like, zeros.meta["example_value"][..., :kept_cols])
        zeros.replace_all_uses_with(narrow)
        gm.graph.erase_node(zeros)
        for user, block, value in writes:  # (a column slice counted from the end would move)
            user.args = (narrow, _explicit_block(len(shape), block), value)
        if source is not zeros:
            _set_example(source, torch.fft.fftshift, narrow.meta["example_value"], dim=-2)
        with gm.graph.inserting_before(ifft):
            result = gm.graph.call_function(pruned_irfft2, (narrow if source is zeros else source, m, norm))
        result.meta.update(ifft.meta)
        ifft.replace_all_uses_with(result)
        gm.graph.erase_node(ifft)
        return f"{written}: computed as FFTs of the first {kept_cols} columns only (Note [Truncated spectra])"
    values = [v for _, _, v in writes]
    freqs = [tuple((p + shift) % n for p in rows) for _, (rows, _), _ in writes]
    col0 = [cols.start for _, (_, cols), _ in writes]
    with gm.graph.inserting_before(ifft):
        result = gm.graph.call_function(truncated_irfft2, (values, freqs, col0, n, m, norm))
    result.meta.update(ifft.meta)
    ifft.replace_all_uses_with(result)
    gm.graph.erase_node(ifft)
    if source is not zeros:
        gm.graph.erase_node(source)
    for user, _, _ in writes:
        gm.graph.erase_node(user)
    gm.graph.erase_node(zeros)
    return f"{written}: computed as DFT products over those (Note [Truncated spectra])"


def truncated_spectra(gm: fx.GraphModule, rewrites: list[str] | None = None) -> int:
    """Note [Truncated spectra] on Dynamo's graph; returns how many transforms were replaced
    (and describes each in ``rewrites``, for ``torchcx.explain``)."""
    done = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in _RFFT2:
            done.append(_truncate_forward(gm, node))
        elif node.target in _IRFFT2:
            done.append(_truncate_inverse(gm, node))
    described = [text for text in done if text is not None]
    if rewrites is not None:
        rewrites.extend(described)
    return _recompiled(gm, len(described))


#: The functions these passes put in Dynamo's graphs, which AOTAutograd's cache must be told
#: are safe to key on (Note [torchcx graphs in AOTAutograd's cache], backend.py).
DYNAMO_GRAPH_FUNCTIONS = (einsum_small_in_place, truncated_rfft2, truncated_irfft2, pruned_rfft2, pruned_irfft2)


def _layout_order(t: Tensor) -> list[int] | None:
    """``t``'s dims from outermost to innermost in memory, where its layout is static, dense and
    non-overlapping (else None)."""
    from torch._prims_common import (
        compute_elementwise_output_logical_to_physical_perm,
        is_non_overlapping_and_dense_or_false,
    )

    if not all(isinstance(v, int) for v in (*t.shape, *t.stride())) or not is_non_overlapping_and_dense_or_false(t):
        return None
    return compute_elementwise_output_logical_to_physical_perm(t)[0]


def gradients_in_input_layout(gm: fx.GraphModule, inputs: Sequence[Any]) -> int:
    """Note [Gradients in their inputs' layout]: a backward graph's complex outputs strided as
    the forward's ``inputs`` (its example inputs, in order) were; returns how many changed."""
    from ._boundary.spec import view_root

    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    gradients = list(output.args[0])
    if len(gradients) != len(inputs):
        return 0
    changed = 0
    for i, (node, primal) in enumerate(zip(gradients, inputs)):
        value = node.meta.get("val") if isinstance(node, fx.Node) else None
        if not (isinstance(value, Tensor) and isinstance(primal, Tensor) and value.is_complex() and value.numel() > 1):
            continue
        order = _layout_order(primal)
        if order is None or value.shape != primal.shape or _layout_order(value) == order:
            continue
        if view_root(node).op == "placeholder":  # a view of an input: no kernel to write it
            continue
        inverse = sorted(range(len(order)), key=order.__getitem__)
        with gm.graph.inserting_before(output):
            permuted = gm.graph.call_function(aten.permute.default, (node, order))
            copied = gm.graph.call_function(aten.clone.default, (permuted,), {"memory_format": torch.contiguous_format})
            restored = gm.graph.call_function(aten.permute.default, (copied, inverse))
        with value.fake_mode:
            permuted.meta["val"] = value.permute(order)
            copied.meta["val"] = permuted.meta["val"].clone(memory_format=torch.contiguous_format)
            restored.meta["val"] = copied.meta["val"].permute(inverse)
        gradients[i] = restored
        changed += 1
    if changed:
        output.args = (tuple(gradients), *output.args[1:])
        gm.recompile()
    return changed
