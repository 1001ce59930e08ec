"""torchcx.compile entry points, dynamic shapes, fallbacks and explain."""

from __future__ import annotations

import math
import operator
import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torchcx
from compile_harness import check_compiled, record_inductor_graphs
from torchcx.ops import _registry

aten = torch.ops.aten


def cplx(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(sum(shape)))


def chain(x, y):
    return x * y + torch.exp(1j * x.abs())


# -- entry points ----------------------------------------------------------------------------------


def test_decorator_forms():
    @torchcx.compile
    def f(x):
        return x * 1j

    @torchcx.compile(strict=True, fullgraph=True)
    def g(x):
        return x.conj() * x

    x = cplx(5)
    torch.testing.assert_close(f(x), x * 1j)
    torch.testing.assert_close(g(x), x.conj() * x)


def test_backend_by_name():
    torch._dynamo.reset()
    x, y = cplx(6), cplx(6)
    with record_inductor_graphs() as recorder:
        out = torch.compile(chain, backend="torchcx")(x, y)
    torch.testing.assert_close(out, chain(x, y))
    assert recorder.graphs == 1 and not recorder.complex_nodes


def test_backend_entry_point_without_import():
    """After pip install, backend="torchcx" works in a process that never imports torchcx."""
    code = textwrap.dedent(
        """
        import sys, torch
        f = torch.compile(lambda x: x * 2j + x.abs(), backend="torchcx")
        x = torch.randn(4, dtype=torch.complex64)
        torch.testing.assert_close(f(x), x * 2j + x.abs())
        print("imported before call:", "torchcx" in sys.modules)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_module_and_options_pass_through():
    lin = torch.nn.Linear(4, 3, dtype=torch.complex64)
    compiled = torchcx.compile(lin, fullgraph=True, dynamic=False, options={"epilogue_fusion": True})
    x = cplx(2, 4)
    torch.testing.assert_close(compiled(x), lin(x))


def test_mode_passes_through():
    check_compiled(chain, lambda: (cplx(7), cplx(7)), compile_kwargs={"mode": "max-autotune-no-cudagraphs"})


# -- dynamic shapes ----------------------------------------------------------------------------------


class CountingBackend:
    """Counts Dynamo graphs handed to torchcx (one per (re)compilation)."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm, example_inputs):  # noqa: ANN001, ANN204
        self.graphs += 1
        return torchcx.torchcx_backend(gm, example_inputs)


def test_dynamic_true():
    torch._dynamo.reset()
    counter = CountingBackend()
    f = torch.compile(chain, backend=counter, dynamic=True)
    for n in (5, 9, 33):
        x, y = cplx(n), cplx(n)
        torch.testing.assert_close(f(x, y), chain(x, y))
    assert counter.graphs == 1


def test_automatic_dynamic_compiles_at_most_twice():
    torch._dynamo.reset()
    counter = CountingBackend()
    f = torch.compile(chain, backend=counter)
    # 63: an odd size after even ones (a guard on a part's stride parity recompiled there);
    # 3 * 63 > 64 (a graph pass once guarded on 3 * n <= 64, and the FX graph cache kept it)
    for n in (8, 16, 63):
        x, y = cplx(3, n), cplx(3, n)
        torch.testing.assert_close(f(x, y), chain(x, y))
    assert counter.graphs <= 2


def test_dynamic_product_over_a_symbolic_length():
    # The pairwise product's rounds on a symbolic length nested floor divisions that sympy
    # expanded for minutes; padded to a power of two, each product is the static rounds' one.
    torch._dynamo.reset()
    f = torch.compile(lambda x: x.prod(-1), backend="torchcx", dynamic=True)
    for n in (6, 13):
        x = cplx(3, n)
        torch.testing.assert_close(f(x), x.prod(-1))
        assert torch.equal(f(x), torchcx.as_complex_tensor(x).prod(-1).to_interleaved())


def test_dynamic_with_mutation_and_views():
    def fn(x):
        x[1:].mul_(2j)
        return x[:-1].T, x.sum()

    for n in (4, 7):
        check_compiled(fn, lambda n=n: (cplx(n, 3),), compile_kwargs={"dynamic": True})


# -- fallbacks ------------------------------------------------------------------------------------------


@pytest.fixture
def without_sin(monkeypatch):
    """torchcx as if it had no decomposition for aten.sin."""
    table = dict(_registry._TABLE)
    for key in (aten.sin, aten.sin.default):
        table.pop(key, None)
    monkeypatch.setattr(_registry, "_TABLE", table)
    monkeypatch.setattr(_registry, "_core_decompositions", lambda: {})
    _registry.entry_for.cache_clear()
    yield
    _registry.entry_for.cache_clear()


def test_fallback_warns_once_and_is_correct(without_sin):
    from torchcx._boundary import retrace

    retrace._WARNED.discard("aten.sin.default")
    fn = lambda x: torch.sin(x) * 2 + 1j  # noqa: E731
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torchcx.compile(fn)
        for _ in range(2):
            x = cplx(6)
            torch.testing.assert_close(compiled(x), fn(x))
    messages = [str(w.message) for w in caught if "torchcx" in str(w.message)]
    assert len(messages) == 1 and "aten.sin.default" in messages[0]
    report = torchcx.explain(fn, cplx(6))
    assert report.fallbacks == ["aten.sin.default"] and report.real_only


def test_strict_raises_naming_the_op(without_sin):
    torch._dynamo.reset()
    with pytest.raises(Exception, match="aten.sin.default"):
        torchcx.compile(lambda x: torch.sin(x) + 1, strict=True)(cplx(4))


# -- explain ----------------------------------------------------------------------------------------------


def test_explain_report():
    def fn(x, y):
        x.mul_(2)
        return chain(x, y), x.T

    report = torchcx.explain(fn, cplx(3, 4), cplx(3, 4))
    text = str(report)
    assert report.real_only and report.dynamo_graphs == 1 and not report.graph_breaks
    graph = report.graphs[0]
    assert graph.lowered["aten.exp.default"] == "exp_impl"
    assert "mutated in place by the kernel" in graph.inputs[0]
    # x.T is regenerated from the input by AOTAutograd: only chain() is a kernel output
    assert len(graph.outputs) == 1 and "int64 words" in graph.outputs[0]
    assert "int64 words" in text and "real-only" in text


def test_explain_graph_break_and_backward():
    def fn(x):
        y = x * 2
        torch._dynamo.graph_break()
        return (y.abs() ** 2).sum()

    x = cplx(5).requires_grad_()
    report = torchcx.explain(fn, x, backward=True)
    assert len(report.graph_breaks) == 1
    assert {g.kind for g in report.graphs} >= {"forward", "backward"}
    assert report.real_only
    assert x.grad is None  # explain works on copies


def test_explain_training_step_with_backward():
    # The step runs its own backward: explain reports those graphs and runs no second one
    # (the step's graph is freed by then).
    layer = torch.nn.Linear(4, 4, dtype=torch.complex64)

    def step(layer, x):
        loss = (layer(x).abs() ** 2).mean()
        loss.backward()
        return loss

    report = torchcx.explain(step, layer, cplx(3, 4), backward=True)
    assert {g.kind for g in report.graphs} >= {"forward", "backward"}
    assert report.real_only


def test_inductor_fx_graph_cache_hits():
    # A second compilation of the same program is served by Inductor's FX graph cache
    # (it was bypassed for every torchcx graph while the decomposition table reached the key).
    # That is the path of graphs with a backward, and of every graph with AOTAutograd's cache
    # off; with it on, a graph without one is an AOTAutograd entry (tests/test_compile_cache.py).
    from torch._dynamo.utils import counters
    from torch._inductor.utils import fresh_cache

    x = cplx(16)
    no_aot_cache = torch._functorch.config.patch(enable_autograd_cache=False)
    with fresh_cache(), torch._inductor.config.patch(fx_graph_cache=True), no_aot_cache:
        counters.clear()
        for _ in range(2):
            torch._dynamo.reset()
            torch.testing.assert_close(torchcx.compile(chain)(x, x), chain(x, x))
        assert counters["inductor"]["fxgraph_cache_bypass"] == 0
        assert counters["inductor"]["fxgraph_cache_hit"] == 1


def test_lerp_with_python_complex_weight():
    # Inductor's lerp.Scalar decomposition compares the weight with 0.5: a TypeError for 0.4j.
    # torchcx's own lerp runs instead (found by the all-samples OpInfo run).
    a, b = cplx(5, 5), cplx(5, 5)
    for weight in (0.4j, 0.6 + 0.1j):
        torch._dynamo.reset()
        torch.testing.assert_close(
            torchcx.compile(lambda a, b, w=weight: torch.lerp(a, b, w))(a, b), torch.lerp(a, b, weight)
        )


# -- settings (Note [Settings are part of what was compiled]) -----------------------------------


def _real_gemms(report: object) -> list[int]:
    """Real GEMMs in each real graph the report saw."""
    gemms = {torch.ops.aten.mm.default, torch.ops.aten.bmm.default}
    return [sum(n.target in gemms for n in g.real_graph.graph.nodes) for g in report.graphs]


def test_settings_are_fixed_when_compiled():
    from torchcx.explain import _capture

    def f(a, b):
        return a @ b

    a, b = torch.randn(16, 16, dtype=torch.complex64), torch.randn(16, 16, dtype=torch.complex64)
    torch._dynamo.reset()
    with _capture() as report:
        with torchcx.config.patch(matmul_strategy="4m"):
            g = torchcx.compile(f)
        g(a, b)
        with torchcx.config.patch(matmul_strategy="block"):
            g(a, b)  # g keeps the strategy it was compiled with: no new graph
            h = torchcx.compile(f)
        out = h(a, b)  # a new torchcx.compile: recompiled with "block", also outside the patch
    first, second = _real_gemms(report)
    assert second == 1 < first  # "block": one real GEMM on block matrices; "4m": one per product part
    torch.testing.assert_close(out, f(a, b))


def test_settings_hold_for_backward_graphs():
    # The backward graph is compiled at the first backward call: with the forward's settings.
    from torchcx.explain import _capture

    a = torch.randn(16, 16, dtype=torch.complex64, requires_grad=True)
    b = torch.randn(16, 16, dtype=torch.complex64)
    torch._dynamo.reset()
    with _capture() as report:
        with torchcx.config.patch(matmul_strategy="4m"):
            loss = torchcx.compile(lambda a, b: (a @ b).abs().sum())(a, b)
        with torchcx.config.patch(matmul_strategy="block"):
            loss.backward()
    assert [g.kind for g in report.graphs] == ["forward", "backward"]
    forward, backward = _real_gemms(report)
    assert forward == backward > 1  # "4m" both ways (one complex product each), not "block"'s one GEMM


# -- Inductor adjustments take effect (src/torchcx/_inductor_patches.py) ------------------------


def test_inductor_adjustments_take_effect():
    # Note [Vectorized bitcasts]: the complex64 words are unpacked with a vector cast, not a
    # scalar loop; Note [Accurate expm1]: the vectorized expm1 is ATen's, not exp(x) - 1.
    from torch._inductor.utils import run_and_get_code

    x = torch.randn(256, dtype=torch.complex64)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False):
        out, codes = run_and_get_code(torchcx.compile(lambda z: torch.expm1(z * 2)), x)
    code = "\n".join(codes)
    assert "at::vec::cast<float>" in code, "vectorized bitcasts did not take effect"
    assert ".expm1()" in code and ".exp() - " not in code, "accurate expm1 did not take effect"
    torch.testing.assert_close(out, torch.expm1(x * 2))


