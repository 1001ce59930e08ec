"""neuraloperator's models, unmodified, through torchcx.compile: one graph each way, eager's values and gradients.

Needs the ``integration`` extra (``pip install -e '.[integration]'``); skipped
without it. Their contractions reach opt_einsum through tensorly, traced as
torch.einsum (Note [opt_einsum as torch.einsum] in _library_support.py).
"""

from __future__ import annotations

import pytest
import torch

import torchcx

pytest.importorskip("neuralop")

from neuralop.layers.spectral_convolution import SpectralConv  # noqa: E402
from neuralop.models import FNO, TFNO  # noqa: E402

# float32 parts. The compiled step differs from eager in the order of its sums: torch.einsum's
# contraction path (opt_einsum's "optimal" in eager), real GEMMs for small products (cgemm in
# eager), fused reductions. Each value is a few sums of at most 8 x 8 x 8 terms, a loss a mean
# over 512-2048 of them: the rounding error is a few hundred units of roundoff (6e-8) of the sum of
# the terms' magnitudes at worst, 1e-5 of it, and the values and gradients here are of order 1
# (atol) or more (rtol). Measured: 1.4e-6 relative at most.
TOL = dict(rtol=1e-4, atol=1e-5)

SHAPE = dict(n_modes=(8, 8), in_channels=3, out_channels=1, hidden_channels=8, n_layers=1)


def fno() -> tuple[torch.nn.Module, torch.Tensor]:
    return FNO(**SHAPE), torch.randn(2, 3, 16, 16)


def tfno() -> tuple[torch.nn.Module, torch.Tensor]:
    return TFNO(**SHAPE), torch.randn(2, 3, 16, 16)  # Tucker-factorized weights, contracted factor by factor


def spectral_conv() -> tuple[torch.nn.Module, torch.Tensor]:
    return SpectralConv(8, 8, n_modes=(8, 8), complex_data=True), torch.randn(2, 8, 16, 16, dtype=torch.complex64)


@pytest.mark.parametrize("build", [fno, tfno, spectral_conv], ids=["FNO", "TFNO", "SpectralConv-complex_data"])
def test_one_graph_each_way_with_eagers_values_and_gradients(build) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model, x = build()
    params = list(model.parameters())
    assert any(p.is_complex() for p in params)

    def loss(x: torch.Tensor) -> torch.Tensor:
        y = model(x)
        return (y.abs() ** 2).mean()

    torch._dynamo.reset()
    report = torchcx.explain(loss, x, backward=True)
    assert report.dynamo_graphs == 1 and not report.graph_breaks and not report.skipped_frames, str(report)
    assert [g.kind for g in report.graphs] == ["forward", "backward"], str(report)
    assert report.real_only and not report.fallbacks and not report.eager_ops, str(report)

    torch._dynamo.reset()
    compiled = torchcx.compile(loss)
    expected = loss(x)
    expected_grads = torch.autograd.grad(expected, params)
    got = compiled(x)
    got_grads = torch.autograd.grad(got, params)
    torch.testing.assert_close(got, expected, **TOL)
    for g, e in zip(got_grads, expected_grads):
        torch.testing.assert_close(g, e, **TOL)
