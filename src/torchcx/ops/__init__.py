"""Op tables: how each aten op is computed on the real parts of a ComplexTensor.

One module per op family, each a table of implementations registered with
``@register`` or a family decorator from ``_common``; every entry is an
``OpEntry`` recording its kind and family, and ``entry_for(op)`` says how any
aten overload is computed. Adding an op means adding it to its family's table;
the OpInfo conformance tests find it automatically. See Note [How an op is
resolved] in ``_registry``.
"""

from collections.abc import Callable
from typing import Any

import torch

from ..tensor import ComplexTensor, RealView, install_ops
from . import comparison, creation, extern, fft, indexing, linalg, native_gradients, pointwise, reductions, views  # noqa: F401  (registers the tables)

if torch.distributed.is_available():  # collectives on the parts (a torch built without distributed has no c10d ops)
    from . import distributed  # noqa: F401
from ._registry import (
    ComplexMode,
    OpEntry,
    describe_args,
    dispatch,
    entry_for,
    register,
    registered_ops,
    resolve,
    table,
)
from .creation import to_component_dtype
from .views import dispatch_real_view

install_ops(dispatch, dispatch_real_view, to_component_dtype)


def invoke_subgraph_impl(subgraph: Callable[..., Any], identifier: str, *operands: Any) -> Any:
    """A nested compile region called on ComplexTensors (a program on bfloat16 parts, which
    AOTAutograd traces through the types): its body runs inline, each op through the tables,
    as in eager. Such a region is traced and compiled at each call: only regions of native
    complex graphs become one real subgraph (Note [Nested compile regions])."""
    return subgraph(*operands)


for _type in (ComplexTensor, RealView):
    torch.ops.higher_order.invoke_subgraph.py_impl(_type)(invoke_subgraph_impl)

__all__ = [
    "ComplexMode",
    "OpEntry",
    "describe_args",
    "dispatch",
    "entry_for",
    "register",
    "registered_ops",
    "resolve",
    "table",
    "to_component_dtype",
]
