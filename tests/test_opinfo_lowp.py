"""OpInfo conformance for ComplexTensors with bfloat16 and float16 parts.

PyTorch has no complex dtype with bfloat16 parts and almost no CPU kernels for
``complex32``, so eager PyTorch cannot be the reference here. Instead every
complex64 OpInfo sample is *rounded* to the part dtype (complex inputs become
ComplexTensors with bfloat16/float16 parts, float32 inputs become
bfloat16/float16 tensors), and the op on those inputs is compared with the
op computed natively in complex64 on the very same rounded values, its result
rounded once to the part dtype. That is what Note [dtype of a ComplexTensor]
promises: arithmetic in float32, one rounding per op (PyTorch's opmath for
bfloat16/float16 real tensors).

How close is close enough depends on the op family, because rounding errors
of sums and products are relative to the *inputs'* magnitudes, not the
output's: the rules are data, each with its reason, in ``RULES`` and
``RULE_OF`` below (u is the unit roundoff of the part dtype: 2^-8 for
bfloat16, 2^-11 for float16). Results must also have the right dtypes: where
the complex64 op gives complex64 (float32), the low-precision one gives parts
(a real result) of the part dtype, unless the sample names a dtype itself
(``z.cfloat()``, ``sum(dtype=...)``).

The coverage summary is printed per family and part dtype, as for the other
OpInfo suites: suite ``lowp`` (eager, every sample of every op), and
``lowp-compiled``, which runs the first sample of a representative set of ops
(``COMPILED_OPS``) through ``torchcx.compile`` and checks that the graphs
Inductor lowered are real-only. All pointwise ops, compiled:

    TORCHCX_LOWP_COMPILED_ALL=1 python -m pytest tests/test_opinfo_lowp.py -k compiled -n 2
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch.testing._internal.opinfo.core import OpInfo
from torch.utils._pytree import tree_flatten, tree_map

import torchcx
from compile_harness import record_inductor_graphs, sample_as_function
from expectations import lookup
from lowp_harness import error_in_ulps, high, lowered, rounded
from opinfo_harness import clone_inputs, complex_ops, family, op_id, record
from torchcx import ComplexTensor

PARTS = (torch.bfloat16, torch.float16)
OPS = [op for op in complex_ops() if torch.complex64 in op.supported_dtypes("cpu")]

# -- the comparison rules ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """How close a low-precision result must be to the rounded complex64 reference.

    ``ulps`` is the allowed error in units of u. ``normwise`` measures the
    error of each output tensor against its largest finite modulus (sums and
    products, whose rounding errors scale with the inputs, so that an output
    near zero by cancellation may be off by many of its own ulps); otherwise
    each element's error is measured against its own modulus (a complex
    element's against |z|, as torch.testing compares complex values).
    """

    ulps: float
    normwise: bool
    reason: str


RULES: dict[str, Rule] = {
    "pointwise": Rule(
        4,
        False,
        "computed in float32 and rounded once: the reference rounds the same float32 value, and the two "
        "float32 values (torchcx's formula and eager's complex64 kernel) differ by a few float32 ulps, which "
        "can move a rounding to the next part-dtype number: 1 ulp of the part (2u of its value, at most 2u "
        "of |z|). 4u leaves a factor two for results that are themselves rounded twice (a real result of a "
        "complex op, e.g. abs, angle)",
    ),
    "composite": Rule(
        16,
        True,
        "PyTorch's decomposition of the op into several ops (norms, differences, clamps), each rounded to the "
        "part dtype as PyTorch rounds every op of a bfloat16/float16 real computation, where the reference "
        "rounds once; a difference of two rounded norms (the triplet losses) is accurate relative to the "
        "norms, not to itself: relative to the largest output",
    ),
    "reduction": Rule(
        8,
        True,
        "sums accumulate in float32 and are rounded once (error <= u of the result, plus float32 "
        "accumulation); products, variances and norms are rounded once or twice more. Relative to the "
        "largest output: a sum of terms of mixed signs is accurate relative to the terms, not to itself",
    ),
    "matmul": Rule(
        16,
        True,
        "real GEMMs in the part dtype accumulating in float32, each product rounded once, then combined in "
        "float32 and rounded once more: error <= 2u (|A||B|)_ij per part (Note [Complex GEMM strategies]). "
        "Relative to the largest output, |A||B| exceeds |AB| by about sqrt(k) for random inputs (k <= 25 in "
        "the samples): 16u. Convolutions are sums of products alike; compositions of several products "
        "(matrix_power, chain_matmul, einsum paths) round every intermediate",
    ),
    "fft": Rule(
        16,
        True,
        "an FFT is a sum of n products: its error is relative to the input's norm, i.e. to the largest output "
        "for random inputs. The vendor path computes in complex64 and rounds once (~1u); the real-arithmetic "
        "path (config.fft_path, Note [FFT paths]) multiplies by twiddle factors rounded to the part dtype "
        "in each of log2(n) stages, ~u per stage",
    ),
    "linalg": Rule(
        64,
        True,
        "factorizations run in complex64 (the extern LAPACK kernel) on the rounded input and round their "
        "outputs once; ops composed of a factorization and further products (pinv, matrix powers, lstsq) "
        "round each intermediate to the part dtype, and the error grows with the condition number "
        "(up to ~10 for the OpInfo samples)",
    ),
    "exact": Rule(
        0,
        False,
        "views, indexing, copies and comparisons move or compare values without arithmetic: exact",
    ),
}

#: The rule of each OpInfo family (``opinfo_harness.family``); ``RULE_OF`` overrides per op.
FAMILY_RULES: dict[str, str] = {
    "pointwise": "pointwise",
    "reductions": "reduction",
    "linalg": "linalg",
    "fft": "fft",
    "other": "pointwise",
}

#: Ops whose rule is not their family's, with the reason in the rule.
RULE_OF: dict[str, str] = {
    **dict.fromkeys(
        [
            "addbmm",
            "addmm",
            "addmm.decomposed",
            "addmv",
            "addr",
            "baddbmm",
            "bmm",
            "chain_matmul",
            "dot",
            "einsum",
            "inner",
            "kron",
            "linalg.multi_dot",
            "linalg.vecdot",
            "matmul",
            "mm",
            "mv",
            "nn.functional.bilinear",
            "nn.functional.conv1d",
            "nn.functional.conv2d",
            "nn.functional.conv3d",
            "nn.functional.conv_transpose1d",
            "nn.functional.conv_transpose2d",
            "nn.functional.conv_transpose3d",
            "nn.functional.linear",
            "outer",
            "tensordot",
            "vdot",
            "__rmatmul__",
            "linalg.matrix_power",
            "linalg.cross",
            "cross",
            "linalg.householder_product",
            "cov",
            "corrcoef",
        ],
        "matmul",
    ),
    **dict.fromkeys(["trace", "diff", "gradient", "cumulative_trapezoid", "trapezoid", "trapz"], "reduction"),
    # accumulating index ops: a sum of the values sent to one index, each addition rounded to the part
    # dtype (torch's bfloat16/float16 kernels of these ops, run on each part)
    **dict.fromkeys(
        [
            "index_add",
            "index_put",
            "put",
            "scatter_add",
            "scatter_reduce.sum",
            "scatter_reduce.prod",
            "scatter_reduce.mean",
            "_unsafe_masked_index_put_accumulate",
        ],
        "reduction",
    ),
    **dict.fromkeys(
        ["nn.functional.triplet_margin_loss", "nn.functional.triplet_margin_with_distance_loss"], "composite"
    ),
    **dict.fromkeys(["stft", "istft"], "fft"),
}


def rule_for(op: OpInfo) -> Rule:
    return RULES[RULE_OF.get(op_id(op), RULE_OF.get(op.name, FAMILY_RULES[family(op)]))]


# -- making low-precision samples -------------------------------------------------------------


def _on_tensors(fn: Callable[[torch.Tensor], torch.Tensor], x: Any) -> Any:
    return tree_map(lambda t: fn(t) if isinstance(t, torch.Tensor) and not isinstance(t, ComplexTensor) else t, x)


# -- comparing ----------------------------------------------------------------------------------

#: Ops that name their result dtype: their result keeps it (``z.cfloat()`` is complex64).
NAMED_DTYPE_OPS = frozenset(
    {"bfloat16", "bool", "byte", "cdouble", "cfloat", "chalf", "char", "double", "float", "half", "int", "long"}
    | {"short", "to", "type_as"}
)


def keeps_dtype(op: OpInfo, sample: Any) -> bool:
    """Whether the sample's result dtype is the complex64 one's: it names a dtype, or has no tensor to lower."""
    leaves = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
    if op.name in NAMED_DTYPE_OPS or any(isinstance(x, torch.dtype) for x in leaves):
        return True
    return not any(isinstance(x, torch.Tensor) and x.dtype in (torch.complex64, torch.float32) for x in leaves)


def expected_dtype(reference: torch.Tensor, part: torch.dtype, keeps: bool) -> torch.dtype:
    """The dtype (the part dtype, for a complex result) the low-precision op must give.

    A named complex32 keeps bfloat16 parts: ``z.chalf()``, ``z.to(z.dtype)``
    and ``sum(dtype=z.dtype)`` ask for the dtype z reports, which is complex32
    (Note [dtype of a ComplexTensor]; ``with_component_dtype`` converts parts).
    """
    if keeps:
        if reference.dtype == torch.complex32 and part == torch.bfloat16:
            return part
        return torchcx.component_dtype_of(reference.dtype) if reference.is_complex() else reference.dtype
    if reference.dtype in (torch.complex64, torch.float32):
        return part
    if reference.is_complex():
        return torchcx.component_dtype_of(reference.dtype)
    return reference.dtype


def compare(actual: Any, reference: Any, part: torch.dtype, rule: Rule, keeps: bool, values: bool = True) -> str | None:
    """None if ``actual`` matches the rounded reference under ``rule``, else what differs.

    Without ``values`` only the types, dtypes and shapes are compared (random and uninitialized results).
    """
    a_leaves, _ = tree_flatten(actual)
    e_leaves, _ = tree_flatten(reference)
    if len(a_leaves) != len(e_leaves):
        return f"{len(a_leaves)} outputs, expected {len(e_leaves)}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        if not isinstance(e, torch.Tensor):
            if isinstance(e, (float, complex)) and isinstance(a, (float, complex)):  # item(), a Python number
                a, e = torch.tensor(a), torch.tensor(e)
                if values and _compare_values(a, rounded(e, part), e, part, rule):
                    return f"output {i}: {a.item()!r}, expected {e.item()!r} rounded to {part}"
                continue
            if a != e:
                return f"output {i}: {a!r}, expected {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"output {i}: expected a tensor, got {type(a).__name__}"
        want = expected_dtype(e, part, keeps)
        if isinstance(a, ComplexTensor):
            got = a.component_dtype
        else:
            got = torchcx.component_dtype_of(a.dtype) if a.is_complex() else a.dtype
        if e.is_complex() != (isinstance(a, ComplexTensor) or a.is_complex()) or got != want:
            kind = "complex with parts" if e.is_complex() else "real"
            return f"output {i}: {type(a).__name__} of dtype {got}, expected {kind} {want}"
        if a.shape != e.shape:
            return f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}"
        if not values:
            continue
        e = e.to_dense() if e.is_sparse else e
        why = _compare_values(high(a), rounded(e, part) if want == part else e, e, part, rule)
        if why:
            return f"output {i}: {why}"
    return None


def _compare_values(
    a: torch.Tensor, e: torch.Tensor, unrounded: torch.Tensor, part: torch.dtype, rule: Rule
) -> str | None:
    if not (e.is_floating_point() or e.is_complex()):
        return None if torch.equal(a, e) else "values differ (exact)"
    error = error_in_ulps(a, e, part, rule.normwise, unrounded)
    if error > rule.ulps:
        return f"off by {error:.3g}u (allowed {rule.ulps}u, {'normwise' if rule.normwise else 'elementwise'})"
    return None


# -- running ------------------------------------------------------------------------------------


def run_eager(op: OpInfo, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The op on low-precision inputs, every complex op routed through torchcx's tables."""
    with torchcx.ops.ComplexMode():
        return op(inp, *args, **kwargs)


