"""Published complex-valued libraries, traced as one graph: opt_einsum's contractions as ``torch.einsum``.

Note [opt_einsum as torch.einsum]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Libraries built on tensorly (neuraloperator's FNO, TFNO and SpectralConv,
tensorly-torch's factorized layers) contract tensors with ``tl.einsum``, which
neuraloperator routes through ``tensorly.plugins.use_opt_einsum``: a cached
``opt_einsum.contract_expression`` per equation and shapes, then
``expression(*tensors)``. Dynamo cannot trace opt_einsum's path search (its
``contract_path``) nor its evaluation (``opt_einsum.sharing`` asks
``_thread.get_ident``), so every contraction was a graph break, each graph
converting its complex inputs and outputs at the boundary: FNO made 16 graphs
out of one forward and backward, and ran slower than eager.

What those calls compute is an einsum, and ``torch.einsum`` is what Dynamo
puts in a graph as one node. So we register Dynamo polyfills
(``torch.compiler.substitute_in_graph``: what Dynamo traces in place of a
function) for opt_einsum's module-level functions on that path:

* ``contract(subscripts, *operands, ...)``: one ``torch.einsum`` of the same
  arguments (string or interleaved form). Its contraction order is
  ``torch.einsum``'s (``torch.backends.opt_einsum.strategy``, "auto": the
  optimal search for up to four operands), not the one ``optimize=`` asked
  for; the order changes rounding and intermediate sizes, not the value.
* ``contract_expression(subscripts, *shapes, ...)``: on Python constants
  (static shapes) Dynamo calls the real function at trace time, as eager
  would, and reads the expression back through an attribute of
  ``_EXPRESSIONS``, a source it can guard and rebuild when the caller stores
  the expression (tensorly's cache is filled inside the compiled region). On
  a symbolic size, a graph break: the expression is built in eager.
* ``_core_contract(operands, contraction_list, ...)``, where a
  ``ContractExpression``'s call ends (Dynamo applies polyfills to functions,
  not to methods written in Python, so ``__call__`` itself is traced): each
  pairwise step of the expression's path as the ``torch.einsum`` of its
  equation, in the path's order, so the order opt_einsum chose is kept.
* ``infer_backend``/``parse_backend``, which that call asks first (an
  lru_cache Dynamo warns about, then a lazy ``importlib.import_module``, a
  graph break): "torch" for torch tensors, as opt_einsum answers.

Each polyfill does this only when it is the same computation: every operand
a ``torch.Tensor``, no ``out=``, the backend ``"auto"``, ``None`` or
``"torch"``, no numpy ``einsum`` keywords (``dtype=``, ``order=``,
``casting=``), no ``memory_limit`` for ``contract`` (a bound on intermediates
``torch.einsum`` cannot honour; an expression's path already honours it), no
``constants=`` when building an expression (an expression's pre-pass over its
constant operands stays opt_einsum's own), and equations ``torch.einsum`` can
parse (letters ``a-zA-Z``, or sublists of ints below 52). Otherwise it traces
a copy of opt_einsum's own function, exactly what Dynamo did without torchcx
(graph breaks included; ``tests/test_library_support.py`` checks one).

The polyfills are global to Dynamo, not scoped to the torchcx backend: Dynamo
keeps one table of them, read while tracing, before any backend sees a graph.
So ``torch.compile`` with the default backend traces these calls as
``torch.einsum`` too once torchcx is imported (in eager nothing changes: a
polyfill is only what Dynamo traces in place of the function). That is
deliberate, and it is also what makes the default backend a fair comparison in
the benchmarks (one graph each way for both). They are registered at
``import torchcx`` when opt_einsum is installed; torch itself imports
opt_einsum at startup (``torch.backends.opt_einsum``), so importing it here
costs nothing and does not depend on import order. Without opt_einsum nothing
is registered.
"""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["register_library_support"]

# torch.einsum's equation alphabet (aten/src/ATen/native/Linear.cpp: letters only, 52 labels).
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_EQUATION_CHARS = _LETTERS | frozenset(",->. ")

_registered = False


