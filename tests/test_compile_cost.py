"""Compile-time structure: Inductor's code generation stays linear in the real graph's size.

Structural checks, never timings (Note [Shared subexpressions] in torchcx/_inductor_patches.py):
the ops Inductor traces into its loop bodies, counted against the nodes of the real graph.
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor import ir, loop_body
from torch._inductor.utils import run_and_get_code

import torchcx
from torchcx import _inductor_patches
from torchcx._boundary.report import ACTIVE_REPORTS, CompileReport


def compile_and_count(fn, *args):
    """(ops traced into Inductor loop bodies, nodes of the real graphs, generated code)."""
    traced = 0
    init = loop_body.LoopBodyBlock.__init__

    def counting_init(self, *a, **k):
        nonlocal traced
        init(self, *a, **k)
        traced += len(self.graph.nodes)

    report = CompileReport()
    ACTIVE_REPORTS.append(report)
    loop_body.LoopBodyBlock.__init__ = counting_init
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(force_disable_caches=True):
            out, code = run_and_get_code(torchcx.compile(fn), *args)
    finally:
        loop_body.LoopBodyBlock.__init__ = init
        ACTIVE_REPORTS.remove(report)
    nodes = sum(len(g.real_graph.graph.nodes) for g in report.graphs if g.real_graph is not None)
    assert traced > 0 and nodes > 0  # the hooks still see Inductor's work
    return traced, nodes, "\n".join(code), out


def without_aot_id(code: str) -> str:
    return "\n".join(line for line in code.splitlines() if not line.startswith("# AOT ID:"))


def fan_out(z):
    # Every step reads z three times: inlined into its readers, the expression is a
    # tree with 3^4 copies of the first step (the shape of a special-value blend).
    for _ in range(4):
        z = torch.where(z.real > 0, z * 0.5, z + 1j)
    return z


def test_acos_codegen_is_linear_in_graph_size():
    # torch.acos (issue #14): a 229-node real graph that Inductor traced into a loop body
    # of ~28,000 nodes (30-50 s to compile); each value evaluated once, ~500.
    x = torch.randn(5, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    traced, nodes, code, out = compile_and_count(torch.acos, x)
    assert traced <= 4 * nodes, (traced, nodes)
    assert code.count('extern "C"') == 1
    torch.testing.assert_close(out, torch.acos(x))


def test_fan_out_with_and_without_shared_subexpressions(monkeypatch: pytest.MonkeyPatch):
    z = torch.randn(64, dtype=torch.complex64, generator=torch.Generator().manual_seed(1))
    shared, nodes, code, out = compile_and_count(fan_out, z)
    torch.testing.assert_close(out, fan_out(z))
    assert shared <= 4 * nodes, (shared, nodes)
    monkeypatch.setattr(_inductor_patches, "_SHARE_SUBEXPRESSIONS", False)
    unshared, _, unshared_code, out = compile_and_count(fan_out, z)
    torch.testing.assert_close(out, fan_out(z))
    # The count above catches the memo not taking effect: without it the loop body
    # grows with the number of paths through the graph, not with its nodes ...
    assert unshared > 4 * shared, (unshared, shared, nodes)
    # ... and the memo changes nothing Inductor generates (but the compilation's counter).
    assert without_aot_id(code) == without_aot_id(unshared_code)


def test_shared_subexpressions_are_scoped_to_torchcx():
    original = ir.Pointwise.make_loader
    with _inductor_patches.inductor_patches():
        assert ir.Pointwise.make_loader is not original
    assert ir.Pointwise.make_loader is original


def test_inductor_patches_are_in_the_cache_key(monkeypatch: pytest.MonkeyPatch):
    # The FX graph cache must not hand a graph compiled without the adjustments (or
    # with other settings) to a torchcx compilation, nor the reverse.
    before = torch.compiler.config.cache_key_tag
    with _inductor_patches.inductor_patches():
        tag = torch.compiler.config.cache_key_tag
    assert torch.compiler.config.cache_key_tag == before
    assert tag.startswith(before) and "torchcx-patches" in tag
    monkeypatch.setattr(_inductor_patches, "_SHARE_SUBEXPRESSIONS", False)
    with _inductor_patches.inductor_patches():
        assert torch.compiler.config.cache_key_tag != tag


# -- Note [Strides of linear indices] -----------------------------------------------------


def _linear_indices():
    """Indices as Inductor's CPU kernels see them: integer linear forms in the loop variables,
    and the ones the shortcut must leave to Inductor (floor division, modular indexing, a
    symbolic size times a variable)."""
    import random

    import sympy
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    xs = sympy.symbols("x0 x1 x2 x3", integer=True, nonnegative=True)
    size = sympy.Symbol("ks0", integer=True, positive=True)
    rng = random.Random(0)
    indices = [sympy.S.Zero, sympy.Integer(7), xs[0], -xs[1], 4096 * xs[0] + xs[1] + 5]
    for _ in range(150):
        terms = [rng.randint(-5000, 5000) * rng.choice(xs) for _ in range(rng.randint(1, 4))]
        kind = rng.random()
        if kind < 0.15:
            terms.append(size * rng.choice(xs))
        elif kind < 0.3:
            terms.append(FloorDiv(rng.choice(xs), 16))
        elif kind < 0.4:
            terms.append(ModularIndexing(rng.choice(xs), 1, 18))
        indices.append(sympy.Add(*terms, rng.randint(-64, 64)))
    return [(index, var) for index in indices for var in xs]


def test_strides_of_linear_indices_match_inductors():
    from torch._inductor import sizevars

    shortcut = 0
    for index, var in _linear_indices():
        stride = _inductor_patches.linear_coefficient(index, var)
        if stride is None:
            continue  # (left to Inductor)
        shortcut += 1
        for vec_length in (None, 16):
            expected = sizevars.stride_at_vec_range(index, var, vec_length)
            assert stride == expected and type(stride) is type(expected), (index, var, vec_length)
    assert shortcut > 300  # most random forms are linear


def test_strides_of_linear_indices_skip_simplify(monkeypatch: pytest.MonkeyPatch):
    # While torchcx compiles, Inductor's stride query answers a linear index without SymPy's
    # simplify (the shortcut is in force), and passes any other index on to it.
    import sympy
    from torch._inductor.codegen import cpp

    calls = []
    simplify = sympy.simplify
    monkeypatch.setattr(sympy, "simplify", lambda e, *a, **k: calls.append(e) or simplify(e, *a, **k))
    x0, x1 = sympy.symbols("x0 x1", integer=True, nonnegative=True)
    with _inductor_patches.inductor_patches():
        assert cpp.stride_at_vec_range(4099 * x0 + 3 * x1 + 11, x1, 16) == 3
        assert calls == []
        cpp.stride_at_vec_range(4099 * x0 + 3 * (x1 * x0) + 13, x1, 16)  # (not linear)
        assert calls
    from torch._inductor import sizevars

    assert cpp.stride_at_vec_range is sizevars.stride_at_vec_range  # (restored)