Runner = Callable[[OpInfo, Any, tuple[Any, ...], dict[str, Any]], Any]


def run_lowp(
    op: OpInfo, part: torch.dtype, run: Runner, rule: Rule, *, values: bool = True, max_samples: int | None = None
) -> str | None:
    """Run the complex64 samples of ``op`` rounded to ``part``; None if all match, else the first failure.

    A sample that raises in complex64 must raise here too (any error).
    """
    for i, sample in enumerate(op.sample_inputs("cpu", torch.complex64, requires_grad=False)):
        if max_samples is not None and i >= max_samples:
            break
        inputs = (sample.input, sample.args, sample.kwargs)
        reference_in = _on_tensors(lambda t: rounded(t, part), clone_inputs(inputs))
        try:
            reference = op(reference_in[0], *reference_in[1], **reference_in[2])
            reference_error = None
        except Exception as e:  # noqa: BLE001  (an error of complex64 must be an error here too)
            reference, reference_error = None, e
        try:
            lowp_in = _on_tensors(lambda t: lowered(t, part), clone_inputs(inputs))
            actual = run(op, *lowp_in)
        except Exception as e:  # noqa: BLE001
            if reference_error is not None:
                continue
            return f"sample {i}: {type(e).__name__}: {_first_line(e)}"
        if reference_error is not None:
            error = f"{type(reference_error).__name__} ({_first_line(reference_error)})"
            return f"sample {i}: complex64 raised {error}, {part} did not"
        why = compare(actual, reference, part, rule, keeps_dtype(op, sample), values)
        if why:
            return f"sample {i}: {why}"
    return None


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return (lines[0] if lines else "")[:300]


