"""The FFT in real arithmetic (Note [FFT in real arithmetic]) against complex128 references.

Direct GEMM lengths, four-step composites, Bluestein primes and the edge
lengths 1, 2, 3; c2c both ways, r2c and c2r; float64, float32, bfloat16 and
float16 parts; eager ComplexTensors and torchcx.compile, with gradients. The
OpInfo suites and tests/test_fft.py run every torch.fft function on both
paths; this file checks the arithmetic itself, tightly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import torchcx
from torchcx import ComplexTensor
from torchcx.ops import fft_real
from torchcx.ops.fft import prefer_real

# Direct (<= 32), four-step (composites, powers of two), Bluestein (primes above
# 32, and 2 * 67 through a four-step stage), and the degenerate lengths.
LENGTHS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 31, 32, 33, 48, 64, 67, 96, 97, 100, 128, 134, 256, 257, 1000, 1024]
CPU = torch.device("cpu")
#: unit roundoff of each part dtype
UNIT = {torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def reference(name: str, x: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """NumPy's complex128 transform (pocketfft): MKL's own complex128 FFT, which torch calls
    here, is off by 1e-14 at lengths with a large prime factor (134 = 2 x 67)."""
    return torch.from_numpy(getattr(np.fft, name)(x.detach().numpy(), **kwargs))


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    return ((got.to(ref.dtype) - ref).abs().norm() / ref.abs().norm()).item()


def signal(*shape: int, dtype: torch.dtype = torch.complex128) -> torch.Tensor:
    g = torch.Generator().manual_seed(math.prod(shape) + len(shape))
    return torch.randn(shape, dtype=dtype, generator=g)


def bound(part: torch.dtype, n: int) -> float:
    """A relative L2 error every length meets: a few units of roundoff per sqrt(stage length)."""
    return 8 * UNIT[part] * max(1.0, math.log2(n))


# -- the transforms on planar parts ----------------------------------------------------------


@pytest.mark.parametrize("part", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_c2c_lengths(n: int, part: torch.dtype) -> None:
    x = signal(3, n)
    plan = fft_real.plan_for(part, CPU)
    for forward in (True, False):
        ref = reference("fft", x) if forward else reference("ifft", x, norm="forward")
        re, im = fft_real.c2c(x.real.to(part), x.imag.to(part), [1], 0, forward, plan)
        assert re.dtype == part
        assert rel_err(torch.complex(re.double(), im.double()), ref) < bound(part, n), (n, forward)


@pytest.mark.parametrize("n", LENGTHS)
def test_r2c_and_c2r_lengths(n: int) -> None:
    plan = fft_real.plan_for(torch.float64, CPU)
    x = signal(2, n, dtype=torch.float64)
    for onesided in (True, False):
        ref = reference("rfft", x) if onesided else reference("fft", x)
        re, im = fft_real.r2c(x, [1], 0, onesided, plan)
        assert rel_err(torch.complex(re, im), ref) < bound(torch.float64, n)
    half = torch.fft.rfft(x)
    half[:, 0] += 1j  # imaginary parts of bin 0 and bin n/2 are ignored, as by every c2r
    if n % 2 == 0:
        half[:, -1] -= 2j
    for norm, mode in (("backward", 2), ("ortho", 1), ("forward", 0)):
        ref = reference("irfft", half, n=n, norm=norm)
        got = fft_real.c2r(half.real, half.imag, [1], mode, n, plan)
        assert rel_err(got, ref) < bound(torch.float64, n), norm


def test_c2r_pads_and_truncates_the_half_spectrum() -> None:
    plan = fft_real.plan_for(torch.float64, CPU)
    half = signal(2, 9)
    for n in (8, 30, 70):  # fewer bins than n // 2 + 1 (zeros), or more (ignored)
        got = fft_real.c2r(half.real, half.imag, [1], 2, n, plan)
        assert rel_err(got, reference("irfft", half, n=n)) < 1e-14


def test_multidim_and_non_last_dims() -> None:
    plan = fft_real.plan_for(torch.float64, CPU)
    x = signal(6, 5, 40)
    re, im = fft_real.c2c(x.real, x.imag, [0, 2], 1, True, plan)
    assert rel_err(torch.complex(re, im), reference("fftn", x, axes=(0, 2), norm="ortho")) < 1e-14
    r = x.real.contiguous()
    re, im = fft_real.r2c(r, [2, 0], 2, True, plan)  # the halved dim is the last one listed
    assert rel_err(torch.complex(re, im), reference("rfftn", r, axes=(2, 0), norm="forward")) < 1e-14
    half = torch.fft.rfftn(r, dim=(0, 1))
    got = fft_real.c2r(half.real, half.imag, [0, 1], 2, 5, plan)
    assert rel_err(got, reference("irfftn", half, s=(6, 5), axes=(0, 1))) < 1e-14


@pytest.mark.parametrize("part", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("n", [8, 64, 100, 257, 4096])
def test_low_precision_parts(n: int, part: torch.dtype) -> None:
    # Against complex128 of the rounded input: one rounding of the result, one of each
    # GEMM stage's operands (bfloat16) and of the DFT matrices; a few units in all.
    x = signal(4, n)
    rounded = torch.complex(x.real.to(part).double(), x.imag.to(part).double())
    plan = fft_real.plan_for(part, CPU)
    re, im = fft_real.c2c(x.real.to(part).float(), x.imag.to(part).float(), [1], 0, True, plan)
    got = torch.complex(re.to(part).double(), im.to(part).double())
    assert rel_err(got, reference("fft", rounded)) < 4 * UNIT[part]


def test_factors() -> None:
    assert fft_real._first_factor(4096, 32) == 16  # 16 x 16 x 16
    assert fft_real._first_factor(4096, 64) == 64  # 64 x 64
    assert fft_real._first_factor(1 << 20, 32) == 32  # 32 x 32 x 32 x 32
    assert fft_real._first_factor(97, 32) == 1  # a prime: Bluestein
    assert fft_real._first_factor(134, 32) == 2  # 2 x 67, 67 by Bluestein
    assert [fft_real._smooth_at_least(n) for n in (1, 7, 11, 129, 193)] == [1, 7, 12, 135, 196]


# -- through torch.fft, eager and compiled -----------------------------------------------------


@pytest.fixture(autouse=True)
def real_path() -> Any:
    with torchcx.config.patch(fft_path="real"):
        yield


def test_torch_fft_on_complex_tensor_uses_no_extern_kernel() -> None:
    x = signal(4, 48, dtype=torch.complex64)

    def f(t: torch.Tensor) -> torch.Tensor:
        return torch.fft.ifft(torch.fft.fft2(t) * 2, norm="ortho")

    report = torchcx.explain(f, x)
    assert report.real_only and not report.externs and not report.fallbacks
    torch.testing.assert_close(torchcx.compile(f)(x), f(x), rtol=1e-5, atol=1e-5)
    eager = f(ComplexTensor.from_interleaved(x.clone()))
    torch.testing.assert_close(eager.to_interleaved(), f(x), rtol=1e-5, atol=1e-5)


def test_vendor_path_is_listed_as_extern() -> None:
    x = signal(4, 48, dtype=torch.complex64)
    with torchcx.config.patch(fft_path="vendor"):
        report = torchcx.explain(torch.fft.fft, x)
    assert report.externs == ["aten._fft_c2c.default"]


def test_constants_are_real_tensors_after_compiling() -> None:
    # A constant first built while a graph is traced must not be cached as a fake tensor.
    fft_real._dft_matrix.cache_clear()
    x = signal(2, 40, dtype=torch.complex64)
    torchcx.compile(torch.fft.fft)(x)
    eager = torch.fft.fft(ComplexTensor.from_interleaved(x.clone()))
    torch.testing.assert_close(eager.to_interleaved(), torch.fft.fft(x), rtol=1e-5, atol=1e-5)


def test_result_strides_are_the_vendor_ffts() -> None:
    # Graphs (stft's backward) and users view the result as the vendor FFT's strides allow.
    x = signal(3, 51, 10, dtype=torch.complex64).transpose(0, 2)
    for fn in (lambda t: torch.fft.fft(t, dim=0), lambda t: torch.fft.fft2(t), lambda t: torch.fft.ihfft(t.real)):
        with torchcx.ops.ComplexMode():
            got = fn(x.clone())
        assert got.stride() == fn(x).stride()
    y = signal(1, 51, 10, dtype=torch.complex64)
    spectrum = torch.fft.fft(ComplexTensor.from_interleaved(y.clone())).view(1, 510)
    torch.testing.assert_close(spectrum.to_interleaved(), torch.fft.fft(y).view(1, 510), rtol=1e-5, atol=1e-5)


def test_symbolic_batch_and_length() -> None:
    def f(t: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft(t) * 2

    x = signal(3, 40, dtype=torch.complex64)
    torch._dynamo.mark_dynamic(x, 0)  # a symbolic batch: the real path
    report = torchcx.explain(f, x)
    assert not report.externs
    torch.testing.assert_close(torchcx.compile(f)(x), f(x), rtol=1e-5, atol=1e-5)
    y = signal(3, 40, dtype=torch.complex64)
    torch._dynamo.mark_dynamic(y, 1)  # a symbolic length: the vendor FFT
    assert torchcx.explain(f, y).externs == ["aten._fft_c2c.default"]
    torch.testing.assert_close(torchcx.compile(f, dynamic=True)(y), f(y), rtol=1e-5, atol=1e-5)


def spectral_layer(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """FNO-style: rfft2, a product on the low modes, irfft2."""
    spectrum = torch.fft.rfft2(x)
    low = spectrum[..., :4, :3] * w
    return torch.fft.irfft2(torch.nn.functional.pad(low, (0, spectrum.shape[-1] - 3)), s=x.shape[-2:])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gradients(compiled: bool) -> None:
    x = signal(2, 12, 10, dtype=torch.float32)
    w = signal(4, 3, dtype=torch.complex64)
    z = signal(3, 20, dtype=torch.complex64)

    def loss(x: torch.Tensor, w: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        a = spectral_layer(x, w).square().sum()
        b = torch.fft.ifft(torch.fft.fft(z, n=24) * torch.fft.fftshift(torch.fft.fft(z, n=24), dim=-1)).abs().sum()
        c = torch.fft.hfft(z, n=30).sum() + torch.fft.ihfft(x, dim=1).abs().sum()
        return a + b + c

    reference = [t.clone().requires_grad_() for t in (x, w, z)]
    expected_grads = torch.autograd.grad(loss(*reference), reference)
    leaves = [x.clone().requires_grad_(), w.clone().requires_grad_(), z.clone().requires_grad_()]
    if compiled:
        out = torchcx.compile(loss)(*leaves)
    else:
        with torchcx.ops.ComplexMode():
            out = loss(*leaves)
    grads = torch.autograd.grad(out, leaves)
    for got, want in zip(grads, expected_grads):
        got = got.to_interleaved() if isinstance(got, ComplexTensor) else got
        torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)


def test_low_precision_parts_through_torch_fft() -> None:
    x = signal(3, 64, dtype=torch.complex64)
    for part in (torch.bfloat16, torch.float16):
        planar = ComplexTensor.from_interleaved(x.clone()).with_component_dtype(part)
        out = torch.fft.fft(planar)
        assert isinstance(out, ComplexTensor) and out.component_dtype == part
        reference = torch.fft.fft(planar.to_interleaved(torch.complex128))
        assert rel_err(out.to_interleaved(torch.complex64), reference) < 4 * UNIT[part]
        compiled = torchcx.compile(torch.fft.fft)(planar)
        assert rel_err(compiled.to_interleaved(torch.complex64), reference) < 4 * UNIT[part]


def test_config_rejects_unknown_path() -> None:
    with torchcx.config.patch(fft_path="cufft"), pytest.raises(ValueError, match="fft_path"):
        torch.fft.fft(ComplexTensor.from_interleaved(signal(4, dtype=torch.complex64)))


# -- the path rule (Note [FFT path selection]) ---------------------------------------------------

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
PARTS = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: Ratios (vendor time / real time) this close to 1 are within the run-to-run noise of a loaded machine.
TIE = (0.85, 1.15)


def measured(name: str) -> list[dict[str, Any]]:
    return json.loads((RESULTS / name).read_text())["records"]


def test_rule_picks_the_faster_path_of_the_committed_benchmark() -> None:
    # Every (part, length, batch) of the power-of-two grid whose winner is clear.
    wrong = []
    for r in measured("fft_paths_cpu.json"):
        if TIE[0] < r["real_vs_vendor"] < TIE[1]:
            continue
        if prefer_real(CPU, PARTS[r["part"]], [r["n"]], r["batch"]) != (r["real_vs_vendor"] > 1):
            wrong.append(r)
    assert not wrong


def test_rule_never_picks_a_clearly_slower_real_path_at_other_lengths() -> None:
    # Bluestein and mixed-radix lengths: the rule may leave a win to the vendor FFT
    # (4099 at batch 1, docs/fft.md), but must not choose the real path where it lost.
    for r in measured("fft_paths_cpu_odd_lengths.json"):
        if prefer_real(CPU, PARTS[r["part"]], [r["n"]], r["batch"]):
            assert r["real_vs_vendor"] > TIE[0], r


def test_rule_explicit_cases() -> None:
    f32, bf16 = torch.float32, torch.bfloat16
    assert prefer_real(CPU, f32, [1024], 8) and not prefer_real(CPU, f32, [1024], 9)
    # a single power-of-two transform, where the vendor FFT plans on every call
    assert prefer_real(CPU, f32, [1 << 16], 1) and not prefer_real(CPU, f32, [1 << 16], 2)
    assert not prefer_real(CPU, f32, [1 << 18], 1)
    # multi-dim transforms count all their points; a symbolic-free batch of 1 counts as 1
    assert prefer_real(CPU, f32, [64, 64], 2) and not prefer_real(CPU, f32, [64, 64], 4)
    # Bluestein (257: a convolution of length 525 done twice) costs its convolution,
    # and at bfloat16 runs float32 GEMMs, so it takes float32's threshold.
    assert prefer_real(CPU, f32, [257], 7) and not prefer_real(CPU, f32, [257], 8)
    assert prefer_real(CPU, bf16, [256], 256) and not prefer_real(CPU, bf16, [257], 16)
    # Other devices: the vendor FFT until measured there.
    for part in PARTS.values():
        assert not prefer_real(torch.device("cuda"), part, [64], 16)


def test_auto_routes_by_the_rule() -> None:
    with torchcx.config.patch(fft_path="auto"):
        small = torchcx.explain(torch.fft.fft, signal(4, 64, dtype=torch.complex64))
        large = torchcx.explain(torch.fft.fft, signal(32, 1024, dtype=torch.complex64))
    assert not small.externs and large.externs == ["aten._fft_c2c.default"]


@pytest.mark.parametrize("n", [8, 100, 1026, 4096, 8198])  # direct, four-step, Bluestein within
def test_bins_real_by_symmetry_are_exactly_real(n: int) -> None:
    # DC and Nyquist of a real signal: exact zeros as in eager and NumPy (an angle() after
    # them must give 0 or pi exactly as eager's, not +-pi from a 1e-16 of either sign).
    x = torch.randn(3, n, generator=torch.Generator().manual_seed(n))
    half, full = torchcx.compile(lambda t: (torch.fft.rfft(t), torch.fft.fft(t)))(x)
    bins = [0, n // 2] if n % 2 == 0 else [0]
    for spectrum, eager in ((half, torch.fft.rfft(x)), (full, torch.fft.fft(x))):
        assert torch.equal(spectrum.imag[:, bins], torch.zeros(3, len(bins)))
        assert torch.equal(spectrum[:, bins].angle(), eager[:, bins].angle())
