"""Compile-time structure: Inductor's code generation stays linear in the real graph's size.

Structural checks, never timings (Note [Shared subexpressions] in torchcx/_inductor_patches.py):
the ops Inductor traces into its loop bodies, counted against the nodes of the real graph.
"""

from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path

import pytest
import torch
from torch._inductor import ir, loop_body
from torch._inductor.utils import run_and_get_code

import torchcx
from compile_harness import record_lowered_graphs
from torchcx import _fresh_pages, _inductor_patches
from torchcx.bench.workloads.quantum import apply_gate


def compile_and_count(fn, *args, graphs: list | None = None):
    """(ops traced into Inductor loop bodies, nodes of the real graphs Inductor lowered, generated code);
    those graphs appended to ``graphs``."""
    traced = 0
    init = loop_body.LoopBodyBlock.__init__

    def counting_init(self, *a, **k):
        nonlocal traced
        init(self, *a, **k)
        traced += len(self.graph.nodes)

    loop_body.LoopBodyBlock.__init__ = counting_init
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(force_disable_caches=True), record_lowered_graphs() as lowered:
            out, code = run_and_get_code(torchcx.compile(fn), *args)
    finally:
        loop_body.LoopBodyBlock.__init__ = init
    nodes = sum(len(gm.graph.nodes) for gm in lowered)
    if graphs is not None:
        graphs.extend(lowered)
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


@pytest.mark.parametrize("parts", [None, torch.float32, torch.bfloat16], ids=["complex64", "planar", "bfloat16_parts"])
def test_acos_codegen_is_linear_in_graph_size(parts):
    # torch.acos (issue #14): a 229-node real graph that Inductor traced into a loop body
    # of ~28,000 nodes (30-50 s to compile); each value evaluated once, ~500. A program on
    # ComplexTensors reaches Inductor as a real graph of their parts (Note [Real graphs get
    # the adjustments too]): asin with bfloat16 parts took 46.6 s where it now takes 5.7.
    x = torch.randn(5, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    if parts is not None:
        x = torchcx.as_complex_tensor(x, parts)
    traced, nodes, code, out = compile_and_count(torch.acos, x)
    assert traced <= 4 * nodes, (traced, nodes)
    if parts is None:
        assert code.count('extern "C"') == 1
        torch.testing.assert_close(out, torch.acos(x))
    else:
        assert isinstance(out, torchcx.ComplexTensor) and out.component_dtype == parts
        torch.testing.assert_close(out.to_interleaved(torch.complex64), torch.acos(x).to_interleaved(torch.complex64))


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


DIVISIONS = {
    "by_number": lambda z, r: z / 2.0,
    "by_real_tensor": lambda z, r: z / r,
    "by_own_modulus": lambda z, r: z / z.abs(),
}


@pytest.mark.parametrize("name", DIVISIONS)
def test_division_by_a_number_or_real_tensor_lowers_to_few_nodes(name):
    # A divisor known to be a number or a real tensor (torch.gradient's 2h, x / n,
    # z / |z|) has Smith's steps decided by torchcx (pointwise._div_by_number and
    # _div_by_real): 21-30 real nodes where the general complex formula is 75-79. On
    # torch.gradient's forward and backward that was 581 nodes, now 117 (issue #14).
    g = torch.Generator().manual_seed(0)
    z = torch.randn(5, 5, dtype=torch.complex64, generator=g)
    r = torch.rand(5, 5, generator=g) + 0.5
    program = DIVISIONS[name]
    _, complex_nodes, _, _ = compile_and_count(lambda z, w: z / w, z, z + 1j)
    _, nodes, _, out = compile_and_count(program, z, r)
    assert nodes <= complex_nodes // 2, (nodes, complex_nodes)
    torch.testing.assert_close(out, program(z, r))


def test_power_of_a_number_lowers_to_few_nodes():
    # A number base (torch.pow(2.0, z), ldexp's power of two) has its log computed once in
    # Python (pointwise._cpow_of_number): 112 real nodes for 2 ** z where the log of a
    # tensor filled with the base made 237 (issue #14).
    z = torch.randn(5, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))
    _, filled, _, _ = compile_and_count(lambda z: torch.pow(torch.full_like(z, 2.0), z), z)
    _, nodes, _, out = compile_and_count(lambda z: torch.pow(2.0, z), z)
    assert nodes < 0.6 * filled, (nodes, filled)
    torch.testing.assert_close(out, torch.pow(2.0, z))


def dispersion_steps(psi, k):
    # The split-step solver's shape: each step recomputes the same phase from the same k.
    for _ in range(4):
        psi = torch.fft.ifft(torch.exp(-0.5j * k**2 * 1e-3) * torch.fft.fft(psi))
    return psi


