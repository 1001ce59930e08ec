"""Running PyTorch's OpInfo samples natively and through torchcx, and comparing.

Shared by the eager conformance test (test_opinfo_eager.py) and the compiled
one (test_opinfo_compile.py). Which ops are skipped, expected to fail or
compared with wider tolerances is data: see ``expectations.py``.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import BinaryUfuncInfo, OpInfo, ReductionOpInfo, UnaryUfuncInfo
from torch.utils._pytree import tree_flatten, tree_map

import torchcx
from accuracy import UNIT_ROUNDOFF, can_widen, check_against_reference, widened
from torchcx import ComplexTensor, RealView

COMPLEX_DTYPES = (torch.complex64, torch.complex128)


def _cheap_sample_bookkeeping() -> None:
    """Note [OpInfo's bookkeeping under pytest]

    Every ``op.sample_inputs(...)`` looks for the unittest test running it
    (``extract_test_fn``: ``inspect.stack()``, which reads the source of every frame of
    pytest's deep stack, twice a call) and reseeds before each sample (``torch.manual_seed``,
    which on a machine without CUDA, XPU or MTIA formats a traceback for each, to replay
    the seed at a lazy initialization that never comes). Under pytest the test is never a
    ``unittest.TestCase``, so the search always returns None; and the seed only reaches
    the CPU generator, Python's and NumPy's. The eager low-precision suite spent 157 s of
    its 238 s in these (cProfile, 2026-12-05). The same answers, cheaply: no test function
    (PyTorch's seed, ``SEED``, before each sample, as before) and the same three seeds,
    the accelerators' only where one is initialized. Where these internals moved, nothing
    is replaced.
    """
    import random

    import numpy as np
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    if not all(callable(getattr(m, "extract_test_fn", None)) for m in (common_utils, core)):
        return
    if not callable(getattr(common_utils, "set_rng_seed", None)) or not hasattr(common_utils, "SEED"):
        return

    def extract_test_fn() -> None:
        return None  # (what the stack search finds under pytest)

    def set_rng_seed(seed: int | None = None) -> None:
        seed = common_utils.SEED if seed is None else seed
        if torch.cuda.is_initialized():
            torch.manual_seed(seed)
        else:
            torch.random.default_generator.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)

    common_utils.extract_test_fn = core.extract_test_fn = extract_test_fn
    common_utils.set_rng_seed = set_rng_seed


_cheap_sample_bookkeeping()


def op_id(op: OpInfo) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def complex_ops() -> list[OpInfo]:
    """Every OpInfo that supports complex64 or complex128 on CPU."""
    return [op for op in op_db if set(COMPLEX_DTYPES) & set(op.supported_dtypes("cpu"))]


def family(op: OpInfo) -> str:
    name = op.name
    if name.startswith("fft.") or name in ("stft", "istft"):
        return "fft"
    if name.startswith("linalg.") or name in LINALG_NAMES:
        return "linalg"
    if isinstance(op, ReductionOpInfo) or name in REDUCTION_NAMES:
        return "reductions"
    if isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo)):
        return "pointwise"
    return "other"


LINALG_NAMES = {
    "addbmm",
    "addmm",
    "addmv",
    "addr",
    "baddbmm",
    "bmm",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "dot",
    "einsum",
    "geqrf",
    "inner",
    "kron",
    "logdet",
    "lu",
    "lu_solve",
    "lu_unpack",
    "matmul",
    "matrix_exp",
    "mm",
    "mv",
    "ormqr",
    "outer",
    "pca_lowrank",
    "pinverse",
    "qr",
    "svd",
    "svd_lowrank",
    "tensordot",
    "triangular_solve",
    "vdot",
    "__rmatmul__",
    "nn.functional.linear",
    "cross",
    "trace",
    "norm",
    "corrcoef",
    "cov",
    "nn.functional.conv1d",
    "nn.functional.conv2d",
    "nn.functional.conv3d",
    "nn.functional.conv_transpose1d",
    "nn.functional.conv_transpose2d",
    "nn.functional.conv_transpose3d",
    "sparse.sampled_addmm",
    "block_diag",
    "cartesian_prod",
}
REDUCTION_NAMES = {
    "cumsum",
    "cumprod",
    "logcumsumexp",
    "cumulative_trapezoid",
    "trapezoid",
    "trapz",
    "std_mean",
    "var_mean",
}


# -- converting between native complex and ComplexTensor -----------------------------------


def to_complex_tensor(x: Any) -> Any:
    """Native complex tensors in ``x`` as ComplexTensors over a private copy."""

    def convert(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.is_complex() and not isinstance(t, ComplexTensor):
            return ComplexTensor.from_interleaved(t.detach().clone())
        return t

    return tree_map(convert, x)


def to_native(x: Any) -> Any:
    """ComplexTensors (and RealViews) in ``x`` as ordinary tensors, for comparison."""

    def convert(t: Any) -> Any:
        if isinstance(t, ComplexTensor):
            t = t.detach()
            if t.component_dtype == torch.bfloat16:
                return t.to_interleaved(torch.complex64)
            return t.to_interleaved()
        if isinstance(t, RealView):
            return t.materialize().detach()
        return t

    return tree_map(convert, x)


def clone_inputs(x: Any) -> Any:
    return tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, x)


# -- comparison ----------------------------------------------------------------------------


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """torch.testing's defaults (rtol, atol)."""
    return {
        torch.complex64: (1.3e-6, 1e-5),
        torch.complex128: (1e-7, 1e-7),
        torch.complex32: (1e-3, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
    }.get(dtype, (0.0, 0.0))


def assert_same(
    actual: Any, expected: Any, rtol: float | None, atol: float | None, metadata_only: bool = False
) -> None:
    """Compare nested results: tensors by value (nan == nan), everything else by ==."""
    a_leaves, a_spec = tree_flatten(actual)
    e_leaves, e_spec = tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        raise AssertionError(f"structure differs: {a_spec} vs {e_spec}")
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise AssertionError(f"expected a tensor, got {type(a).__name__}")
            if a.dtype != e.dtype or a.shape != e.shape:
                raise AssertionError(f"metadata differs: {a.dtype}{list(a.shape)} vs {e.dtype}{list(e.shape)}")
            if metadata_only:
                continue
            if e.is_sparse or a.is_sparse:
                a, e = a.to_dense(), e.to_dense()
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True, check_device=True)
        elif isinstance(e, float) and math.isnan(e):
            if not (isinstance(a, (float, complex)) and a != a):
                raise AssertionError(f"expected nan, got {a!r}")
        elif isinstance(e, (float, complex)) and not metadata_only:
            ta, te = torch.tensor(a), torch.tensor(e)
            torch.testing.assert_close(ta, te, rtol=rtol or 1e-6, atol=atol or 1e-6, equal_nan=True, check_dtype=False)
        elif not metadata_only and a != e:
            raise AssertionError(f"values differ: {a!r} vs {e!r}")


# -- running one sample ----------------------------------------------------------------------


class Outcome:
    """The result of running an op's samples: passed, or the first failure."""

    def __init__(self) -> None:
        self.samples = 0
        self.failure: str | None = None


def run_samples(
    op: OpInfo,
    dtype: torch.dtype,
    run: Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any],
    *,
    rtol: float | None,
    atol: float | None,
    metadata_only: bool = False,
    max_samples: int | None = None,
    samples: Iterable[Any] | None = None,
) -> Outcome:
    """Run every sample (the op's, or ``samples``) natively and with ``run`` (which applies
    torchcx), and compare.

    A sample that raises natively must raise through torchcx too (any error).
    """
    outcome = Outcome()
    if samples is None:
        samples = op.sample_inputs("cpu", dtype, requires_grad=False)
    for i, sample in enumerate(samples):
        if max_samples is not None and i >= max_samples:
            break
        pristine = clone_inputs((sample.input, sample.args, sample.kwargs))
        native_in = clone_inputs(pristine)
        try:
            expected = op(native_in[0], *native_in[1], **native_in[2])
            expected_error = None
        except Exception as e:  # noqa: BLE001  (any native error must be matched by one of ours)
            expected, expected_error = None, e
        inputs = clone_inputs((sample.input, sample.args, sample.kwargs))
        outcome.samples += 1
        try:
            actual = run(op, *inputs)
        except Exception as e:  # noqa: BLE001
            if expected_error is not None:
                continue
            outcome.failure = f"sample {i} {_describe_sample(sample)}: {type(e).__name__}: {_first_line(e)}"
            return outcome
        if expected_error is not None:
            outcome.failure = f"sample {i}: eager raised {type(expected_error).__name__} ({_first_line(expected_error)}) but torchcx did not"
            return outcome
        try:
            check_against_reference(
                functools.partial(assert_same, to_native(actual), expected, rtol, atol, metadata_only),
                to_native(actual),
                expected,
                # from a fresh copy of the sample: an in-place op has changed native_in
                functools.partial(native_reference, op, pristine, metadata_only),
                rtol,
                atol,
                conditioning_bound(op_id(op), dtype, pristine),
            )
        except AssertionError as e:
            outcome.failure = f"sample {i} {_describe_sample(sample)}: {_first_line(e, 3)}"
            return outcome
    return outcome


def native_reference(op: Any, sample: tuple[Any, Any, Any], metadata_only: bool) -> Any:
    """The op natively on the sample widened to complex128/float64 (Note [Tolerances from error analysis])."""
    if metadata_only or not can_widen(sample):
        raise ValueError("no wider reference for this sample")
    inp, args, kwargs = widened(sample)
    return op(inp, *args, **kwargs)


def conditioning_bound(name: str, dtype: torch.dtype, sample: tuple[Any, Any, Any]) -> Callable[[Any], Any] | None:
    """The closed-form error bound of expectations.CONDITIONING for this op, if it lists one."""
    from expectations import CONDITIONING

    entry = CONDITIONING.get(name)
    if entry is None or dtype not in UNIT_ROUNDOFF:
        return None
    kappa = entry[0]
    return lambda ref: tree_map(lambda _: 8 * UNIT_ROUNDOFF[dtype] * kappa(*widened(sample)), ref)


def run_eager(op: OpInfo, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The op on ComplexTensor inputs, with every complex op routed through torchcx."""
    inp, args, kwargs = to_complex_tensor((inp, args, kwargs))
    with torchcx.ops.ComplexMode():
        return op(inp, *args, **kwargs)


def _describe_sample(sample: Any) -> str:
    def one(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"{str(x.dtype).replace('torch.', '')}{list(x.shape)}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(one(v) for v in x[:4]) + ("..." if len(x) > 4 else "") + "]"
        return repr(x)[:30]

    parts = [one(sample.input)] + [one(a) for a in sample.args] + [f"{k}={one(v)}" for k, v in sample.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _first_line(e: BaseException, n: int = 1) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return " | ".join(lines[:n])[:400]


# -- the coverage summary printed at the end of a run -----------------------------------------

#: (suite, dtype) -> family -> [passed, total]
COVERAGE: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
FAILURES: dict[tuple[str, str], list[str]] = defaultdict(list)
#: One entry per recorded (suite, op, dtype), for the conformance JSON (see ``write_results``).
RESULTS: list[dict[str, Any]] = []


def record(suite: str, op: OpInfo, dtype: torch.dtype, passed: bool, why: str = "") -> None:
    key = (suite, str(dtype).replace("torch.", ""))
    fam = COVERAGE[key][family(op)]
    fam[1] += 1
    fam[0] += int(passed)
    if not passed:
        FAILURES[key].append(f"{op_id(op)}: {why}")
    RESULTS.append(
        {
            "suite": suite,
            "op": op_id(op),
            "dtype": key[1],
            "family": family(op),
            "status": _status(suite, op, dtype, passed),
            "detail": why,
        }
    )


def _status(suite: str, op: OpInfo, dtype: torch.dtype, passed: bool) -> str:
    """ "pass", "fail", or "xfail"/"skip" when expectations.py lists the op with a reason."""
    from expectations import lookup

    if passed:
        return "pass"
    exp = lookup(suite.split("-")[0], op_id(op), dtype)  # "compiled-real-only" is judged as "compiled"
    return "skip" if exp.skip else "xfail" if exp.xfail else "fail"


#: Set to a path to have the OpInfo suites write every per-op result there as JSON
#: (``tools/gen_supported_ops.py`` turns it into docs/supported-ops.md).
CONFORMANCE_JSON_ENV = "TORCHCX_CONFORMANCE_JSON"


def write_results(path: str, *, merge: bool = False) -> None:
    """Write ``RESULTS`` to ``path`` as JSON, sorted so that reruns diff cleanly.

    With ``merge``, results already in ``path`` are kept unless this run has
    one for the same (suite, op, dtype): a run of one suite, or of a few ops
    (``-k``), updates its rows only.
    """
    import json
    import os

    rows = {(r["suite"], r["op"], r["dtype"]): r for r in RESULTS}
    if merge and os.path.exists(path):
        with open(path) as f:
            for r in json.load(f)["results"]:
                rows.setdefault((r["suite"], r["op"], r["dtype"]), r)
    rows = [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[2], k[1]))]
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "results": rows}, f, indent=1)
        f.write("\n")


def coverage_report() -> str:
    lines = []
    for (suite, dtype), fams in sorted(COVERAGE.items()):
        passed = sum(p for p, _ in fams.values())
        total = sum(t for _, t in fams.values())
        lines.append(f"{suite} {dtype}: {passed}/{total} ops pass ({100.0 * passed / max(total, 1):.1f}%)")
        for name, (p, t) in sorted(fams.items()):
            lines.append(f"    {name:<11} {p:>4}/{t:<4}")
        for failure in FAILURES[(suite, dtype)]:
            lines.append(f"    not passing: {failure}")
    return "\n".join(lines)
