"""What the OpInfo conformance tests expect of each op: data, each with a reason.

Keys are OpInfo ids (``name`` or ``name.variant``); a value applies to every
dtype unless keyed ``(id, dtype)`` (``(suite, id, dtype)`` in XFAIL and SKIP). An op listed in XFAIL is run and must fail
(a pass is reported, so the entry can be removed); SKIP is not run at all.
Neither counts as passing in the coverage summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Results that are not values: compare dtype and shape only.
METADATA_ONLY: dict[str, str] = {
    "empty": "uninitialized memory",
    "empty_like": "uninitialized memory",
    "empty_strided": "uninitialized memory",
    "empty_permuted": "uninitialized memory",
    "new_empty": "uninitialized memory",
    "new_empty_strided": "uninitialized memory",
    "randn": "random numbers: torchcx draws the parts from the same distribution, not the same stream",
    "randn_like": "random numbers",
    "rand_like": "random numbers",
    "normal.in_place": "random numbers",
    "uniform": "random numbers",
    "nn.functional.feature_alpha_dropout.without_train": "random numbers",
    "svd_lowrank": "randomized algorithm",
    "pca_lowrank": "randomized algorithm",
}

# Known failures, with the reason; (suite, id) or id keys. One section per op family.
XFAIL: dict[str | tuple[str, str] | tuple[str, str, torch.dtype], str] = {
    # -- pointwise and comparison --
    # -- reductions --
    # -- indexing, views, creation --
    # (eager only: compiled, a native tensor goes to_sparse outside the graph)
    ("eager", "to_sparse"): "a sparse tensor has no planar form: ComplexTensor.to_sparse raises NotImplementedError "
    "(convert with .to_interleaved() first)",
    # -- linalg and fft --
    ("eager", "sparse.sampled_addmm"): "sparse CSR input: a ComplexTensor has strided parts only "
    "(view_as_real of a sparse tensor fails)",
    # -- compile --
    # -- low precision: float16/bfloat16 parts (test_opinfo_lowp.py) --
    **{
        ("lowp", name): reason
        for reason, names in {
            "PyTorch's own float16/bfloat16 cov is this far off: with aweights and a correction, the "
            "normalization sum(w) - correction * sum(w * aw) / sum(w) cancels, computed in the part dtype "
            "(real bfloat16 torch.cov of sample 37 is 40% off, float16 4%, as here)": ["cov"],
            "torch.rms_norm's C++ composite dispatches on the dtype before any op reaches torchcx and has no "
            "ComplexHalf kernel; a ComplexTensor with float16/bfloat16 parts reports complex32": [
                "nn.functional.rms_norm"
            ],
            "PyTorch's C++ composite checks the dtype before any op reaches torchcx and rejects complex32 "
            "(low precision), which a ComplexTensor with float16/bfloat16 parts reports, as it does for "
            "native complex32": [
                "logdet",
                "norm.nuc",
                "linalg.norm",
                "linalg.norm.subgradients_at_zero",
                "linalg.matrix_norm",
                "linalg.vander",
                "linalg.matrix_rank",
                "linalg.matrix_rank.hermitian",
            ],
            "a sparse tensor has no planar form (as in the eager suite)": ["to_sparse", "sparse.sampled_addmm"],
        }.items()
        for name in names
    },
    **{
        ("lowp", name, torch.bfloat16): reason
        for reason, names in {
            "ATen's complex convolution (C++, before any op reaches torchcx) combines its real convolutions as "
            "re + 1j * im, and torch promotes bfloat16 * 1j to complex64: float32 parts (right values; "
            "float16 parts stay float16, as complex32)": [
                "nn.functional.conv1d",
                "nn.functional.conv2d",
                "nn.functional.conv3d",
                "nn.functional.conv_transpose1d",
                "nn.functional.conv_transpose2d",
                "nn.functional.conv_transpose3d",
            ],
            "torch.randn(..., dtype=A.dtype) names complex32, which is float16 parts outside an op "
            "(Note [dtype of a ComplexTensor]), and mm refuses to mix them with bfloat16 parts": [
                "svd_lowrank",
                "pca_lowrank",
            ],
            "torch.masked computes with dtypes it names from input.dtype (torch.tensor(identity, "
            "dtype=input.dtype), complex32's real counterpart float16) in Python, outside any op: they mean "
            "float16 parts, and mixing them with bfloat16 parts promotes to float32": [
                "masked.sum",
                "masked.prod",
                "masked.mean",
                "masked.var",
                "masked.std",
                "masked.logsumexp",
                "masked.cumsum",
                "masked.cumprod",
            ],
            "linalg.vector_norm(x, dtype=x.dtype) gives float16 (component_dtype_of(complex32)), not x's "
            "bfloat16 parts; linalg_vector_norm_impl would need dtype == x.dtype to mean x's parts, as "
            "reductions' _cast does": ["masked.normalize"],
        }.items()
        for name in names
    },
}

SKIP: dict[str | tuple[str, str], str] = {
    "jiterator_2inputs_2outputs": "CUDA-only jiterator op",
    "jiterator_4inputs_with_extra_args": "CUDA-only jiterator op",
    "jiterator_binary": "CUDA-only jiterator op",
    "jiterator_binary_return_by_ref": "CUDA-only jiterator op",
    "jiterator_unary": "CUDA-only jiterator op",
}

# (rtol, atol, reason) for ops whose decomposition rounds differently from eager's kernel.
TOLERANCE: dict[str | tuple[str, torch.dtype], tuple[float, float, str]] = {
    # -- pointwise and comparison --
    # -- reductions --
    # -- indexing, views, creation --
    # -- linalg and fft --
    **{
        (name, torch.complex64): (
            1.3e-6,
            atol,
            "PyTorch's own OpInfo precision for this op (precisionOverride): the real-arithmetic FFT "
            "(config.fft_path='real') and the vendor FFT are each ~1e-7 (relative L2) from complex128, but "
            "compared with each other elementwise, outputs of magnitude ~50 differ by up to ~4e-5",
        )
        for name, atol in (("fft.hfft", 1e-4), ("fft.hfft2", 2e-4), ("fft.hfftn", 2e-4))
    },
    ("addbmm", torch.complex64): (
        1.2e-3,
        1e-5,
        "PyTorch's own OpInfo tolerance for complex64 addbmm: the sum of batch products (4 real GEMMs) rounds "
        "differently from the native complex kernel; both are ~1e-7 relative to |alpha||A||B| from complex128",
    ),
    ("baddbmm", torch.complex64): (
        1.2e-3,
        1e-5,
        "PyTorch's own OpInfo tolerance for complex64 baddbmm: rounding of 4 real GEMMs vs the native kernel, "
        "both ~1e-7 relative to |alpha||A||B| from complex128",
    ),
}


@dataclass
class Expectation:
    skip: str | None = None
    xfail: str | None = None
    metadata_only: bool = False
    rtol: float | None = None
    atol: float | None = None


def lookup(suite: str, op_id: str, dtype: torch.dtype) -> Expectation:
    exp = Expectation()
    for key in ((suite, op_id, dtype), (suite, op_id), op_id):
        if key in SKIP:
            exp.skip = SKIP[key]
        if key in XFAIL:
            exp.xfail = XFAIL[key]
    exp.metadata_only = op_id in METADATA_ONLY
    for key in ((op_id, dtype), op_id):
        if key in TOLERANCE:
            exp.rtol, exp.atol, _ = TOLERANCE[key]
            break
    return exp


# -- autograd --
# Gradient tolerances of the autograd suites ("autograd-eager", "autograd-compiled" in
# test_autograd_opinfo.py), over the forward ones above. None is needed: a gradient that
# differs from eager's by more than the forward tolerance is judged against complex128
# (Note [Tolerances from error analysis], tests/accuracy.py), as matmul's (sums of 250
# products), logcumsumexp's, householder_product's (products of reflectors, |grad| up to
# 7e3) and lstsq's are.
AUTOGRAD_TOLERANCE: dict[str, tuple[float, float, str]] = {}


# -- conditioning --
# Closed-form conditioning of ops whose samples are ill-conditioned (Note [Tolerances from
# error analysis]): op id -> (kappa(input, args, kwargs) on the complex128 sample, reason). A
# result differing from eager's is then judged by |a - r| <= 8 u kappa |r| + atol.


def _pow_kappa(base: object, exponent: object) -> torch.Tensor:
    z = torch.as_tensor(base, dtype=torch.complex128)
    w = torch.as_tensor(exponent, dtype=torch.complex128)
    return 1 + w.abs() * (1 + z.log().abs())


CONDITIONING: dict[str, tuple[object, str]] = {
    "pow": (
        lambda inp, args, kwargs: _pow_kappa(inp, args[0]),
        "z ** w = exp(w log z): an error of u in log z's parts is u |w| (1 + |log z|) relative in the result "
        "(samples with |z ** w| ~ 1e5: |w log z| ~ 17)",
    ),
    "__rpow__": (
        lambda inp, args, kwargs: _pow_kappa(args[0], inp),
        "z ** w = exp(w log z), as for pow (OpInfo's __rpow__(x, other) is other ** x)",
    ),
}


def lookup_autograd(suite: str, op_id: str, dtype: torch.dtype) -> Expectation:
    """``lookup`` for the autograd suites: a gradient tolerance where one is listed."""
    exp = lookup(suite, op_id, dtype)
    if op_id in AUTOGRAD_TOLERANCE:
        exp.rtol, exp.atol, _ = AUTOGRAD_TOLERANCE[op_id]
    return exp