def _copy_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A distinct function object running ``fn``'s code: Dynamo inlines it as it would ``fn``.

    The polyfills fall back to the library's own code through these copies;
    calling the original would be substituted again (Dynamo keys polyfills on
    the function object), and recurse.
    """
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    copy.__qualname__ = fn.__qualname__
    copy.__module__ = fn.__module__
    return copy


def _einsum_can_take(subscripts: Any, operands: tuple[Any, ...]) -> bool:
    """Whether ``torch.einsum(subscripts, *operands)`` is opt_einsum's contraction of the same arguments."""
    if isinstance(subscripts, str):
        return all(isinstance(t, torch.Tensor) for t in operands) and all(c in _EQUATION_CHARS for c in subscripts)
    # The interleaved form: operand, sublist, operand, sublist, ..., [output sublist].
    if not isinstance(subscripts, torch.Tensor):
        return False
    args = (subscripts, *operands)
    tensors, sublists = args[0::2], list(args[1::2])
    if len(args) % 2 == 1:  # an output sublist closes the arguments
        tensors, sublists = tensors[:-1], [*sublists, args[-1]]
    return all(isinstance(t, torch.Tensor) for t in tensors) and all(
        isinstance(s, (list, tuple))
        and all(i is Ellipsis or (isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 52) for i in s)
        for s in sublists
    )


def _constant_index(i: int, n: int) -> int:
    """``i``, a position in a list of ``n``, as a Python int under Dynamo.

    With ``dynamic=True`` Dynamo makes the ints of an object passed into a frame
    symbolic, the positions of a path among them, and a Python list cannot be
    indexed by a symbolic int (an internal error). Comparing it with each
    constant specializes it, with a guard, as any branch on a size does.
    """
    for k in range(n):
        if i == k:
            return k
    raise IndexError(f"opt_einsum path position {i} out of range for {n} operands")


def register_library_support() -> None:
    """Register the polyfills of Note [opt_einsum as torch.einsum] when opt_einsum is installed; idempotent."""
    global _registered
    if _registered:
        return
    _registered = True
    try:
        import opt_einsum  # torch imported it already when installed
    except ImportError:
        return
    try:
        _register_opt_einsum(sys.modules["opt_einsum.contract"])
    except (AttributeError, TypeError, ValueError) as error:
        # Another opt_einsum (its private _core_contract or a signature moved), or polyfills
        # someone else registered first: import torchcx anyway, and say what is lost.
        warnings.warn(
            f"torchcx: opt_einsum {getattr(opt_einsum, '__version__', '?')} is not the one torchcx's polyfills "
            f"were written for ({error}); its contractions will graph-break under torch.compile",
            stacklevel=2,
        )


# Expressions built at trace time (Note [opt_einsum as torch.einsum]), one attribute each: Dynamo
# reads one through its attribute, a source it can guard and rebuild when the caller stores the
# expression (tensorly's cache); a new attribute leaves the guards on the others alone.
_EXPRESSIONS = types.SimpleNamespace()
_EXPRESSION_NAMES: dict[Any, str] = {}