def test_real_graphs_get_the_adjustments_too():
    # Note [Real graphs get the adjustments too]: a graph with no complex value (here a real
    # program; programs on ComplexTensors reach Inductor the same way) is compiled with them.
    # Inductor's own vectorized expm1 is exp(x) - 1, which is 0 at 1e-30.
    from torch._inductor.utils import run_and_get_code

    x = torch.full((64,), 1e-30)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False):
        out, codes = run_and_get_code(torchcx.compile(torch.expm1), x)
    assert ".expm1()" in "\n".join(codes)
    assert torch.equal(out, torch.expm1(x)) and bool((out > 0).all()), out[:2]


# -- Note [Exponentials of imaginary numbers] (src/torchcx/_graph_passes.py) ----------------------

_EDGE = [0.0, -0.0, 1.0, -2.5, 1e30, -1e30, 1e-30, math.inf, -math.inf, math.nan, 88.5, 100.0]

PHASES = {
    "exp(1j * |z|)": lambda z: torch.exp(1j * z.abs()),
    "nls step": lambda z: z * torch.exp(1j * z.abs() ** 2 * 0.01),
    "exp(-1j * re / 2)": lambda z: torch.exp(-1j * z.real / 2),  # through Smith's division
    "exp(1j * im * 1e30)": lambda z: torch.exp(1j * z.imag * 1e30),  # (the phase overflows where im does not)
}


