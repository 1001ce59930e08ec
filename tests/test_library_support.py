"""opt_einsum's contractions traced as torch.einsum (Note [opt_einsum as torch.einsum] in _library_support.py)."""

from __future__ import annotations

import importlib

import pytest
import torch

import torchcx

oe = pytest.importorskip("opt_einsum")

# float32 parts: one contraction of a few terms, in a different order than eager's (opt_einsum's
# path vs torch.einsum's, real GEMMs vs cgemm): a few units of roundoff (6e-8) of the terms' sizes.
TOL = dict(rtol=1e-5, atol=1e-5)


def cplx(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_contract_is_one_graph_in_either_input_form():
    a, b, c = cplx(3, 4), cplx(4, 5), cplx(5, 2)

    def f(a, b, c):
        chained = oe.contract("ij,jk,kl->il", a, b, c, optimize="optimal", use_blas=False)
        return chained + oe.contract(a, [0, 1], b, [1, 2], c, [2, 3], [0, 3])

    torch.testing.assert_close(torchcx.compile(f, fullgraph=True)(a, b, c), f(a, b, c), **TOL)


def test_expression_called_and_built_in_the_compiled_region():
    # tensorly's use_opt_einsum: a cache of expressions by equation and shapes, filled on a miss.
    cache: dict[str, object] = {}

    def cached_einsum(eq, *xs):
        key = eq + ",".join(str(tuple(x.shape)) for x in xs)
        if key not in cache:
            cache[key] = oe.contract_expression(eq, *[tuple(x.shape) for x in xs], optimize="optimal")
        return cache[key](*xs)

    def f(x, w1, w2):
        return cached_einsum("bi,ij,jk->bk", x, w1, w2).abs().sum()

    x, w1, w2 = cplx(8, 4), cplx(4, 6), cplx(6, 3)
    g = torchcx.compile(f, fullgraph=True)
    expected = f(x, w1, w2)
    cache.clear()  # the compiled call meets the miss
    torch.testing.assert_close(g(x, w1, w2), expected, **TOL)
    # The expression built at trace time reached the cache (Dynamo replays the store), and is a
    # real one that eager code can call.
    (expression,) = cache.values()
    assert isinstance(expression, importlib.import_module("opt_einsum.contract").ContractExpression)
    torch.testing.assert_close(expression(x, w1, w2).abs().sum(), expected, **TOL)
    torch.testing.assert_close(g(x, w1, w2), expected, **TOL)  # the hit, same graph


def test_gradients_through_a_contraction():
    x, w = cplx(5, 4).requires_grad_(), cplx(4, 3).requires_grad_()
    expression = oe.contract_expression("bi,ij->bj", (5, 4), (4, 3))

    def f(x, w):
        return (expression(x, w).abs() ** 2).sum() + oe.contract("bi,ij->", x, w).real

    expected = torch.autograd.grad(f(x, w), (x, w))
    got = torch.autograd.grad(torchcx.compile(f, fullgraph=True)(x, w), (x, w))
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, **TOL)


def test_what_torch_einsum_cannot_take_runs_opt_einsum():
    # memory_limit bounds opt_einsum's intermediates, which torch.einsum cannot honour: the
    # library's own code is traced (with its graph breaks) and the value is opt_einsum's.
    a, b, c = cplx(3, 4), cplx(4, 5), cplx(5, 2)

    def f(a, b, c):
        return oe.contract("ij,jk,kl->il", a, b, c, memory_limit="max_input") * 2

    torch.testing.assert_close(torchcx.compile(f)(a, b, c), f(a, b, c), **TOL)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch._dynamo.reset()
        torchcx.compile(f, fullgraph=True)(a, b, c)


def test_the_polyfills_are_dynamos_not_torchcxs():
    # Documented in the Note: the default backend traces these calls as torch.einsum too.
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    f = torch.compile(lambda a, b: oe.contract("ij,jk->ik", a, b), backend="eager", fullgraph=True)
    torch.testing.assert_close(f(a, b), a @ b)


def test_symbolic_sizes_build_the_expression_in_eager():
    # dynamic=True: no path search on symbolic sizes at trace time; a graph break builds the
    # expression in eager, and its call is traced (stock Dynamo fails on both with an internal error).
    def f(x, w1, w2):
        shapes = [tuple(t.shape) for t in (x, w1, w2)]
        return oe.contract_expression("bi,ij,jk->bk", *shapes, optimize="optimal")(x, w1, w2)

    g = torchcx.compile(f, dynamic=True)
    for batch in (8, 9, 10):
        x, w1, w2 = cplx(batch, 4), cplx(4, 6), cplx(6, 3)
        torch.testing.assert_close(g(x, w1, w2), f(x, w1, w2), **TOL)
