"""torchcx: fast complex numbers under torch.compile.

Complex tensors are carried as two real tensors and every complex op is
decomposed into real ops that Inductor can fuse. See README.md.
"""

from . import config, ops  # noqa: F401  (fills the op tables)
from ._library_support import register_library_support as _register_library_support
from .backend import _register_backend, compile, torchcx_backend
from .explain import ExplainReport, explain
from .export import aoti_compile_and_package, export
from .tensor import (
    COMPONENT_DTYPES,
    ComplexTensor,
    RealView,
    as_complex_tensor,
    complex,
    complex32_parts,
    complex_dtype_of,
    component_dtype_of,
)

__version__ = "0.1.0"

__all__ = [
    "COMPONENT_DTYPES",
    "ComplexTensor",
    "ExplainReport",
    "RealView",
    "aoti_compile_and_package",
    "as_complex_tensor",
    "complex",
    "complex32_parts",
    "compile",
    "complex_dtype_of",
    "component_dtype_of",
    "config",
    "explain",
    "export",
    "torchcx_backend",
]

_register_backend()
_register_library_support()  # Note [opt_einsum as torch.einsum]
