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
views (``select``), each output slice is a sum of at most 16 products, and the
slices of the output are stacked where the einsum puts the small operand's
free axes. torchcx lowers the products to real pointwise ops that Inductor
computes in one pass that writes the output in place of the permutes and
the GEMM. The rounding is that of the sum of products (as NumPy's einsum and
eager's ``einsum`` of non-finite values: docs/limitations.md, "Special values
follow NumPy"); every other einsum keeps eager's decomposition. The
replacement is ``einsum_small_in_place``, a drop-in ``torch.einsum`` that
checks its operands again when it is traced. Its cost is compile time: each
gate's products become up to 16 complex (about 100 real) pointwise nodes, and
a 9-gate circuit compiled 4-5x slower cold than in the bmm form, for run
times within 10% of it; the 30-gate benchmark ran 2.6x faster (both measured
in docs/performance.md, "Quantum gates in the state's layout").
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from typing import Any

import torch
from torch import Tensor, fx

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
    small, ss, big, sb, out = found
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

    def term(at: dict[str, int]) -> Tensor:
        products = [small[tuple({**at, **dict(zip(summed, k))}[c] for c in ss)] * view for k, view in slices.items()]
        return functools.reduce(operator.add, products)

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


def small_contractions_in_place(gm: fx.GraphModule) -> int:
    """Note [Small contractions in place] on Dynamo's graph; returns how many einsums were replaced."""
    replaced = 0
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not torch.functional.einsum or node.kwargs:
            continue
        equation, *operands = node.args
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])  # einsum(eq, [a, b])
        values = tuple(o.meta.get("example_value") if isinstance(o, fx.Node) else o for o in operands)
        if isinstance(equation, str) and _small_contraction(equation, values) is not None:
            node.target = einsum_small_in_place
            node.args = (equation, *operands)
            replaced += 1
    return _recompiled(gm, replaced)