def test_loop_invariant_values_are_lowered_once(monkeypatch: pytest.MonkeyPatch):
    # Note [Loop-invariant values computed once] in backend.py: the unrolled loop's four
    # phases are one complex exp, lowered once (an exponential of an imaginary number: one
    # cosine in the real graph, Note [Exponentials of imaginary numbers]).
    g = torch.Generator().manual_seed(2)
    psi = torch.randn(4, 32, dtype=torch.complex64, generator=g)
    k = torch.randn(32, generator=g)

    def cosines(graphs):
        return sum(n.target is torch.ops.aten.cos.default for gm in graphs for n in gm.graph.nodes)

    merged: list = []
    _, nodes, _, out = compile_and_count(dispersion_steps, psi, k, graphs=merged)
    torch.testing.assert_close(out, dispersion_steps(psi, k))
    monkeypatch.setattr(torchcx.backend, "_common_subexpressions_once", lambda gm: None)
    unmerged: list = []
    _, unmerged_nodes, _, unmerged_out = compile_and_count(dispersion_steps, psi, k, graphs=unmerged)
    assert (cosines(merged), cosines(unmerged)) == (1, 4)
    assert nodes < unmerged_nodes
    assert torch.equal(out, unmerged_out)  # the same ops on the same operands


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
    assert tag.startswith(before) and f"torchcx:{_inductor_patches.source_hash()}" in tag
    monkeypatch.setattr(_inductor_patches, "_SHARE_SUBEXPRESSIONS", False)
    with _inductor_patches.inductor_patches():
        assert torch.compiler.config.cache_key_tag != tag


def test_the_cache_key_covers_all_of_torchcx(tmp_path):
    # The FX graph cache saves the shape guards torchcx's passes added before Inductor ran:
    # an edit anywhere in torchcx (here a graph pass, no Inductor adjustment) is a new key.
    import shutil

    root = tmp_path / "torchcx"
    shutil.copytree(Path(torchcx.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = _inductor_patches.hash_of_sources(root, "1.0")
    with open(root / "_graph_passes.py", "a") as f:
        f.write("# an edit\n")
    assert _inductor_patches.hash_of_sources(root, "1.0") != before
    assert _inductor_patches.hash_of_sources(root, "1.1") != _inductor_patches.hash_of_sources(root, "1.0")


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


# -- Note [Kernels built together] --------------------------------------------------------------


def _three_kernels(x, w):
    # (three C++ kernels: the GEMMs' operands and the norm between them are computed apart)
    h = torch.exp(x) @ w
    k = (h / h.abs().sum(-1, keepdim=True)) @ w.t()
    return torch.sin(k).sum(0), k.cos()


def compile_and_record_builds(fn, *args, threads):
    """(outputs, distinct kernels in the generated modules, g++ command lines of kernel libraries)."""
    from torch._inductor import cpp_builder

    builds = []
    run = cpp_builder._run_compile_cmd

    def recording_run(cmd_line, cwd):
        builds.extend(cmd_line for arg in cmd_line.split() if arg.endswith(".main.cpp"))
        return run(cmd_line, cwd)

    cpp_builder._run_compile_cmd = recording_run
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(force_disable_caches=True, compile_threads=threads):
            out, code = run_and_get_code(torchcx.compile(fn), *args)
    finally:
        cpp_builder._run_compile_cmd = run
    return out, sum(c.count("async_compile.cpp_pybinding(") for c in code), builds


def compile_and_count_builds(fn, *args, threads):
    """(outputs, distinct kernels in the generated modules, g++ builds of kernel libraries)."""
    out, kernels, builds = compile_and_record_builds(fn, *args, threads=threads)
    return out, kernels, len(builds)


@pytest.mark.parametrize("batch", [True, False], ids=["together", "alone"])
def test_kernels_of_a_graph_are_built_together(batch):
    g = torch.Generator().manual_seed(0)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    with torchcx.config.patch(batch_kernels=batch):
        out, kernels, builds = compile_and_count_builds(_three_kernels, x, w, threads=1)
    assert kernels >= 3  # (else the test shows nothing)
    assert builds == (1 if batch else kernels)
    for got, expected in zip(out, _three_kernels(x, w)):
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("line_tables", [False, True], ids=["default", "line_tables"])
def test_libraries_built_without_line_tables_by_default(line_tables):
    # config.kernel_line_tables: Inductor's -g1 costs 15-20% of a small library's g++ run
    g = torch.Generator().manual_seed(2)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    with torchcx.config.patch(kernel_line_tables=line_tables):
        out, _, builds = compile_and_record_builds(_three_kernels, x, w, threads=1)
    assert builds and all((" -g1 " in f" {cmd} ") == line_tables for cmd in builds), builds
    for got, expected in zip(out, _three_kernels(x, w)):
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("per_library", [1, None], ids=["large", "small"])
def test_kernels_built_together_in_parallel_libraries(monkeypatch, per_library):
    """A graph's kernels go to as many libraries as there are compile threads only where
    there is enough source for each (Note [Kernels built together])."""
    from torchcx import _kernel_batches

    if per_library is not None:  # (every source counts as large)
        monkeypatch.setattr(_kernel_batches, "SOURCE_PER_LIBRARY", per_library)
    g = torch.Generator().manual_seed(1)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    out, kernels, builds = compile_and_count_builds(_three_kernels, x, w, threads=2)
    assert builds == (2 if per_library else 1) < kernels
    for got, expected in zip(out, _three_kernels(x, w)):
        torch.testing.assert_close(got, expected)


def test_a_forward_is_built_as_one_library(monkeypatch):
    """A training graph's forward takes one compile thread, whatever its size: its backward,
    lowered next, needs the other (Note [Kernels built together])."""
    from torchcx import _kernel_batches

    monkeypatch.setattr(_kernel_batches, "SOURCE_PER_LIBRARY", 1)  # (every source counts as large)
    graphs = []  # (libraries at most, kernels) of each graph, in the order they were built
    build = _kernel_batches._Pending.build

    def recording_build(self):
        graphs.append((self.libraries, len(self.kernels)))
        return build(self)

    monkeypatch.setattr(_kernel_batches._Pending, "build", recording_build)
    g = torch.Generator().manual_seed(1)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    leaf = x.clone().requires_grad_()
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=2):
        out = torchcx.compile(_three_kernels)(leaf, w)
        sum(o.abs().sum() for o in out).backward()
    (forward_libraries, forward_kernels), (backward_libraries, backward_kernels) = graphs
    assert forward_libraries == 1 < forward_kernels
    assert backward_libraries == 2 and backward_kernels > 1
    expected = x.clone().requires_grad_()
    sum(o.abs().sum() for o in _three_kernels(expected, w)).backward()
    torch.testing.assert_close(leaf.grad, expected.grad)


@pytest.mark.parametrize("threads", [1, 2])
def test_backward_lowered_with_the_forward(threads):
    """Note [Backward lowered with the forward]: the forward's first call has lowered the
    backward too; its kernels are bound at their first call; the gradients are eager's."""
    from torchcx.explain import _capture

    def fn(z):
        return (torch.sin(z) * z.conj()).abs().sum()

    z = torch.randn(6, dtype=torch.complex64, generator=torch.Generator().manual_seed(4))
    leaf = z.clone().requires_grad_()
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=threads), _capture() as report:
        loss = torchcx.compile(fn)(leaf)
        assert [graph.kind for graph in report.graphs] == ["forward", "backward"]
        loss.backward()
    expected = z.clone().requires_grad_()
    fn(expected).backward()
    torch.testing.assert_close(loss, fn(z))
    torch.testing.assert_close(leaf.grad, expected.grad)