def _bits(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    parts = torch.view_as_real(t)
    return parts.isnan(), parts.nan_to_num(7.0)  # nan positions; values with the signs of zeros


@pytest.mark.parametrize("name", list(PHASES))
def test_exponentials_of_imaginary_numbers(name, monkeypatch):
    # Every edge value in both parts: the same bits with the pass as without it, and no
    # exp left in the kernel where the real part is 0 * x (+-0, or nan).
    from torch._inductor.utils import run_and_get_code

    import torchcx.backend

    fn = PHASES[name]
    z = torch.complex(torch.tensor(_EDGE).repeat_interleave(len(_EDGE)), torch.tensor(_EDGE).repeat(len(_EDGE)))
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        got, codes = run_and_get_code(torchcx.compile(fn), z)
        monkeypatch.setattr(torchcx.backend, "imaginary_exponentials", lambda gm: 0)
        torch._dynamo.reset()
        without = torchcx.compile(fn)(z)
    torch.testing.assert_close(got, fn(z), equal_nan=True)
    (nan, values), (nan_without, values_without) = _bits(got), _bits(without)
    assert torch.equal(nan, nan_without) and torch.equal(values, values_without)
    assert torch.equal(values.signbit(), values_without.signbit())
    code = "\n".join(codes)
    assert ".exp()" not in code and "std::exp(" not in code, "the exponential of 0 * x is still computed"
    # nor exp's overflow scale (a blend of e^88 and 1 on x > 88: a product by one here)
    assert "1.6516362549940018e+38" not in code, "the overflow scale of exp(0 * x) is still computed"


def test_what_the_phase_pass_leaves_unused_is_not_lowered():
    # Inductor's dead-code pass is off by default: it would lower (not run) the blends' masks
    # and constants the pass bypassed, 17% of the NLS solver's real graph.
    from torchcx.explain import _capture

    z = torch.randn(64, dtype=torch.complex64)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), _capture() as report:
        torchcx.compile(PHASES["nls step"])(z)
    nodes = [n for g in report.graphs for n in g.real_graph.graph.nodes]
    assert nodes and not [n for n in nodes if n.op == "call_function" and not n.users and not n.is_impure()]


