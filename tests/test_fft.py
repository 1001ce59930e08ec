"""The FFT family beyond OpInfo: every torch.fft function with every norm,
padding and truncation (n, s), negative and non-last dims, non-contiguous
inputs; fftshift; stft/istft round trips; float16/bfloat16 parts.

Complex inputs are ComplexTensors; real inputs of ops with complex results
(rfft, ihfft, stft of a real signal) run under ComplexMode, which routes them
to torchcx. Native complex PyTorch is the reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchcx
from torchcx import ComplexTensor
from torchcx.ops import entry_for

aten = torch.ops.aten
NORMS = [None, "backward", "ortho", "forward"]


@pytest.fixture(params=["vendor", "real"], autouse=True)
def fft_path(request: pytest.FixtureRequest) -> Any:
    """Every test on both paths (Note [FFT paths])."""
    with torchcx.config.patch(fft_path=request.param):
        yield request.param


def rand(*shape: int, dtype: torch.dtype = torch.complex64) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    return torch.randn(shape, dtype=dtype, generator=g)


def cx(t: torch.Tensor) -> ComplexTensor:
    return ComplexTensor.from_interleaved(t.clone())


def native(x: Any) -> Any:
    return x.to_interleaved() if isinstance(x, ComplexTensor) else x


def layouts(x: torch.Tensor) -> list[torch.Tensor]:
    """x contiguous, and the same values in a non-contiguous (permuted, strided) tensor."""
    spread = torch.zeros((*reversed(x.shape[:-1]), 2 * x.shape[-1]), dtype=x.dtype)
    spread = spread.permute(*reversed(range(x.dim() - 1)), x.dim() - 1)
    strided = spread[..., ::2]
    strided.copy_(x)
    assert not strided.is_contiguous()
    return [x, strided]


def run(fn: Callable[..., Any], x: torch.Tensor, **kwargs: Any) -> None:
    """fn through torchcx (a ComplexTensor, or a real tensor under ComplexMode) equals fn natively."""
    expected = fn(x, **kwargs)
    if x.is_complex():
        actual = fn(cx(x), **kwargs)
    else:
        with torchcx.ops.ComplexMode():
            actual = fn(x.clone(), **kwargs)
    assert isinstance(actual, ComplexTensor) == expected.is_complex(), type(actual)
    torch.testing.assert_close(native(actual), expected)


# -- one-dimensional transforms ----------------------------------------------------------------

ONE_D = {
    # name: (function, input is complex)
    "fft": (torch.fft.fft, True),
    "ifft": (torch.fft.ifft, True),
    "rfft": (torch.fft.rfft, False),
    "irfft": (torch.fft.irfft, True),
    "hfft": (torch.fft.hfft, True),
    "ihfft": (torch.fft.ihfft, False),
}
# (n, dim): the whole axis, padding, truncation, non-last and negative dims
ONE_D_CASES = [(None, -1), (12, -1), (5, -1), (None, 0), (10, 1), (3, -2)]


@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("name", list(ONE_D))
def test_fft_1d(name: str, norm: str | None) -> None:
    fn, complex_input = ONE_D[name]
    x = rand(4, 8, 6, dtype=torch.complex64 if complex_input else torch.float32)
    for n, dim in ONE_D_CASES:
        for t in layouts(x):
            run(fn, t, n=n, dim=dim, norm=norm)


# -- n-dimensional transforms ----------------------------------------------------------------

N_D = {
    "fft2": (torch.fft.fft2, True),
    "ifft2": (torch.fft.ifft2, True),
    "fftn": (torch.fft.fftn, True),
    "ifftn": (torch.fft.ifftn, True),
    "rfft2": (torch.fft.rfft2, False),
    "rfftn": (torch.fft.rfftn, False),
    "irfft2": (torch.fft.irfft2, True),
    "irfftn": (torch.fft.irfftn, True),
    "hfft2": (torch.fft.hfft2, True),
    "hfftn": (torch.fft.hfftn, True),
    "ihfft2": (torch.fft.ihfft2, False),
    "ihfftn": (torch.fft.ihfftn, False),
}
# (s, dim): default, padding one dim and truncating another, one negative dim, non-last dims
N_D_CASES: list[tuple[Any, Any]] = [
    (None, (-2, -1)),
    ((10, 4), (0, 2)),
    ((3,), (-2,)),
    (None, (0, 1)),
    ((6, 9), (1, 0)),
]


@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("name", list(N_D))
def test_fft_nd(name: str, norm: str | None) -> None:
    fn, complex_input = N_D[name]
    x = rand(4, 8, 6, dtype=torch.complex64 if complex_input else torch.float32)
    for s, dim in N_D_CASES:
        for t in layouts(x):
            run(fn, t, s=s, dim=dim, norm=norm)
    if name.endswith("n"):
        run(fn, x, norm=norm)  # every dim
        run(fn, x, s=(5, 4, 7), norm=norm)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_fft_dtypes_and_out(dtype: torch.dtype) -> None:
    x = rand(3, 10, dtype=dtype)
    run(torch.fft.fft, x)
    run(torch.fft.irfft, x, n=7)
    out = cx(torch.empty(3, 10, dtype=dtype))
    torch.fft.fft(cx(x), out=out)
    torch.testing.assert_close(native(out), torch.fft.fft(x))


def test_fft_primitives_may_call_extern_kernels() -> None:
    # The vendor path runs them as extern kernels (Note [Extern kernels]); the entries say so.
    for op in (aten._fft_c2c.default, aten._fft_r2c.default, aten._fft_c2r.default):
        entry = entry_for(op)
        assert (entry.kind, entry.family, entry.calls_extern) == ("implementation", "fft", True)


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="the layout is for ATen's MKL FFT")
def test_inverse_real_fft_over_two_dims_hands_mkl_its_layout() -> None:
    # Note [Transforms laid out for MKL], its inverse over several dims: the c2c over the leading
    # dim gets the spectrum with that dim innermost (written so by the kernel that makes it).
    from torch._inductor.utils import run_and_get_code

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.fft.irfft2(x * 2, s=(8, 10))

    x = torch.randn(2, 3, 8, 6, dtype=torch.complex64)
    with torchcx.config.patch(fft_path="vendor"):
        got, (code,) = run_and_get_code(torchcx.compile(fn), x)
    torch.testing.assert_close(got, fn(x))
    c2c = next(line for line in code.splitlines() if "'aten::_fft_c2c.default'" in line)
    assert "[2], 2, false]" in c2c  # the inverse over dim 2 alone, "backward" normalization
    spectrum = re.search(r"\[(buf\d+)\]", c2c).group(1)
    assert f"{spectrum} = empty_strided_cpu((2, 3, 8, 6), (144, 48, 1, 8)" in code
    assert '\'aten::_fft_c2r.default\', \'{"args": [{"complex": "torch.complex64", "tensor": 0}, [3]' in code


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="the layout is for ATen's MKL FFT")
@pytest.mark.parametrize("kind", ["c2c", "r2c"])
def test_transform_over_a_middle_dim_hands_mkl_its_layout(kind: str) -> None:
    # Note [Transforms laid out for MKL]: a transform over dim -2 of a row-major tensor would
    # have ATen copy it with a transpose; the kernel that makes the input writes it with that
    # dim innermost instead (the batch dims then collapse into one), and the result is eager's.
    from torch._inductor.utils import run_and_get_code

    def fn(x: torch.Tensor) -> torch.Tensor:
        return (torch.fft.fft if kind == "c2c" else torch.fft.rfft)(x * 2, dim=-2, norm="ortho")

    x = torch.randn(2, 3, 8, 6, dtype=torch.complex64 if kind == "c2c" else torch.float32)
    with torchcx.config.patch(fft_path="vendor"):
        got, (code,) = run_and_get_code(torchcx.compile(fn), x)
    torch.testing.assert_close(got, fn(x))
    call = next(line for line in code.splitlines() if f"'aten::_fft_{kind}.default'" in line)
    operand = re.search(r"\[(buf\d+)\]", call).group(1)
    assert f"{operand} = empty_strided_cpu((2, 3, 8, 6), (144, 48, 1, 8)" in code
    # eager calls interleave into a new row-major tensor: nothing is laid out there
    assert not torchcx.ops.fft._mkl_gets_layout(cx(x) if kind == "c2c" else x)


def test_real_input_outside_complex_mode_is_native() -> None:
    # Without a complex argument torchcx is not involved: eager's own result.
    out = torch.fft.rfft(torch.randn(8))
    assert type(out) is torch.Tensor and out.dtype == torch.complex64


@pytest.mark.parametrize("part", [torch.bfloat16, torch.float16], ids=str)
def test_fft_low_precision_parts(part: torch.dtype) -> None:
    # No vendor FFT for these parts: computed in complex64 and rounded once to the part dtype.
    x = cx(rand(4, 16)).with_component_dtype(part)
    out = torch.fft.fft(x, norm="ortho")
    assert isinstance(out, ComplexTensor) and out.component_dtype == part
    reference = torch.fft.fft(x.to_interleaved(torch.complex64), norm="ortho")
    u = 2.0**-8 if part == torch.bfloat16 else 2.0**-11
    torch.testing.assert_close(out.to_interleaved(torch.complex64), reference, rtol=2 * u, atol=2 * u)
    real = torch.fft.irfft(x, n=30)
    assert real.dtype == part


# -- shifts --------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [torch.fft.fftshift, torch.fft.ifftshift], ids=["fftshift", "ifftshift"])
def test_shifts(fn: Callable[..., Any]) -> None:
    x = rand(5, 4, 7)
    for t in layouts(x):
        for dim in (None, 0, -1, (0, 2), (-2,)):
            run(fn, t, dim=dim)


# -- stft / istft ----------------------------------------------------------------------------


@pytest.mark.parametrize("center", [True, False])
def test_stft_istft_round_trip_complex(center: bool) -> None:
    x = rand(2, 64)
    # without centering a window that vanishes at its ends would not cover the first sample
    window = torch.hann_window(16) if center else torch.ones(16)
    kwargs = {"n_fft": 16, "hop_length": 4, "window": window, "center": center}
    spectrum = torch.stft(cx(x), return_complex=True, **kwargs)
    expected = torch.stft(x, return_complex=True, **kwargs)
    assert isinstance(spectrum, ComplexTensor)
    torch.testing.assert_close(native(spectrum), expected)
    # istft needs ComplexMode, see test_istft_outside_complex_mode_returns_complex_tensor
    with torchcx.ops.ComplexMode():
        back = torch.istft(spectrum, return_complex=True, length=64, **kwargs)
    assert isinstance(back, ComplexTensor)
    torch.testing.assert_close(native(back), torch.istft(expected, return_complex=True, length=64, **kwargs))
    torch.testing.assert_close(native(back), x)


def test_istft_outside_complex_mode_returns_complex_tensor(request: pytest.FixtureRequest, fft_path: str) -> None:
    if fft_path == "vendor":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="istft passes the complex spectrum through view_as_real, then view_as_complex of a plain "
                "real tensor: the vendor FFT's result interleaves its parts, so view_as_real of it is a plain "
                "tensor and outside ComplexMode the result is a native complex tensor, not a ComplexTensor",
            )
        )
    spectrum = torch.stft(cx(rand(64)), n_fft=16, window=torch.hann_window(16), return_complex=True)
    back = torch.istft(spectrum, n_fft=16, window=torch.hann_window(16), return_complex=True)
    assert isinstance(back, ComplexTensor)


def test_istft_gradient_compiled() -> None:
    # The backward of istft without centering computes _fft_r2c of an unfold (an
    # overlapping view): the extern kernel must not be handed it as it is (extern.py, _not_overlapping).
    x = rand(3, 10, 6)
    kwargs = {"n_fft": 10, "center": False}
    cotangent = torch.randn(3, 20, generator=torch.Generator().manual_seed(1))
    leaf = x.clone().requires_grad_()
    (expected,) = torch.autograd.grad(torch.istft(leaf, **kwargs), leaf, cotangent)
    leaf = x.clone().requires_grad_()
    out = torchcx.compile(lambda t: torch.istft(t, **kwargs))(leaf)
    (got,) = torch.autograd.grad(out, leaf, cotangent)
    torch.testing.assert_close(got, expected)


def test_stft_istft_round_trip_real_signal() -> None:
    x = torch.randn(80)
    window = torch.hann_window(20)
    kwargs = {"n_fft": 20, "hop_length": 5, "window": window}
    with torchcx.ops.ComplexMode():
        spectrum = torch.stft(x, return_complex=True, **kwargs)
        assert isinstance(spectrum, ComplexTensor)
        back = torch.istft(spectrum, length=80, **kwargs)
    torch.testing.assert_close(native(spectrum), torch.stft(x, return_complex=True, **kwargs))
    assert type(back) is torch.Tensor and back.dtype == torch.float32
    torch.testing.assert_close(back, x)


# -- OpInfo samples of the ops with real inputs and complex results ------------------------------
# The OpInfo suites run ops that take complex inputs; rfft, ihfft and their n-d forms (and
# stft of a real signal) take real ones. Here: every sample, values and gradients, eager
# under ComplexMode and (the first samples) compiled, on both paths.

REAL_INPUT_OPS = ["fft.rfft", "fft.rfft2", "fft.rfftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn", "stft"]


def _opinfo(name: str) -> Any:
    from torch.testing._internal.common_methods_invocations import op_db

    return next(op for op in op_db if op.name == name)


def _value_and_grad(fn: Callable[..., Any], x: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = x.detach().clone().requires_grad_()
    out = fn(leaf)
    g = torch.Generator().manual_seed(seed)
    # complex results (complex32 ComplexTensors draw complex64 values) or real ones (stft's return_complex=False)
    dtype = out.dtype if out.dtype in (torch.complex128, torch.float32, torch.float64) else torch.complex64
    cotangent = torch.randn(out.shape, dtype=dtype, generator=g)
    if isinstance(out, ComplexTensor):
        cotangent = ComplexTensor.from_interleaved(cotangent.to(out.dtype))
    (grad,) = torch.autograd.grad(out, leaf, cotangent)
    return native(out).detach(), grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", REAL_INPUT_OPS)
def test_real_input_opinfo_samples(name: str, dtype: torch.dtype) -> None:
    op = _opinfo(name)
    for i, sample in enumerate(op.sample_inputs("cpu", dtype)):

        def fn(t: torch.Tensor, sample: Any = sample) -> torch.Tensor:
            return op(t, *sample.args, **sample.kwargs)

        expected, expected_grad = _value_and_grad(fn, sample.input, i)

        def eager(t: torch.Tensor) -> torch.Tensor:
            with torchcx.ops.ComplexMode():
                return fn(t)

        runs = [("eager", eager)] + ([("compiled", torchcx.compile(fn))] if i < 2 and dtype == torch.float32 else [])
        for how, run_fn in runs:
            torch._dynamo.reset()
            value, grad = _value_and_grad(run_fn, sample.input, i)
            torch.testing.assert_close(value, expected, msg=lambda m, how=how, i=i: f"{how} sample {i}: {m}")
            torch.testing.assert_close(grad, expected_grad, msg=lambda m, how=how, i=i: f"{how} sample {i} grad: {m}")