def test_a_library_that_fails_to_build_falls_back_to_one_per_kernel(monkeypatch, caplog):
    from torch._inductor.codecache import CppPythonBindingsCodeCache

    from torchcx import _kernel_batches

    source = _kernel_batches.library_source
    monkeypatch.setattr(_kernel_batches, "library_source", lambda kernels: source(kernels) + "\nnot C++;\n")
    alone = []
    load_alone = CppPythonBindingsCodeCache.load_pybinding
    monkeypatch.setattr(
        CppPythonBindingsCodeCache, "load_pybinding", lambda *a, **k: alone.append(a) or load_alone(*a, **k)
    )
    g = torch.Generator().manual_seed(2)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    with caplog.at_level("WARNING", logger="torchcx._kernel_batches"):
        out, kernels, builds = compile_and_count_builds(_three_kernels, x, w, threads=1)
    # The library that failed, then each kernel alone (Inductor's way: a kernel another test
    # built alone before is found built on disk, so its g++ runs are not counted).
    assert builds >= 1 and len(alone) == kernels
    assert "building them alone" in caplog.text
    for got, expected in zip(out, _three_kernels(x, w)):
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("fast", [True, False], ids=["fast_linker", "default_linker"])
def test_libraries_linked_with_the_fastest_working_linker(fast):
    from torchcx import _kernel_batches

    linker = _kernel_batches._fast_linker()  # ("-fuse-ld=mold|lld|gold",), or () where none links here
    g = torch.Generator().manual_seed(3)
    x, w = (torch.randn(8, 8, dtype=torch.complex64, generator=g) for _ in range(2))
    with torchcx.config.patch(fast_linker=fast):
        out, _, builds = compile_and_record_builds(_three_kernels, x, w, threads=1)
    assert len(builds) == 1
    used = [arg for arg in builds[0].split() if arg.startswith("-fuse-ld=")]
    assert used == (list(linker) if fast else [])
    for got, expected in zip(out, _three_kernels(x, w)):
        torch.testing.assert_close(got, expected)


def test_a_linker_that_does_not_link_is_not_used():
    from torch._inductor.cpp_builder import get_cpp_compiler

    from torchcx._kernel_batches import _links

    assert not _links(get_cpp_compiler(), "-fuse-ld=torchcx-no-such-linker")


KERNEL = 'extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)\n{\n    out_ptr0[0] = in_ptr0[0];\n}\n'
PREFIX = "#include <torch/csrc/inductor/cpp_prefix.h>\n"

