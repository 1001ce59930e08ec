"""Rewrites of the real graph torchcx hands to Inductor (after lowering, before compiling).

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
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

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
    if moved:
        gm.graph.lint()
        gm.recompile()
    return moved