def test_a_phase_is_its_sine_and_cosine():
    # exp(1j * t) is cos(t) + 1j * sin(t) itself: the product by e^(0 * t), v + 1 after the pass
    # (nan exactly where cos(t) and sin(t) are), and the blend that kept sin(+-0) = +-0, dropped.
    from torchcx.explain import _capture

    z = torch.randn(64, dtype=torch.complex64)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), _capture() as report:
        torchcx.compile(PHASES["exp(1j * |z|)"])(z)
    nodes = [n for g in report.graphs for n in g.real_graph.graph.nodes if n.op == "call_function"]
    trig = [n for n in nodes if n.target in (torch.ops.aten.sin.default, torch.ops.aten.cos.default)]
    assert len(trig) == 2
    assert not [u for n in trig for u in n.users if u.target in (torch.ops.aten.mul.Tensor, torch.ops.aten.where.self)]


def test_a_general_exponential_keeps_its_exp():
    from torch._inductor.utils import run_and_get_code

    z = torch.randn(64, dtype=torch.complex64)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        got, codes = run_and_get_code(torchcx.compile(lambda z: torch.exp(z * 1j)), z)
    torch.testing.assert_close(got, torch.exp(z * 1j))
    assert ".exp()" in "\n".join(codes)  # the real part -im(z) is no zero


def test_elementwise_chain_computes_its_transcendentals_once():
    # Note [Heavy values computed once]: z, read by the output and by the row reduction, is
    # stored once; the reduction does not compute the hypot, sine and cosine again.
    from torch._inductor.utils import run_and_get_code

    from torchcx.bench.workloads.elementwise import chain

    # (2^16 elements: the fewest that Note [Reductions fused with their producers] fuses)
    x, y = (torch.randn(4, 16384, dtype=torch.complex64, generator=torch.Generator().manual_seed(s)) for s in (0, 1))
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        got, codes = run_and_get_code(torchcx.compile(chain), x, y)
    torch.testing.assert_close(got, chain(x, y))
    code = "\n".join(codes)
    # (the hypot as Note [Hypot of floats in double] writes it: one square root of doubles)
    assert (code.count("(a * a + b * b).sqrt()"), code.count(".sin()"), code.count(".cos()")) == (1, 1, 1)
    # Note [Reductions fused with their producers]: one loop nest writes z and sums its norms; z's
    # parts never leave it (the kernel's only float output is the sum).
    assert code.count("for(int64_t x1=") == 1 and code.count("float* out_ptr") == 1, code