# (argtypes, source, batchable?, why)
BATCHABLE = [
    (["const float*", "float*"], PREFIX + KERNEL, True, "Inductor's usual kernel"),
    (["const float*", "float*", "int64_t", "float", "uintptr_t"], PREFIX + KERNEL, True, "the scalars it parses"),
    (["const float*", "double"], PREFIX + KERNEL, False, "a scalar type Inductor's binding does not parse"),
    (["const float*", "float*"], PREFIX + "#define N 4\n" + KERNEL, False, "a macro would leak into later kernels"),
    (["const float*", "float*"], PREFIX + "#if 1\n" + KERNEL + "#endif\n", False, "conditional compilation"),
    (["const float*", "float*"], PREFIX + KERNEL.replace('extern "C"  ', ""), False, "no C entry point"),
    (["const float*", "float*"], PREFIX + KERNEL + KERNEL, False, "two entry points"),
    (["const float*", "float*"], PREFIX + KERNEL.replace("{\n", "{\n#pragma GCC ivdep\n", 1), True, "a pragma"),
]


@pytest.mark.parametrize("argtypes, source, expected, why", BATCHABLE, ids=[b[3] for b in BATCHABLE])
def test_which_kernels_share_a_library(argtypes, source, expected, why):
    from torchcx._kernel_batches import batchable

    assert batchable(argtypes, source) is expected, why


def test_library_source_hoists_includes_and_names_each_kernel():
    from torchcx._kernel_batches import library_source

    text = library_source([(["const float*", "float*"], PREFIX + KERNEL)] * 2)
    assert text.count("#include <torch/csrc/inductor/cpp_prefix.h>") == 1
    assert 'extern "C"  void  kernel' not in text
    assert "torchcx_kernel_1::kernel(torchcx_bindings::arg<float*>(args, 0)" in text
    assert '{"kernel_1", kernel_1_py, METH_VARARGS, ""}' in text


@pytest.mark.parametrize(
    "sizes, libraries, expected",
    [
        ([5, 1, 1, 1, 1, 1], 2, [[0], [1, 2, 3, 4, 5]]),  # the largest alone, the rest balanced against it
        ([3, 3, 2, 2], 2, [[0, 2], [1, 3]]),
        ([1, 2, 3], 1, [[0, 1, 2]]),
        ([1, 2], 8, [[0], [1]]),  # never more libraries than kernels
    ],
)
def test_kernels_are_shared_out_largest_first(sizes, libraries, expected):
    from torchcx._kernel_batches import shares

    assert sorted(shares(sizes, libraries)) == sorted(expected)


# -- Note [Large intermediates freed between kernels] ---------------------------------------


def _three_gates(state, gate):
    # gates applied with einsum: one loop each (Note [Small contractions in place])
    for qubits in ((0,), (5,), (9,)):
        state = apply_gate(state, gate, qubits)
    return state


def _kernel_calls(code: list[str]) -> list[str]:
    return re.findall(r"^\s+(cpp_fused\w*)\(", "\n".join(code), flags=re.MULTILINE)


@pytest.mark.parametrize("free", [True, False], ids=["freed", "one_function"])
def test_large_intermediates_are_freed_between_kernels(free):
    # Three gates on a 2^18-amplitude state: planar parts of 1 MiB, each gate a loop of its own.
    g = torch.Generator().manual_seed(3)
    state = torch.randn((2,) * 18, dtype=torch.complex64, generator=g)
    gate = torch.randn(2, 2, dtype=torch.complex64, generator=g)
    torch._dynamo.reset()
    with torchcx.config.patch(free_large_intermediates=free), torch._inductor.config.patch(force_disable_caches=True):
        out, code = run_and_get_code(torchcx.compile(_three_gates), state, gate)
    wrapper = "\n".join(code)
    calls = _kernel_calls(code)
    if free:
        assert len(calls) >= 3, calls  # a C++ function per large node
        assert "# reuse" in wrapper  # a dead intermediate's storage serves a later one
    else:
        assert len(calls) == 1, calls  # Inductor's one function for the whole chain
    torch.testing.assert_close(out, _three_gates(state, gate), rtol=1e-4, atol=1e-4)


def test_small_graphs_stay_one_function():
    # Below 1 MiB per node nothing changes: small calls keep their per-call cost (issue #13).
    g = torch.Generator().manual_seed(4)
    state = torch.randn((2,) * 10, dtype=torch.complex64, generator=g)
    gate = torch.randn(2, 2, dtype=torch.complex64, generator=g)
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        out, code = run_and_get_code(torchcx.compile(_three_gates), state, gate)
    calls = _kernel_calls(code)
    assert len(calls) == 1, calls
    torch.testing.assert_close(out, _three_gates(state, gate), rtol=1e-4, atol=1e-4)