def _part_id(part: torch.dtype) -> str:
    return str(part).replace("torch.", "")


def _check(suite: str, op: OpInfo, part: torch.dtype, run: Runner, max_samples: int | None = None) -> None:
    """Run ``op`` in ``suite``, record the outcome for the coverage summary, and assert it."""
    exp = lookup(suite, op_id(op), part)
    if exp.skip:
        record(suite, op, part, False, f"skipped: {exp.skip}")
        pytest.skip(exp.skip)
    failure = run_lowp(op, part, run, rule_for(op), values=not exp.metadata_only, max_samples=max_samples)
    passed = failure is None
    record(suite, op, part, passed, failure or "")
    if exp.xfail:
        if passed:
            pytest.fail(f"{op_id(op)} passes now: remove it from XFAIL ({exp.xfail})")
        pytest.xfail(exp.xfail)
    assert passed, failure


@pytest.mark.parametrize("part", PARTS, ids=_part_id)
@pytest.mark.parametrize("op", OPS, ids=op_id)
def test_opinfo_lowp(op: OpInfo, part: torch.dtype) -> None:
    _check("lowp", op, part, run_eager)


# -- compiled ----------------------------------------------------------------------------------

#: The ops compiled by default, one or two per kind (a compilation takes seconds): arithmetic,
#: transcendental functions and their branch cuts, real results, a reduction, a GEMM, an FFT.
COMPILED_OPS = frozenset(
    {"add", "mul", "div", "exp", "log", "sqrt", "sin", "tanh", "pow", "abs", "angle", "sigmoid"}
    | {"sum", "mean", "mm", "fft.fft", "where", "cat"}
)
COMPILE_ALL = os.environ.get("TORCHCX_LOWP_COMPILED_ALL") == "1"
COMPILED = [op for op in OPS if (family(op) == "pointwise" if COMPILE_ALL else op_id(op) in COMPILED_OPS)]


def run_compiled(op: OpInfo, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The op compiled by torchcx.compile over the sample's tensors; the graphs must be real-only."""
    closure, tensors = sample_as_function(op, inp, args, kwargs)
    torch._dynamo.reset()
    with record_inductor_graphs() as recorder:
        out = torchcx.compile(closure)(*tensors)
    assert not recorder.complex_nodes, f"complex values reached Inductor: {recorder.complex_nodes[:3]}"
    return out


@pytest.mark.parametrize("part", PARTS, ids=_part_id)
@pytest.mark.parametrize("op", COMPILED, ids=op_id)
def test_opinfo_lowp_compiled(op: OpInfo, part: torch.dtype) -> None:
    _check("lowp-compiled", op, part, run_compiled, max_samples=1)