def test_a_row_reduction_over_leading_dimensions_keeps_its_loops():
    # Note [Reductions fused with their producers] leaves a reduction over dim 0 alone: its loops
    # are not the producer's, and the values are eager's.
    x = torch.randn(16, 4096, dtype=torch.complex64, generator=torch.Generator().manual_seed(2))

    def program(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = x * torch.exp(1j * x.abs())
        return z, z.abs().sum(0) + (z * z).real.sum(-1).sum()

    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        got = torchcx.compile(program)(x)
    torch.testing.assert_close(got, program(x))


# Operands of hypot where Note [Hypot of floats in double] must agree with C99 and round well:
# signed zeros, subnormals, the overflow and underflow thresholds of re^2 + im^2, infinities
# beside nan.
_HYPOT_EDGES = [0.0, -0.0, 1e-45, -1e-40, 1e-30, 1.5e-19, 1.0, 3.0, 1e19, 2e19, 1e30, 3.4e38, math.inf, -math.inf]


def test_hypot_of_floats_in_double_is_correctly_rounded():
    from torch._inductor.utils import run_and_get_code

    edges = torch.tensor(_HYPOT_EDGES + [math.nan])
    re, im = (t.reshape(-1) for t in torch.meshgrid(edges, edges, indexing="ij"))
    g = torch.Generator().manual_seed(3)
    scale = torch.exp(torch.empty(4096).uniform_(-80, 80, generator=g))  # magnitudes 1e-35 .. 1e35
    re = torch.cat([re, torch.randn(4096, generator=g) * scale]).contiguous()
    im = torch.cat([im, torch.randn(4096, generator=g) * scale.flip(0)]).contiguous()
    z = torch.complex(re, im)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        got, codes = run_and_get_code(torchcx.compile(torch.abs), z)
    assert "(a * a + b * b).sqrt()" in "\n".join(codes), "hypot of floats in double did not take effect"
    # The exact modulus rounded once (from float64, which holds re^2 + im^2 to 2^-53): the
    # compiled result is that value; eager's (Sleef's hypotf, 0.5001 ULP) is within one ULP.
    exact = torch.hypot(re.double(), im.double()).float()
    torch.testing.assert_close(got, exact, rtol=0, atol=0, equal_nan=True)
    eager = torch.abs(z)
    assert torch.equal(got.isnan(), eager.isnan()) and torch.equal(got.isinf(), eager.isinf())
    finite = eager.isfinite()
    ulp = torch.nextafter(eager[finite], torch.tensor(math.inf)) - eager[finite]
    assert bool(((got[finite] - eager[finite]).abs() <= ulp).all())
    assert bool((got[re.isinf() | im.isinf()] == math.inf).all())  # C99: hypot(inf, nan) = inf


# -- Note [Moves on words] (src/torchcx/_graph_passes.py) ------------------------------------------


def _scatter_into_zeros(z: torch.Tensor) -> torch.Tensor:
    out = z.new_zeros(z.shape[0], z.shape[1] + 3)
    out[:, 1 : z.shape[1] + 1] = z
    return out


def _pad_read_twice(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    padded = torch.nn.functional.pad(z, (1, 2))
    return padded, padded.real * 2


MOVES = {
    "pad of a transpose": lambda z: torch.nn.functional.pad(z.t(), (1, 3)),
    "pad with a complex fill": lambda z: torch.constant_pad_nd(z, (2, 1), complex(-0.0, 1.5)),
    "pad with -0.0": lambda z: torch.constant_pad_nd(z, (1, 0, 0, 2), -0.0),
    "cat of a flip": lambda z: torch.cat([z, z.flip(1)], 1),
    "scatter into zeros": _scatter_into_zeros,
    "roll": lambda z: torch.roll(z, 3, 1),
}


def _joins(report) -> int:
    return sum(n.target is torch.ops.aten.bitwise_or.Tensor for g in report.graphs for n in g.real_graph.graph.nodes)


def _edge_words(rows: int, cols: int) -> torch.Tensor:
    """complex64 values whose parts include +-0, +-inf, a nan with a payload and subnormals."""
    edges = torch.tensor([0.0, -0.0, math.inf, -math.inf, 1e-40, -3.5, 1e30], dtype=torch.float32)
    parts = torch.randn(rows, cols, 2, generator=torch.Generator().manual_seed(5))
    parts.view(-1)[: len(edges)] = edges
    parts.view(-1)[-len(edges) :] = edges.flip(0)
    parts.view(torch.int32).view(-1)[9] = 0x7FC01234  # a quiet nan with a payload
    return torch.view_as_complex(parts)


@pytest.mark.parametrize("name", list(MOVES))
def test_moves_on_words(name):
    # The moves are done on the words (no split and join left in the real graph), and the
    # result holds eager's bits: signed zeros, nan payloads, subnormals, fill values.
    from torchcx.explain import _capture

    fn, z = MOVES[name], _edge_words(6, 8)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), _capture() as report:
        got = torchcx.compile(fn)(z)
    expected = fn(z)
    assert torch.equal(torch.view_as_real(got).view(torch.int32), torch.view_as_real(expected).view(torch.int32))
    assert _joins(report) == 0, "the moves were done on each half"


def test_moves_on_complex32_words():
    # int32 words with float16 halves: the fill packed as two float16 values
    from torchcx.explain import _capture

    def fn(z: torch.Tensor) -> torch.Tensor:
        return torch.constant_pad_nd(z.t(), (1, 2), complex(-0.0, 1.5))

    z = _edge_words(6, 8).to(torch.complex32)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), _capture() as report:
        got = torchcx.compile(fn)(z)
    assert torch.equal(torch.view_as_real(got).view(torch.int16), torch.view_as_real(fn(z)).view(torch.int16))
    assert _joins(report) == 0


