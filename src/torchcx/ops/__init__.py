"""Op tables: how each aten op is computed on the real parts of a ComplexTensor.

One module per op family, each a table of implementations registered with
``@register`` or a family decorator from ``_common``; every entry is an
``OpEntry`` recording its kind and family, and ``entry_for(op)`` says how any
aten overload is computed. Adding an op means adding it to its family's table;
the OpInfo conformance tests find it automatically. See Note [How an op is
resolved] in ``_registry``.
"""

import torch

from ..tensor import install_ops
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