def _rotated_twice(z):
    # a 32 MiB output (2^22 complex64 words) and a 64 KiB one
    return z * 1j, z[:8192] * 2


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
def test_large_buffers_ask_for_huge_pages(monkeypatch, on):
    """Note [Large buffers on huge pages]: the wrapper asks for huge pages on the 32 MiB buffer
    right after allocating it, not on the small one; nothing with the setting off."""
    monkeypatch.setattr(_fresh_pages, "advisable", lambda: True)  # the code, whatever this kernel's setting
    z = torch.randn(1 << 22, dtype=torch.complex64, generator=torch.Generator().manual_seed(6))
    torch._dynamo.reset()
    with torchcx.config.patch(huge_pages=on), torch._inductor.config.patch(force_disable_caches=True):
        out, code = run_and_get_code(torchcx.compile(_rotated_twice), z)
    advised = re.findall(r"= empty_strided_cpu\(\((\d+)[^\n]*; torchcx_on_huge_pages\((buf\d+)\)", "\n".join(code))
    assert advised == ([("4194304", advised[0][1])] if on else []), advised
    for got, want in zip(out, _rotated_twice(z)):
        assert torch.equal(got, want)


@pytest.mark.skipif(not _fresh_pages.advisable(), reason="huge pages here: always, never, or not Linux")
def test_a_buffer_on_huge_pages_faults_in_fewer_pages():
    """Note [Large buffers on huge pages]: where the kernel gives huge pages on request, a fresh
    32 MiB buffer written after the advice faults in its pages 2 MiB at a time (8,192 faults
    of 4 KiB otherwise); the advice changes no value."""
    import resource

    def faults_writing(advise: bool) -> int:
        buffer = torch.empty(32 << 20, dtype=torch.uint8)  # mapped afresh by glibc
        if advise:
            _fresh_pages.on_huge_pages(buffer)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        buffer.fill_(7)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        assert bool((buffer == 7).all())
        return faults

    def fallbacks() -> int:  # huge page faults the kernel served with small pages (none free)
        lines = Path("/proc/vmstat").read_text().splitlines()
        return sum(int(line.split()[1]) for line in lines if line.startswith("thp_fault_fallback "))

    plain = faults_writing(False)
    before = fallbacks()
    advised = faults_writing(True)
    if plain < 4096:
        pytest.skip(f"{plain} faults without the advice: this allocator keeps large blocks mapped")
    if fallbacks() > before:
        pytest.skip("the kernel had no huge page free (thp_fault_fallback grew): the advice stood, unserved")
    assert advised < plain / 4, (advised, plain)


def _tails_generated(fn, *args) -> tuple[int, str]:
    """(vectorized tail kernels Inductor generated, the code it emitted) compiling ``fn``."""
    from torch._inductor.codegen import cpp

    tails = 0
    init = cpp.CppVecKernel.__init__

    def counting_init(self, *a, **k):
        nonlocal tails
        tails += (a[4] if len(a) > 4 else k.get("tail_size")) is not None
        init(self, *a, **k)

    cpp.CppVecKernel.__init__ = counting_init
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(force_disable_caches=True):
            _, code = run_and_get_code(torchcx.compile(fn), *args)
    finally:
        cpp.CppVecKernel.__init__ = init
    return tails, without_aot_id("\n".join(code))


def _pointwise(z):
    return torch.exp(z) * z.conj() + 1j


@pytest.mark.parametrize("shape, empty", [((64, 32), True), ((5, 37), False)], ids=["whole_tiles", "a_tail"])
def test_empty_tails_are_not_generated(monkeypatch: pytest.MonkeyPatch, shape, empty):
    # Note [Empty tails not generated]: no vectorized tail is generated where the tiles cover
    # the loop exactly, and the emitted code is the same as Inductor's with one.
    z = torch.randn(shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(5))
    tails, code = _tails_generated(_pointwise, z)
    monkeypatch.setattr(_inductor_patches, "_empty_tails_not_generated", contextlib.nullcontext)
    stock_tails, stock_code = _tails_generated(_pointwise, z)
    assert stock_tails > 0
    assert tails == (0 if empty else stock_tails)
    assert code == stock_code


def _transposed(x):
    return (x.mT * 2).contiguous()


@pytest.mark.parametrize(
    "dtype, shape",
    [(torch.complex64, (48, 80)), (torch.complex64, (37, 53)), (torch.float64, (48, 80))],
    ids=["words", "words_with_edges", "float64"],
)
def test_64_bit_transposes_in_registers(dtype, shape):
    """Note [64-bit transposes in registers]: a transpose of complex64 words (or float64) is
    a tiled 64-bit transpose, whose helper each library specializes; the values are eager's."""
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(6))
    out, _, builds = compile_and_record_builds(_transposed, x, threads=1)
    torch.testing.assert_close(out, _transposed(x), rtol=0, atol=0)
    element = "int64_t" if dtype == torch.complex64 else "double"
    sources = [Path(arg).read_text() for cmd in builds for arg in cmd.split() if arg.endswith(".main.cpp")]
    assert any(f"transpose_mxn<{element},static_cast<int64_t>(16)" in s for s in sources), "no tiled transpose"
    isa = [re.search(r"-D\s*CPU_CAPABILITY_(\w+)", cmd) for cmd in builds]
    if any(m and m.group(1) in ("AVX512", "AVX2") for m in isa):
        assert all(f"struct transpose_mxn_helper<{element}, false>" in s for s in sources)