def test_moves_on_words_into_a_transform():
    # The FNO's inverse: a transform's result padded for the next one (both vendor FFTs).
    from torchcx.explain import _capture

    def fn(z: torch.Tensor) -> torch.Tensor:
        return torch.fft.irfft(torch.nn.functional.pad(torch.fft.ifft(z, dim=-2), (0, 17)), n=64, dim=-1)

    z = torch.randn(2, 16, 64, dtype=torch.complex64, generator=torch.Generator().manual_seed(6)).transpose(-1, -2)
    torch._dynamo.reset()
    vendor = torchcx.config.patch(fft_path="vendor")  # (at this size the real path would be taken)
    with torch._inductor.config.patch(force_disable_caches=True), vendor, _capture() as report:
        got = torchcx.compile(fn)(z)
    torch.testing.assert_close(got, fn(z))
    assert _joins(report) == 0, "the pad was done on each half"


def test_moves_read_elsewhere_stay_on_the_halves():
    # The padded halves are read by the product too: moving the words as well would pad twice.
    from torchcx.explain import _capture

    z = _edge_words(6, 8)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), _capture() as report:
        got = torchcx.compile(_pad_read_twice)(z)
    for a, e in zip(got, _pad_read_twice(z)):
        torch.testing.assert_close(a, e, equal_nan=True)
    assert _joins(report) == 1


def test_no_aliases_reach_inductor(monkeypatch):
    # Note [Aliases dropped before Inductor]: the halves of the words (each a view(dtype) that
    # functionalization follows with an alias) reach Inductor without the aliases, forward and
    # backward; values as eager's (edge values in the forward) and gradients too. (Off the
    # branch cut for the gradient: at 0-0j eager's ``z - 1`` in acosh's derivative gives a
    # +0 imaginary part, torchcx's the -0 of C99 and NumPy, so rsqrt takes the other side.)
    from torch._inductor import compile_fx

    handed: list[int] = []  # aliases in each graph as Inductor receives it (its passes drop them later)

    def spy(gm, *args, **kwargs):
        handed.append(sum(n.target is torch.ops.aten.alias.default for n in gm.graph.nodes))
        return inner(gm, *args, **kwargs)

    inner = compile_fx.compile_fx_inner
    monkeypatch.setattr(compile_fx, "compile_fx_inner", spy)
    z = torch.randn(4, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(3))
    leaf, eager_leaf = z.clone().requires_grad_(), z.clone().requires_grad_()
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        compiled = torchcx.compile(torch.acosh)
        compiled(leaf).abs().sum().backward()
        got = compiled(_edge_words(4, 5))
    torch.testing.assert_close(got, torch.acosh(_edge_words(4, 5)), equal_nan=True)
    torch.acosh(eager_leaf).abs().sum().backward()
    torch.testing.assert_close(leaf.grad, eager_leaf.grad)
    assert len(handed) >= 2 and not any(handed), handed


