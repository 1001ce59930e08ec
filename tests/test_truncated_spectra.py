"""Note [Truncated spectra]: a 2-D real FFT whose spectrum is only sliced to a few modes, and
an inverse whose input is zeros but for a few modes, computed as DFT products over those
modes, or as FFTs with the columns pruned. Checked against eager (values and gradients),
on the two spellings Fourier neural operators use (the reference FNO's corners;
neuraloperator's fftshift and centered block), every norm, odd lengths, and the cases the
rewrite must leave alone.

Tolerances: a DFT product sums n terms, an FFT log2(n) levels of them; both are backward
stable, with errors of a few units of eps times sqrt(n) times the norm of the data, so at
n <= 48 in float32 the results agree to about 1e-6 of the largest value (atol below is
2e-5 of it, the spread of the summation orders with room for the GEMM's blocking).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import torch

import torchcx
from torchcx._graph_passes import pruned_irfft2, pruned_rfft2, truncated_irfft2, truncated_rfft2, truncated_spectra

NORMS = [None, "backward", "ortho", "forward"]


def _close(actual: torch.Tensor, expected: torch.Tensor, rel: float = 2e-5) -> None:
    scale = max(expected.abs().max().item(), 1e-30)
    torch.testing.assert_close(actual, expected, rtol=rel, atol=rel * scale)


@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("n, m", [(16, 16), (17, 21), (24, 15)])
def test_truncated_transforms_match_the_fft(n: int, m: int, dtype: torch.dtype, norm: str | None) -> None:
    g = torch.Generator().manual_seed(n * m)
    x = torch.randn(3, n, m, dtype=dtype, generator=g)
    # rows: low, high (negative) and middle frequencies; columns up to the Nyquist bin
    rows, cols = (0, 1, n - 1, n // 2), m // 2 + 1
    expected = torch.fft.rfft2(x, norm=norm)[..., list(rows), :cols]
    rel = 2e-5 if dtype == torch.float32 else 1e-12
    _close(truncated_rfft2(x, rows, cols, norm), expected, rel)

    # the inverse, with a DC and a Nyquist column whose imaginary parts c2r must ignore
    complex_dtype = torch.complex64 if dtype == torch.float32 else torch.complex128
    v1 = torch.randn(3, 2, 3, dtype=complex_dtype, generator=g)
    v2 = torch.randn(3, 1, 2, dtype=complex_dtype, generator=g)
    z = torch.zeros(3, n, m // 2 + 1, dtype=complex_dtype)
    z[..., [0, n - 1], :3] = v1
    z[..., [n // 2], m // 2 - 1 :] = v2
    expected = torch.fft.irfft2(z, s=(n, m), norm=norm)
    actual = truncated_irfft2([v1, v2], [(0, n - 1), (n // 2,)], [0, m // 2 - 1], n, m, norm)
    _close(actual, expected, rel)


@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("n, m", [(16, 16), (17, 21), (24, 15)])
def test_pruned_transforms_match_the_fft(n: int, m: int, dtype: torch.dtype, norm: str | None) -> None:
    # the same stages as the 2-D transform, less the columns dropped or zero: agreement to
    # the rounding of the vendor's two plans
    g = torch.Generator().manual_seed(n + m)
    x = torch.randn(3, n, m, dtype=dtype, generator=g)
    rel = 2e-6 if dtype == torch.float32 else 1e-14
    for cols in (1, 3, m // 2 + 1):
        _close(pruned_rfft2(x, cols, norm), torch.fft.rfft2(x, norm=norm)[..., :cols], rel)

    # the inverse, with a DC column whose imaginary part c2r must ignore, and odd m
    complex_dtype = torch.complex64 if dtype == torch.float32 else torch.complex128
    for cols in (1, 3, m // 2 + 1):
        z = torch.randn(3, n, cols, dtype=complex_dtype, generator=g)
        padded = torch.nn.functional.pad(z, (0, m // 2 + 1 - cols))
        _close(pruned_irfft2(z, m, norm), torch.fft.irfft2(padded, s=(n, m), norm=norm), rel)


class ReferenceSpectralConv(torch.nn.Module):
    """The reference FNO's SpectralConv2d (Li et al.): two corners of the half spectrum."""

    def __init__(self, channels: int, modes: int, norm: str | None = None) -> None:
        super().__init__()
        self.modes, self.norm = modes, norm
        g = torch.Generator().manual_seed(modes)
        shape = (channels, channels, modes, modes)
        self.w1 = torch.nn.Parameter(torch.randn(shape, dtype=torch.complex64, generator=g) / channels)
        self.w2 = torch.nn.Parameter(torch.randn(shape, dtype=torch.complex64, generator=g) / channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, n, m = x.shape
        k = self.modes
        x_ft = torch.fft.rfft2(x, norm=self.norm)
        out = torch.zeros(b, self.w1.shape[1], n, m // 2 + 1, dtype=torch.complex64)
        out[:, :, :k, :k] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :k, :k], self.w1)
        out[:, :, -k:, :k] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -k:, :k], self.w2)
        return torch.fft.irfft2(out, s=(n, m), norm=self.norm)


