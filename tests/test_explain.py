"""``torchcx.explain`` tells how much of the complex work was compiled, and names what was not.

The NUFFT that motivated this (issue #15) ran all its complex work in eager, Dynamo
having given up around ``.item()`` and data-dependent shapes, while the report read
"3 graphs, real-only, no fallbacks". The first line now counts the complex ops one
call runs inside compiled graphs against all of them, and the report lists those that
ran in eager, with the lines that ran them.
"""

from __future__ import annotations

import torch

import torchcx


def cplx(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(sum(shape)))


@torch._dynamo.disable
def spread(z: torch.Tensor) -> torch.Tensor:
    """Complex work Dynamo never sees: it runs in eager inside a compiled function."""
    return z * torch.exp(1j * z.abs())


def test_nothing_compiled_says_so_first():
    # A graph break in a loop makes Dynamo skip the whole frame: every complex op runs in
    # eager, and no graph (or a real-only one) reaches Inductor.
    def iterate(z):
        for _ in range(2):
            z = z * torch.exp(1j * z.abs())
            if z.real.sum().item() > 1e6:  # data-dependent control flow: a graph break
                z = z / 2
        return z

    report = torchcx.explain(iterate, cplx(8))
    first = str(report).splitlines()[0]
    assert first.startswith("torchcx.explain: NOTHING complex was compiled: all 10 complex ops ran in eager;")
    assert report.compiled_ops == 0 and report.complex_ops == 10
    assert report.eager_ops == {
        "aten.mul.Tensor": 4,
        "aten.abs.default": 2,
        "aten.exp.default": 2,
        "aten.view_as_real.default": 2,
    }
    assert len(report.skipped_frames) == 1 and "iterate" in report.skipped_frames[0]
    assert all(site.startswith("iterate (") for _, site in report.eager_sites)
    assert "aten.mul.Tensor x4" in str(report)


def test_everything_compiled_forward_and_backward():
    def f(x, y):
        return x * y + torch.exp(1j * x.abs())

    report = torchcx.explain(f, cplx(4, 4), cplx(4, 4))
    assert str(report).splitlines()[0] == ("torchcx.explain: all 5 complex ops compiled; 1 graph(s), 0 graph break(s)")
    assert not report.eager_ops and report.compiled_ops == 5
    # The compiled backward's boundary code (and AOTAutograd's) runs outside Inductor's
    # kernels: it is part of the compiled graphs, not eager work.
    with_backward = torchcx.explain(f, cplx(4, 4).requires_grad_(), cplx(4, 4), backward=True)
    assert not with_backward.eager_ops and with_backward.compiled_ops > 5
    assert str(with_backward).startswith(f"torchcx.explain: all {with_backward.compiled_ops} complex ops compiled;")


def test_mixed_counts_and_names_the_eager_ops():
    def mixed(z):
        y = torch.exp(1j * z.abs())  # graph 1: abs, mul, exp
        torch._dynamo.graph_break()
        w = spread(y)  # eager: abs, mul, exp, mul
        return (w * z).sum()  # graph 2: mul, sum

    report = torchcx.explain(mixed, cplx(8))
    text = str(report)
    first = text.splitlines()[0]
    assert first.startswith("torchcx.explain: 5 of 9 complex ops compiled, 4 ran in eager;")
    assert "graph break(s):" in first and report.graph_breaks
    assert report.eager_ops == {"aten.mul.Tensor": 2, "aten.abs.default": 1, "aten.exp.default": 1}
    assert {site.split(" ")[0] for _, site in report.eager_sites} == {"spread"}
    assert "complex ops that ran in eager" in text and "aten.mul.Tensor x2" in text


def test_eager_backward_is_counted_and_named():
    # The backward of eager code runs eager formulas in the autograd engine: counted, and
    # named by their autograd node (they have no source line of their own).
    def f(z):
        return (spread(z) * z).sum()

    report = torchcx.explain(f, cplx(8).requires_grad_(), backward=True)
    sites = {site for _, site in report.eager_sites}
    assert {"backward of MulBackward0", "backward of ExpBackward0"} <= sites
    assert any(site.startswith("spread (") for site in sites)
    assert 0 < report.compiled_ops < report.complex_ops