def test_random_draws_are_not_merged():
    # Complex random numbers compile (their parts are drawn by Inductor's random ops: the
    # real graph's are made after its own passes replaced the complex graph's), two draws are
    # two (Note [Real graphs merged] leaves a graph with random ops alone), and each part is
    # N(0, 1/2), as eager's: E|z|^2 = 1 (over 4096 draws its mean has a standard deviation of
    # 1/64, so 0.1 is six of them).
    def draws(z):
        return torch.randn_like(z) * z, torch.randn_like(z) * z

    z = torch.ones(4096, dtype=torch.complex64)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        first, second = torchcx.compile(draws)(z)
    assert not torch.equal(first, second)
    for draw in (first, second):
        assert abs((draw.abs() ** 2).mean().item() - 1) < 0.1
        assert abs(draw.mean().item()) < 0.1


# -- Note [Scalar factors after transforms] (src/torchcx/_graph_passes.py) -------------------------

TRANSFORM_SCALINGS = {
    "rfft of x * s": (lambda x, s: torch.fft.rfft(x * s), torch.float32),
    "fft of s * z": (lambda z, s: torch.fft.fft(s * z, dim=0), torch.complex64),
    "irfft of z * 2.5": (lambda z, s: torch.fft.irfft(z * 2.5, n=62), torch.complex64),
}


@pytest.mark.parametrize("name", list(TRANSFORM_SCALINGS))
def test_scalar_factors_after_transforms(name):
    # The transform reads the graph's input itself (no kernel scales it first); the values are
    # eager's to rounding, and with s = 1 (a loss gradient) bit for bit.
    from torch._inductor.utils import run_and_get_code

    fn, dtype = TRANSFORM_SCALINGS[name]
    x = torch.randn(64, 32, dtype=dtype, generator=torch.Generator().manual_seed(7))
    torch._dynamo.reset()
    vendor = torchcx.config.patch(fft_path="vendor")  # (at this size the real path would be taken)
    with torch._inductor.config.patch(force_disable_caches=True), vendor:
        compiled = torchcx.compile(fn)
        got, codes = run_and_get_code(compiled, x, torch.tensor(0.75))
        ones = compiled(x, torch.tensor(1.0))
    torch.testing.assert_close(got, fn(x, torch.tensor(0.75)))
    if "2.5" not in name:
        assert torch.equal(ones, fn(x, torch.tensor(1.0)))
    calls = [line for line in "\n".join(codes).splitlines() if "torchcx_extern_kernel(" in line and "_fft_" in line]
    assert calls and all(re.search(r"\[arg\d+_1\]", line) for line in calls), calls  # a graph input


def test_scalings_that_are_not_scalar_stay_before_the_transform():
    from torch._inductor.utils import run_and_get_code

    def fn(x, w):
        return torch.fft.rfft(x * w)  # w a row of weights: a product, not a scaling

    x, w = torch.randn(64, 32), torch.randn(32)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True), torchcx.config.patch(fft_path="vendor"):
        got, codes = run_and_get_code(torchcx.compile(fn), x, w)
    torch.testing.assert_close(got, fn(x, w))
    calls = [line for line in "\n".join(codes).splitlines() if "torchcx_extern_kernel(" in line and "_fft_" in line]
    assert calls and not any(re.search(r"\[arg\d+_1\]", line) for line in calls)


# -- nested compile regions (Note [Nested compile regions]) ---------------------------------------


