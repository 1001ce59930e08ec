"""gradcheck and gradgradcheck on ComplexTensor, complex128, across the op families.

``torch.autograd.gradcheck`` compares the gradients torchcx computes (PyTorch's
derivative formulas dispatching to torchcx's ops) with finite differences of
torchcx's own forward, under torch's complex convention (it perturbs the real
and imaginary parts separately). ``gradgradcheck`` does the same for the
backward pass itself, i.e. double backward. Inputs come from PyTorch's OpInfo
samples (the first few of each op), through the op's ``gradcheck_wrapper`` and
the sample's ``output_process_fn_grad``, as PyTorch's own gradient tests do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._pytree import tree_flatten, tree_unflatten

import torchcx
from opinfo_harness import family, op_id
from torchcx import ComplexTensor

DTYPE = torch.complex128
SAMPLES_PER_OP = 2
#: Ops with real inputs and complex results, checked with float64 inputs.
REAL_INPUT_OPS = {"polar", "fft.rfft", "fft.ihfft"}

#: The ops checked, by OpInfo id, chosen to cover every family and the kinds of
#: derivative formula: holomorphic, non-holomorphic (abs, angle, conj, real/imag),
#: real inputs with complex outputs (polar, rfft), views, scatters, reductions
#: with a backward that divides (prod), LAPACK-backed linear algebra and FFTs.
GRADCHECK_OPS: dict[str, list[str]] = {
    "pointwise": [
        "exp",
        "log",
        "sin",
        "tanh",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "sigmoid",
        "asinh",
        "atan",
        "abs",
        "angle",
        "sgn",
        "conj_physical",
        "mul",
        "div.no_rounding_mode",
        "pow",
        "polar",
        "expm1",
    ],
    "reductions": ["sum", "mean", "prod", "cumsum", "cumprod", "var", "linalg.vector_norm", "logsumexp"],
    "views": ["reshape", "permute", "diagonal", "unbind", "view_as_real", "real", "imag", "conj"],
    "indexing": ["index_select", "gather", "scatter", "cat", "where", "masked_fill", "flip", "index_put"],
    "linalg": [
        "mm",
        "bmm",
        "matmul",
        "addmm",
        "nn.functional.linear",
        "nn.functional.conv2d",
        "linalg.inv",
        "linalg.det",
        "linalg.solve",
        "linalg.eigh",
    ],
    "fft": ["fft.fft", "fft.ifft", "fft.fft2", "fft.rfft", "fft.irfft", "fft.ihfft"],
}

_BY_ID = {op_id(op): op for op in op_db}
CASES = [(fam, _BY_ID[name]) for fam, names in GRADCHECK_OPS.items() for name in names]


def dtype_of(op: OpInfo) -> torch.dtype:
    return torch.float64 if op_id(op) in REAL_INPUT_OPS else DTYPE


def as_complex_tensor(t: torch.Tensor) -> torch.Tensor:
    return ComplexTensor.from_interleaved(t) if t.is_complex() else t


def gradcheck_inputs(op: OpInfo) -> list[tuple[Callable[..., Any], list[torch.Tensor]]]:
    """(function of the differentiable tensors, those tensors as ComplexTensor or real) per sample."""
    cases = []
    for sample in op.sample_inputs("cpu", dtype_of(op), requires_grad=True):
        leaves = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
        if any(isinstance(x, torch.Tensor) and x.requires_grad for x in leaves):
            cases.append(sample_function(op, sample))
        if len(cases) == SAMPLES_PER_OP:
            break
    assert cases, f"{op_id(op)} has no sample with an input requiring grad"
    return cases


def sample_function(op: OpInfo, sample: SampleInput) -> tuple[Callable[..., Any], list[torch.Tensor]]:
    """The sample as a function of its tensors that require grad, and those tensors (private copies)."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    diff = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
    leaves = [as_complex_tensor(x.detach().clone()) if isinstance(x, torch.Tensor) else x for x in leaves]
    tensors = [leaves[i].requires_grad_() for i in diff]

    def fn(*ts: torch.Tensor) -> Any:
        filled = list(leaves)
        for i, t in zip(diff, ts):
            filled[i] = t
        inp, args, kwargs = tree_unflatten(filled, spec)
        # real inputs with complex results (polar, rfft) are routed to torchcx too
        with torchcx.ops.ComplexMode():
            return sample.output_process_fn_grad(op.gradcheck_wrapper(op.get_op(), inp, *args, **kwargs))

    return fn, tensors


def test_covers_at_least_30_ops_in_every_family():
    assert len(CASES) >= 30
    assert {family(op) for _, op in CASES} >= {"pointwise", "reductions", "linalg", "fft", "other"}
    assert all(dtype_of(op) in op.supported_backward_dtypes("cpu") for _, op in CASES)


@pytest.mark.parametrize("fam,op", CASES, ids=[f"{fam}-{op_id(op)}" for fam, op in CASES])
def test_gradcheck(fam, op):
    for fn, tensors in gradcheck_inputs(op):
        assert torch.autograd.gradcheck(fn, tensors, check_undefined_grad=False, fast_mode=True)


@pytest.mark.parametrize("fam,op", CASES, ids=[f"{fam}-{op_id(op)}" for fam, op in CASES])
def test_gradgradcheck(fam, op):
    if not op.supports_gradgrad:
        pytest.skip(f"{op_id(op)}: PyTorch has no double backward for it")
    for fn, tensors in gradcheck_inputs(op):
        assert torch.autograd.gradgradcheck(fn, tensors, fast_mode=True)


class _WrongGradient(torch.autograd.Function):
    """z -> z * c with the unconjugated (wrong under torch's convention) backward."""

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor) -> torch.Tensor:
        return z * (2 + 1j)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * (2 + 1j)  # should be grad * conj(2 + 1j)


@pytest.mark.parametrize("fast_mode", [True, False], ids=["fast", "full"])
def test_gradcheck_sees_complex_tensor_perturbations(fast_mode):
    """gradcheck really perturbs ComplexTensor inputs: it rejects a wrong complex gradient."""
    z = ComplexTensor.from_interleaved(torch.randn(3, dtype=DTYPE)).requires_grad_()
    assert torch.autograd.gradcheck(lambda z: z * (2 + 1j), (z,), fast_mode=fast_mode)
    with pytest.raises(GradcheckError):
        torch.autograd.gradcheck(_WrongGradient.apply, (z,), fast_mode=fast_mode)