def _phases_and_norms(x):
    return x * torch.exp(1j * x.abs()) + torch.sin(x.real)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_sines_and_cosines_of_one_value_in_one_call(dtype):
    """Note [Sines and cosines of one value]: exp(1j * |x|) takes the sine and the cosine of
    |x| from one sincos call; sin(x.real), alone, stays a sine; values are eager's to within
    Sleef's bounds (3.5 ULP for float, 1 for double: the dtype's tolerance)."""
    x = torch.randn(8, 96, dtype=dtype, generator=torch.Generator().manual_seed(8)) * 3
    out, _, builds = compile_and_record_builds(_phases_and_norms, x, threads=1)
    torch.testing.assert_close(out, _phases_and_norms(x))
    sources = [Path(arg).read_text() for cmd in builds for arg in cmd.split() if arg.endswith(".main.cpp")]
    isa = [re.search(r"-D\s*CPU_CAPABILITY_(\w+)", cmd) for cmd in builds]
    if not any(m and m.group(1) in ("AVX512", "AVX2") for m in isa):
        pytest.skip("no vectorized kernels on this CPU")
    calls = [re.findall(r"torchcx_sincos::of\((tmp\d+)\)", s) for s in sources]
    assert [len(c) for c in calls if c] == [1], "the sine and cosine of |x| are not one call"
    assert any(re.search(r"= tmp\d+\.sin\(\);", s) for s in sources), "the lone sine was paired"
    assert not any(re.search(r"= tmp\d+\.cos\(\);", s) for s in sources)