class CenteredSpectralConv(torch.nn.Module):
    """neuraloperator's spelling: rfftn, fftshift along dim -2, a centered block, fftshift back."""

    def __init__(self, channels: int, modes: tuple[int, int], norm: str | None = "forward") -> None:
        super().__init__()
        self.modes, self.norm = modes, norm
        g = torch.Generator().manual_seed(sum(modes))
        self.w = torch.nn.Parameter(torch.randn(channels, channels, *modes, dtype=torch.complex64, generator=g))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, n, m = x.shape
        k1, k2 = self.modes
        x = torch.fft.rfftn(x, norm=self.norm, dim=[-2, -1])
        x = torch.fft.fftshift(x, dim=[-2])
        out = torch.zeros([b, self.w.shape[1], n, m // 2 + 1], dtype=torch.complex64)
        rows = slice(n // 2 - k1 // 2, n // 2 + k1 // 2 + k1 % 2)
        out[:, :, rows, :k2] = torch.einsum("abcd,becd->aecd", x[:, :, rows, :k2], self.w)
        out = torch.fft.fftshift(out, dim=[-2])
        return torch.fft.irfftn(out, s=[n, m], dim=[-2, -1], norm=self.norm)


def _fft_externs(report: Any) -> list[str]:
    return [e for g in report.graphs for e in g.externs if "fft" in e]


def _check_layer(layer: torch.nn.Module, x: torch.Tensor, strategy: str | None, setting: bool = True) -> None:
    def loss(x: torch.Tensor) -> torch.Tensor:
        return layer(x).square().mean()

    # (an FFT left in the graph is then an extern; and the setting as given)
    with torchcx.config.patch(fft_path="vendor", truncated_spectra=setting):
        _check_loss(loss, list(layer.parameters()), x, strategy)


#: How each strategy describes itself in ``torchcx.explain``'s rewrites.
_DESCRIBED = {"dft": "computed as DFT products", "pruned": "computed as FFTs of the first"}


def _check_loss(loss: Any, params: list[torch.Tensor], x: torch.Tensor, strategy: str | None) -> None:
    expected = loss(x)
    expected_grads = torch.autograd.grad(expected, params)
    torch._dynamo.reset()
    actual = torchcx.compile(loss)(x)
    actual_grads = torch.autograd.grad(actual, params)
    _close(actual, expected)
    for a, e in zip(actual_grads, expected_grads):
        _close(a, e)
    # the rewrite takes effect (the DFT products leave no FFT, forward or backward) exactly
    # where it should, and in the way it should
    report = torchcx.explain(loss, x, backward=True)
    assert (_fft_externs(report) == []) == (strategy == "dft"), _fft_externs(report)
    for kind, text in _DESCRIBED.items():
        assert any(text in r for r in report.rewrites) == (kind == strategy), report.rewrites
    assert ("rewritten before differentiation" in str(report)) == (strategy is not None)


@pytest.mark.parametrize("norm", [None, "ortho"], ids=str)  # (every norm: the test above)
def test_reference_fno_layer(norm: str | None) -> None:
    g = torch.Generator().manual_seed(1)
    _check_layer(ReferenceSpectralConv(3, 4, norm), torch.randn(2, 3, 16, 20, generator=g), "dft")
    # 10 of 16 rows: more than the products win with, and the columns are pruned instead
    _check_layer(ReferenceSpectralConv(3, 5, norm), torch.randn(2, 3, 16, 20, generator=g), "pruned")


@pytest.mark.parametrize("n, m", [(16, 16), (19, 17)])
def test_centered_fno_layer(n: int, m: int) -> None:
    g = torch.Generator().manual_seed(2)
    _check_layer(CenteredSpectralConv(3, (5, 4)), torch.randn(2, 3, n, m, generator=g), "dft")
    _check_layer(CenteredSpectralConv(3, (12, 4)), torch.randn(2, 3, n, m, generator=g), "pruned")


def test_wide_blocks_keep_the_fft() -> None:
    # 6 of 9 columns kept: pruning would save little, and the graph keeps the full FFTs
    g = torch.Generator().manual_seed(3)
    _check_layer(CenteredSpectralConv(2, (4, 6)), torch.randn(2, 2, 16, 16, generator=g), None)


def test_setting_off_keeps_the_fft() -> None:
    g = torch.Generator().manual_seed(4)
    _check_layer(ReferenceSpectralConv(2, 4), torch.randn(2, 2, 16, 16, generator=g), None, setting=False)


def _graph(fn: Any, *args: torch.Tensor) -> torch.fx.GraphModule:
    graphs = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend)(*args)
    (gm,) = graphs
    return gm


def test_spectra_used_otherwise_are_left_alone() -> None:
    # the whole spectrum is returned beside the slice; the zeros are read before the inverse;
    # two writes overlap: none is rewritten
    def whole_spectrum(x: torch.Tensor) -> Any:
        s = torch.fft.rfft2(x)
        return s[..., :4, :4] * 2, s

    def zeros_read(v: torch.Tensor) -> Any:
        z = torch.zeros(2, 32, 17, dtype=torch.complex64)
        z[:, :4, :4] = v
        return torch.fft.irfft2(z, s=(32, 32)), z.sum()

    def overlapping(v: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(2, 32, 17, dtype=torch.complex64)
        z[:, :4, :4] = v
        z[:, 2:6, :4] = v
        return torch.fft.irfft2(z, s=(32, 32))

    x, v = torch.randn(2, 32, 32), torch.randn(2, 4, 4, dtype=torch.complex64)
    for fn, arg in [(whole_spectrum, x), (zeros_read, v), (overlapping, v)]:
        gm = _graph(fn, arg)
        assert truncated_spectra(gm) == 0, fn.__name__
        expected, actual = fn(arg), gm(arg)
        for a, e in zip(
            actual if isinstance(actual, tuple) else (actual,), expected if isinstance(expected, tuple) else (expected,)
        ):
            torch.testing.assert_close(a, e)


def test_dft_angles_are_reduced_exactly() -> None:
    # the highest harmonic of a long axis: f*p reaches n^2, and the reduction keeps the angle exact
    from torchcx._graph_passes import _dft_angles

    n = 4096
    angles = _dft_angles(torch.tensor([n - 1]), torch.arange(n), n)
    expected = torch.tensor([((n - 1) * p % n) * 2 * math.pi / n for p in range(n)], dtype=torch.float64)
    torch.testing.assert_close(angles[0], expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "n, rows, cols, strategy",
    [
        # benchmarks/truncated_spectra.py (2026-12-04): the products won against the FFT ...
        (32, 16, 8, "dft"),
        (64, 16, 8, "dft"),
        (64, 16, 9, "dft"),  # neuraloperator's FNO: 16 x 9 modes of a 64 x 64 grid
        (128, 16, 8, "dft"),
        # ... and lost or tied here, where pruning the columns won (2026-12-06)
        (64, 32, 16, "pruned"),
        (128, 32, 16, "pruned"),
        (128, 64, 32, "pruned"),
        # more than half of the columns: the full FFT
        (64, 16, 17, None),
    ],
)
def test_truncation_only_where_it_was_measured_to_win(n: int, rows: int, cols: int, strategy: str | None) -> None:
    def low_modes(x: torch.Tensor) -> torch.Tensor:
        s = torch.fft.rfft2(x)
        return s[:, :rows, :cols] * 2

    x = torch.randn(1, n, n)
    gm = _graph(low_modes, x)
    assert truncated_spectra(gm) == (strategy is not None)
    code = gm.code
    assert ("truncated_rfft2" in code, "pruned_rfft2" in code) == (strategy == "dft", strategy == "pruned"), code
    (actual,) = gm(x)
    torch.testing.assert_close(actual, low_modes(x), rtol=1e-4, atol=1e-4 * n)


def test_pruned_slices_counted_from_the_end_keep_their_modes() -> None:
    # once the columns are cut, a slice counted from the end of the half spectrum would move:
    # the rewrite writes its bounds out
    def forward(x: torch.Tensor) -> torch.Tensor:
        s = torch.fft.rfft2(x)
        return s[:, -40:, 3:-20] * 2

    def inverse(v: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(2, 64, 33, dtype=torch.complex64)
        z[:, -40:, 2:-20] = v
        return torch.fft.irfft2(z, s=(64, 64))

    g = torch.Generator().manual_seed(5)
    x, v = torch.randn(2, 64, 64, generator=g), torch.randn(2, 40, 11, dtype=torch.complex64, generator=g)
    for fn, arg in [(forward, x), (inverse, v)]:
        gm = _graph(fn, arg)
        assert truncated_spectra(gm) == 1 and "pruned_" in gm.code, gm.code
        (actual,) = gm(arg)
        _close(actual, fn(arg), 2e-6)


def test_pruned_inverse_pads_its_columns_without_a_gather() -> None:
    # Note [Truncated spectra]: the kept columns reach the inverse column-major (the layout of
    # the column FFT); padded by irfft itself, Inductor read them back element by element with
    # a mask (``is_masked``), padded by a cat it transposes them in tiles and fills the zeros.
    from torch._inductor.utils import run_and_get_code

    layer = ReferenceSpectralConv(3, 5, None)
    x = torch.randn(2, 3, 16, 20, generator=torch.Generator().manual_seed(4))
    torch._dynamo.reset()
    with torchcx.config.patch(fft_path="vendor"), torch._inductor.config.patch(force_disable_caches=True):
        got, codes = run_and_get_code(torchcx.compile(layer), x)
        assert any(_DESCRIBED["pruned"] in r for r in torchcx.explain(layer, x).rewrites)
    _close(got, layer(x))
    forward = codes[0]
    # the kernel that writes the inverse's input: the last one called before the c2r extern
    call = forward[forward.index("def call(") :]
    kernel = re.findall(r"(cpp_fused_\w+)\(", call[: call.index("_fft_c2r")])[-1]
    source = forward[forward.index(f"{kernel} = ") :]
    source = source[: source.index("''')")]
    assert "transpose_mxn" in source and "is_masked(" not in source, source