@torch.compiler.nested_compile_region
def _nls_step(psi: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    psi = torch.fft.ifft(torch.exp(-1j * k**2 * 1e-2) * torch.fft.fft(psi))
    return psi * torch.exp(1j * psi.abs() ** 2 * 1e-2)


def _nls_solve(psi: torch.Tensor, k: torch.Tensor, steps: int = 5) -> torch.Tensor:
    for _ in range(steps):
        psi = _nls_step(psi, k)
    return psi


def test_nested_compile_region_is_one_real_subgraph():
    from torchcx.explain import _capture

    psi, k = torch.randn(3, 16, dtype=torch.complex64), torch.randn(16)
    torch._dynamo.reset()
    with _capture() as report:
        out = torchcx.compile(_nls_solve)(psi, k)
    with torch.compiler.set_stance("force_eager"):
        expected = _nls_solve(psi, k)
    torch.testing.assert_close(out, expected)
    (graph,) = [g.real_graph for g in report.graphs if g.real_graph is not None]
    calls = [n for n in graph.graph.nodes if n.target is torch.ops.higher_order.invoke_subgraph]
    assert len(calls) == 5
    # one real subgraph, called five times (not five copies of the step)
    assert len({n.args[0].target for n in calls}) == 1
    assert not any(n.target is torch.ops.aten.exp.default for n in graph.graph.nodes)
    # the state crosses packed: the calling graph computes nothing between the calls
    assert {n.op for n in graph.graph.nodes} <= {"placeholder", "get_attr", "call_function", "output"}
    assert {n.target for n in graph.graph.nodes if n.op == "call_function"} == {
        torch.ops.higher_order.invoke_subgraph,
        operator.getitem,
    }
    # Note [Regions traced once]: the graph called is the one traced from the body, not a retrace
    assert "torchcx_region" in getattr(graph, calls[0].args[0].target).meta


@torch.compiler.nested_compile_region
def _spectral_step(z: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    y = torch.fft.fft(z) * x
    return y, 2 * y, y.abs()  # complex, complex, real


def _spectral_solve(z: torch.Tensor, x: torch.Tensor) -> list[torch.Tensor]:
    outs = []
    for _ in range(3):
        y, y2, a = _spectral_step(z, x)
        outs += [y2 - y, a]
        z = torch.exp(1j * a) * y
    return [z, *outs]


@pytest.mark.parametrize("kind", ["complex64", "complex128", "bfloat16 parts"])
def test_nested_compile_region_values_match_eager(kind: str):
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 6, dtype=torch.complex128 if kind == "complex128" else torch.complex64, generator=g)
    x = torch.rand(6, dtype=z.real.dtype, generator=g)
    if kind == "bfloat16 parts":
        z = torchcx.as_complex_tensor(z, torch.bfloat16)
    from torchcx.explain import _capture

    torch._dynamo.reset()
    with _capture() as report:
        got = torchcx.compile(_spectral_solve)(z, x)
    with torch.compiler.set_stance("force_eager"):
        expected = _spectral_solve(z, x)
    for a, b in zip(got, expected):
        assert type(a) is type(b) and a.dtype == b.dtype
        torch.testing.assert_close(a, b)
    graphs = [g.real_graph for g in report.graphs if g.real_graph is not None]
    calls = [n for gm in graphs for n in gm.graph.nodes if n.target is torch.ops.higher_order.invoke_subgraph]
    # A program on ComplexTensors runs its regions inline (ops.invoke_subgraph_impl); native
    # complex graphs call one real subgraph, whose operands and results cross packed.
    assert len(calls) == (0 if kind == "bfloat16 parts" else 3)


@pytest.mark.parametrize("planar", [False, True], ids=["native", "ComplexTensor"])
def test_nested_compile_region_gradients_match_eager(planar: bool):
    @torch.compiler.nested_compile_region
    def layer(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.tanh(z @ w) * z.conj()

    def net(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            z = layer(z, w)
        return z.abs().sum()

    # (seeded: drawn from the global generator, the inputs depended on what earlier tests drew,
    # test_concurrency's threads included; the loss's relative error is close to assert_close's
    # float32 rtol (8e-7 of 1.3e-6 at seed 4), and the suite failed here in 3 of about 8 runs.
    # A tolerance from error analysis of three stacked layers is still to be written.)
    g = torch.Generator().manual_seed(7)
    z = torch.randn(3, 4, dtype=torch.complex64, generator=g)
    w = 0.3 * torch.randn(4, 4, dtype=torch.complex64, generator=g)
    if planar:
        z, w = torchcx.as_complex_tensor(z), torchcx.as_complex_tensor(w)
    z, w = z.requires_grad_(), w.requires_grad_()
    torch._dynamo.reset()
    loss = torchcx.compile(net)(z, w)
    grads = torch.autograd.grad(loss, (z, w))
    with torch.compiler.set_stance("force_eager"):
        expected_loss = net(z, w)
        expected = torch.autograd.grad(expected_loss, (z, w))
    torch.testing.assert_close(loss, expected_loss)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want)