def _ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in ULP of the float nearest ``exact`` (float64); 0 where equal (infinities too)."""
    nearest = exact.float()
    ulp = (torch.nextafter(nearest.abs(), torch.tensor(math.inf)) - nearest.abs()).double()
    return torch.where(got.double() == exact, 0.0, (got.double() - exact).abs() / ulp)


def _library_sources(builds):
    sources = [Path(arg).read_text() for cmd in builds for arg in cmd.split() if arg.endswith(".main.cpp")]
    isa = [re.search(r"-D\s*CPU_CAPABILITY_(\w+)", cmd) for cmd in builds]
    return sources, any(m and m.group(1) in ("AVX512", "AVX2") for m in isa)


def _polar_of_ones(t):
    return torch.polar(torch.ones_like(t), t)


# Arguments where Note [Float math in registers]'s sine and cosine must be right: signed zeros, a
# subnormal, tiny values, quadrant boundaries, the last values below 125 and the first above (Sleef
# from there), large values, infinities and nan.
_SINCOS_EDGES = [0.0, -0.0, 1e-45, -1e-30, 1e-4, math.pi / 4, math.pi / 2, -math.pi, 3 * math.pi / 2, 124.99,
                 -124.99, 125.0, 125.01, -200.0, 1e4, 1e30, math.inf, -math.inf, math.nan]  # fmt: skip


@pytest.mark.parametrize("simdlen", [None, 256], ids=["widest", "256-bit"])
def test_float_sines_and_cosines_in_registers(simdlen):
    """Note [Float math in registers]: the sine and cosine of float vectors below 125 are computed
    without a call, within the 3.5 ULP of ATen's Sleef functions (of float64's exact values), with
    C99's special values; vectors holding larger or non-finite values take Sleef's call."""
    g = torch.Generator().manual_seed(11)
    near = torch.randint(-79, 80, (1024,), generator=g) * (math.pi / 2) + (torch.rand(1024, generator=g) - 0.5) * 1e-4
    edges = torch.tensor(_SINCOS_EDGES).repeat_interleave(3)  # (lanes of 8 and 16: every vector mixes them)
    t = torch.cat([torch.rand(4096, generator=g) * 250 - 125, near.float(), edges]).contiguous()
    with torch._inductor.config.patch({"cpp.simdlen": simdlen}):
        z, _, builds = compile_and_record_builds(_polar_of_ones, t, threads=1)
    finite = t.isfinite()
    for got, exact in ((z.imag, torch.sin(t.double())), (z.real, torch.cos(t.double()))):
        assert _ulps(got[finite], exact[finite]).max() <= 3.5
        assert bool(got[~finite].isnan().all())
    assert bool(z.imag[t == 0].signbit().eq(t[t == 0].signbit()).all())  # sin(-0) = -0
    sources, vectorized = _library_sources(builds)
    if not vectorized:
        pytest.skip("no vectorized kernels on this CPU")
    assert any(re.search(r"torchcx_sincos::of\(tmp\d+\)", s) for s in sources), "no sine and cosine paired"
    assert all("#define TORCHCX_FLOAT_MATH_IN_REGISTERS 1" in s for s in sources)


@pytest.mark.parametrize("simdlen", [None, 256], ids=["widest", "256-bit"])
def test_float_hypot_corrected_in_registers(simdlen):
    """Note [Float math in registers]: |z| of complex64 vectors is the float hypot corrected in
    float, within Sleef's 0.5001 ULP (eager's) of the exact value over the whole float range;
    C99's hypot(inf, nan) = inf; lanes out of its range (a subnormal, a square past float's range,
    an infinity, nan) take the hypot in double for their vector."""
    edges = torch.tensor([0.0, -0.0, 1e-45, 1e-30, 1e-16, 1.0, 3.0, 1e16, 1e19, 3.4e38, math.inf, math.nan])
    re_, im_ = (t.reshape(-1) for t in torch.meshgrid(edges, edges, indexing="ij"))
    g = torch.Generator().manual_seed(12)
    wide = (torch.randint(0, 0x7F800000, (2, 4096), generator=g, dtype=torch.int32)).view(torch.float32)
    a = torch.rand(4096, generator=g) + 0.5
    near = torch.stack([a, a * (1 + (torch.rand(4096, generator=g) - 0.5) * 1e-3)])  # (squares nearly tie)
    normal = torch.randn(2, 4096, generator=g)
    re_ = torch.cat([re_, wide[0], near[0], normal[0]])
    im_ = torch.cat([im_, -wide[1], near[1], normal[1]])
    with torch._inductor.config.patch({"cpp.simdlen": simdlen}):
        got, _, builds = compile_and_record_builds(torch.abs, torch.complex(re_, im_), threads=1)
    exact = torch.hypot(re_.double(), im_.double())
    finite = exact.float().isfinite()  # (not: the value overflows float)
    assert _ulps(got[finite], exact[finite]).max() <= 0.5001
    assert torch.equal(got.isnan(), exact.isnan()) and bool((got[~finite & ~exact.isnan()] == math.inf).all())
    sources, vectorized = _library_sources(builds)
    if not vectorized:
        pytest.skip("no vectorized kernels on this CPU")
    assert any("torchcx_hypot::of(tmp" in s for s in sources), "the hypot is not corrected in float"


def test_sine_and_cosine_paired_within_one_block():
    from torchcx._kernel_batches import sine_and_cosine_once

    body = """{
    {
        auto tmp1 = tmp0.cos();
        auto tmp2 = tmp1 * tmp0;
        auto tmp3 = tmp0.sin();
        auto tmp4 = tmp9.sin();
        auto tmp5 = [&] { return tmp2; }();
    }
    {
        auto tmp1 = tmp0.cos();
    }
    auto tmp6 = tmp0.sin();
}"""
    paired = sine_and_cosine_once(body).splitlines()
    assert (
        paired[2] == "        auto torchcx_sincos_tmp0 = torchcx_sincos::of(tmp0); auto tmp1 = torchcx_sincos_tmp0.cos;"
    )
    assert paired[4] == "        auto tmp3 = torchcx_sincos_tmp0.sin;"
    # a lone sine, and a sine and a cosine in different blocks, are left as they are
    assert [paired[i] for i in (5, 9, 11)] == [body.splitlines()[i] for i in (5, 9, 11)]


def _float_bits_for_bfloat16_rounding():
    """float32 bit patterns: rows of random normals (rounded by the instruction) and rows that
    hold each value it rounds otherwise than ATen (NaNs, subnormals) or where rounding is
    delicate (ties to even, the largest float, infinities, zeros)."""
    g = torch.Generator().manual_seed(5)
    bits = (torch.randn(8, 128, generator=g) * 1e3).view(torch.int32)
    special = [
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA12345,  # quiet, negative and signalling NaNs, a payload
        0x00000001, 0x807FFFFF, 0x00008000, 0x00018000,  # subnormals: smallest, largest, ties
        0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7FFFFF,  # ties to even, nearly a tie, the largest float
        0x7F800000, 0xFF800000, 0x00000000, 0x80000000,  # infinities, zeros
    ]  # fmt: skip
    for row in (1, 4, 6):  # NaNs and subnormals in some rows only: both paths of each kernel
        bits[row, 40 : 40 + len(special)] = torch.tensor(special, dtype=torch.int64).to(torch.int32)
    bits[6, 100:] = 0x00000007  # a row of subnormals to its end
    return bits


def _to_bfloat16_pairs(z):
    return torch.view_as_real(z * 1).to(torch.bfloat16)


@pytest.mark.parametrize("simdlen", [None, 256], ids=["widest", "256-bit"])
def test_bfloat16_rounding_in_one_instruction_is_atens(simdlen):
    """Note [Bfloat16 rounding in one instruction]: the bfloat16 stores of the compiled kernel
    round through torchcx's helper, and every value has eager's bits (NaNs: NaN). With 256-bit
    vectors (AVX2) the helper is ATen's conversion, and the library still builds (a kernel
    built alone, after a failed library, would not have the helper)."""
    # (cloned: a complex view of a float view of int32 fails in Dynamo itself, aot_eager too)
    z = torch.view_as_complex(_float_bits_for_bfloat16_rounding().view(torch.float32).view(8, 64, 2)).clone()
    with torch._inductor.config.patch({"cpp.simdlen": simdlen}):
        out, _, builds = compile_and_record_builds(_to_bfloat16_pairs, z, threads=1)
    sources = [Path(arg).read_text() for cmd in builds for arg in cmd.split() if arg.endswith(".main.cpp")]
    isa = [re.search(r"-D\s*CPU_CAPABILITY_(\w+)", cmd) for cmd in builds]
    expected = _to_bfloat16_pairs(z)
    nan = expected.isnan()
    assert torch.equal(out.isnan(), nan)
    assert torch.equal(out.view(torch.int16)[~nan], expected.view(torch.int16)[~nan])
    if not any(m and m.group(1) in ("AVX512", "AVX2") for m in isa):
        pytest.skip("no vectorized kernels on this CPU")
    assert any("torchcx_bf16::round2(" in s for s in sources), "the bfloat16 stores do not round through torchcx"
    assert all("namespace torchcx_bf16" in s for s in sources), "a kernel was built alone"
    assert not any("at::vec::convert<at::BFloat16,1,float,2>(" in s.split("}  // namespace torchcx_bf16")[-1]
                   for s in sources)  # fmt: skip


def _spectral_mix(x, w):
    return torch.einsum("bixy,ioxy->boxy", x, w).abs().pow(2).sum()


@pytest.mark.parametrize("leaf", [True, False], ids=["parameter", "intermediate"])
def test_gradients_in_their_inputs_layout(leaf):
    """Note [Gradients in their inputs' layout]: the einsum's weight gradient leaves the
    backward graph strided as the weight is (eager's is a permuted view), so autograd need
    not copy it; values as eager's, for a parameter and for an input that is not a leaf."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 4, 5, dtype=torch.complex64, generator=g)
    w0 = torch.randn(3, 6, 4, 5, dtype=torch.complex64, generator=g)

    def run(fn):
        base = w0.clone().requires_grad_()
        w = base if leaf else base * 1  # not a leaf: its gradient flows on to base
        seen = []
        w.register_hook(lambda grad: seen.append(grad.stride()))
        loss = fn(x, w)
        loss.backward()
        return loss, base.grad, seen[0]

    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        loss, grad, stride = run(torchcx.compile(_spectral_mix))
    eager_loss, eager_grad, eager_stride = run(_spectral_mix)
    assert eager_stride != w0.stride()  # (else the test shows nothing)
    assert stride == w0.stride()
    torch.testing.assert_close(loss, eager_loss)
    torch.testing.assert_close(grad, eager_grad)


def _corner_mix(x, w):
    # as an FNO layer: a GEMM over transformed modes, whose weight gradient needs conj(modes)
    return torch.einsum("bixy,ioxy->boxy", torch.fft.fft(x, dim=-2)[:, :, :8, :8], w).abs().pow(2).sum()


def test_saved_conjugates_are_their_operands(monkeypatch: pytest.MonkeyPatch):
    """The forward saves ``_conj`` of the GEMM's operand for the weight gradient; the graph hands
    out the operand's own buffer (``_unconjugated`` in _boundary/retrace.py), where conjugating
    the lowered ``_conj`` back wrote the operand again (in the FNO step, a kernel of its own)."""
    from torchcx._boundary import retrace

    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 32, 32, 16, dtype=torch.complex64, generator=g)
    w0 = torch.randn(32, 32, 8, 8, dtype=torch.complex64, generator=g)

    def step(fn):
        w = w0.clone().requires_grad_()
        loss = fn(x, w)
        loss.backward()
        return loss, w.grad

    def gemm_operand_and_saved(code: str) -> tuple[set[str], set[str]]:
        forward = code.split("def call(self, args):")[1].split("\n\n")[0]
        gemm = next(line for line in forward.splitlines() if "'aten::bmm.default'" in line)
        saved = forward.split("return (")[-1]
        buffers = re.compile(r"reinterpret_tensor\((buf\d+),")
        return set(buffers.findall(gemm)), set(buffers.findall(saved))

    def compiled_step():
        torch._dynamo.reset()
        with torch._inductor.config.patch(force_disable_caches=True), torchcx.config.patch(fft_path="vendor"):
            (loss, grad), codes = run_and_get_code(step, torchcx.compile(_corner_mix))
        return loss, grad, gemm_operand_and_saved(codes[0])

    loss, grad, (operands, saved) = compiled_step()
    eager_loss, eager_grad = step(_corner_mix)
    # FFTs (eager's of all 32 modes, the compiled one may differ in its factorization) and sums
    # of 128 products: float32 rounding of a few ulps of the largest term per element
    torch.testing.assert_close(loss, eager_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(grad, eager_grad, rtol=1e-5, atol=1e-5 * eager_grad.abs().max().item())
    assert operands & saved  # the saved tensor is the GEMM operand's buffer
    monkeypatch.setattr(retrace, "_unconjugated", lambda node, env: torch.conj_physical(env[node]))
    _, grad_copied, (operands, saved) = compiled_step()
    torch.testing.assert_close(grad_copied, grad, rtol=0, atol=0)
    assert not operands & saved  # written again, into a buffer of its own