def _register_opt_einsum(oe_contract: types.ModuleType) -> None:
    from torch.compiler import substitute_in_graph

    library_contract = _copy_function(oe_contract.contract)
    library_core_contract = _copy_function(oe_contract._core_contract)
    library_contract_expression = _copy_function(oe_contract.contract_expression)
    library_parse_backend = _copy_function(oe_contract.parse_backend)
    library_infer_backend = _copy_function(oe_contract.infer_backend)

    # ContractExpression.__call__ asks which backend the arrays belong to: an lru_cache Dynamo
    # warns about, then a lazy importlib.import_module of the backend's functions, a graph break.
    # For torch tensors the answer is "torch" (opt_einsum: the class's top-level module name).
    @substitute_in_graph(oe_contract.infer_backend)
    def infer_backend(x: Any) -> str:
        return "torch" if isinstance(x, torch.Tensor) else library_infer_backend(x)

    @substitute_in_graph(oe_contract.parse_backend)
    def parse_backend(arrays: Any, backend: Any) -> str:
        if backend in ("auto", None) and isinstance(arrays[0], torch.Tensor):
            return "torch"
        return library_parse_backend(arrays, backend)

    @substitute_in_graph(oe_contract.contract)
    def contract_as_einsum(
        subscripts: Any,
        *operands: Any,
        out: Any = None,
        use_blas: bool = True,
        optimize: Any = True,
        memory_limit: Any = None,
        backend: Any = "auto",
        **kwargs: Any,
    ) -> Any:
        # use_blas and optimize choose how opt_einsum contracts, not what: torch.einsum decides that.
        if (
            out is None
            and not kwargs
            and memory_limit in (None, -1)
            and backend in ("auto", "torch", None)
            and _einsum_can_take(subscripts, operands)
        ):
            return torch.einsum(subscripts, *operands)
        return library_contract(
            subscripts,
            *operands,
            out=out,
            use_blas=use_blas,
            optimize=optimize,
            memory_limit=memory_limit,
            backend=backend,
            **kwargs,
        )

    @substitute_in_graph(oe_contract._core_contract)
    def core_contract_as_einsum(
        operands_: Any,
        contraction_list: Any,
        backend: Any = "auto",
        evaluate_constants: bool = False,
        out: Any = None,
        **kwargs: Any,
    ) -> Any:
        # The evaluation of a path opt_einsum found (a ContractExpression's call ends here): each
        # pairwise step as the torch.einsum of its equation, in the path's order.
        operands = list(operands_)
        if (
            out is not None
            or evaluate_constants
            or kwargs
            or backend not in ("auto", "torch", None)
            or not all(isinstance(t, torch.Tensor) for t in operands)
            or not all(all(c in _EQUATION_CHARS for c in step[2]) for step in contraction_list)
        ):
            return library_core_contract(
                operands_, contraction_list, backend=backend, evaluate_constants=evaluate_constants, out=out, **kwargs
            )
        for step in contraction_list:
            inds, einsum_str = step[0], step[2]
            picked = []
            for i in inds:  # in decreasing order, as opt_einsum pops them
                picked.append(operands.pop(_constant_index(i, len(operands))))
            operands.append(torch.einsum(einsum_str, *picked))
        return operands[0]

    def expression_name(subscripts: Any, shapes: tuple[Any, ...], options: tuple[tuple[str, Any], ...]) -> str:
        # Called by Dynamo at trace time on Python constants (below): the real path search, as
        # eager would run it; the expression is kept under a name the traced code reads it by.
        key = (subscripts, shapes, options)
        if key not in _EXPRESSION_NAMES:
            name = f"e{len(_EXPRESSION_NAMES)}"
            setattr(_EXPRESSIONS, name, library_contract_expression(subscripts, *shapes, **dict(options)))
            _EXPRESSION_NAMES[key] = name
        return _EXPRESSION_NAMES[key]

    @substitute_in_graph(expression_name, can_constant_fold_through=True)
    def no_expression_name(subscripts: Any, shapes: tuple[Any, ...], options: tuple[tuple[str, Any], ...]) -> None:
        # What Dynamo traces when an argument is not a constant (a symbolic size): no expression.
        return None

    @substitute_in_graph(oe_contract.contract_expression)
    def contract_expression_at_trace_time(
        subscripts: Any,
        *shapes: Any,
        constants: Any = None,
        use_blas: bool = True,
        optimize: Any = True,
        memory_limit: Any = None,
        **kwargs: Any,
    ) -> Any:
        if (
            not constants
            and not kwargs
            and isinstance(subscripts, str)
            and isinstance(optimize, (str, bool))
            and all(isinstance(s, tuple) for s in shapes)
        ):
            options = (("use_blas", use_blas), ("optimize", optimize), ("memory_limit", memory_limit))
            name = expression_name(subscripts, shapes, options)
            if name is not None:
                return getattr(_EXPRESSIONS, name)
            # A symbolic size: no path to search at trace time. Dynamo would trace the search
            # with symbolic sizes and fail on the list indices it yields (an internal error in
            # torch 2.13, with or without torchcx); a graph break builds it in eager instead.
            torch._dynamo.graph_break()
        return library_contract_expression(
            subscripts,
            *shapes,
            constants=constants,
            use_blas=use_blas,
            optimize=optimize,
            memory_limit=memory_limit,
            **kwargs,
        )
