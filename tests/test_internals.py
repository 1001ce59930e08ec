"""The Inductor adjustments stay defensible (docs/internals.md, Note [Adjustments and torch versions]).

Each adjustment cites the upstream issue it works around, says so once when the internals it
patches are missing (and then patches nothing), and has a test that fails when it stops
taking effect. The take-effect tests of most adjustments live beside the feature they serve
(listed in docs/internals.md); the ones here are for the adjustments that had none, and for
the behaviour on a torch other than the one they were written for.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import torchcx
from torchcx import _inductor_patches, _interleaved, _kernel_batches, _patching, _streaming_stores, _words

INTERNALS_MD = Path(__file__).resolve().parents[1] / "docs" / "internals.md"


def compiled(fn, *args):
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        out, code = run_and_get_code(torchcx.compile(fn), *args)
    return out, "\n".join(code)


@pytest.fixture
def fresh_warnings():
    """The once-per-process warnings and the version check, as in a new process (before and after)."""
    _patching.cannot_apply.cache_clear()
    _inductor_patches._written_for_this_torch.cache_clear()
    yield
    _patching.cannot_apply.cache_clear()
    _inductor_patches._written_for_this_torch.cache_clear()


def test_every_adjustment_cites_upstream_and_is_documented():
    text = INTERNALS_MD.read_text()
    for name, (upstream, other_torch) in _inductor_patches.ADJUSTMENTS.items():
        assert re.search(r"#\d+", upstream) or upstream.startswith("no upstream issue"), name
        assert other_torch in ("off", "checked"), name
        assert name in text, f"{name} is not in docs/internals.md"
    # the adjustments documented as off on another torch are the ones the version check turns off
    off = {name for name, (_, other) in _inductor_patches.ADJUSTMENTS.items() if other == "off"}
    assert off == {"Interleaved access", "Words as pairs", "Pairs in lane order"}


def _cpp():
    from torch._inductor.codegen import cpp

    return cpp


def _ir():
    from torch._inductor import ir

    return ir


def _lowering():
    from torch._inductor import lowering

    return lowering


def _async_compile():
    from torch._inductor import async_compile

    return async_compile


def _cpu_vec_isa():
    from torch._inductor import cpu_vec_isa

    return cpu_vec_isa


def _index_propagation():
    from torch._inductor import index_propagation

    return index_propagation


def _custom_extern_codegen():
    from torch._inductor.codegen import custom_extern_kernel_codegen

    return custom_extern_kernel_codegen


def _dtype_propagation():
    from torch._inductor import dtype_propagation

    return dtype_propagation


# (adjustment, its context manager, how to remove the internal it patches)
MISSING = [
    (
        "Extern calls without the dispatcher",
        _inductor_patches._direct_extern_calls,
        # (Inductor's modules imported first: its wrapper imports the registry's table)
        lambda mp: _cpp() and _lowering() and mp.delattr(_custom_extern_codegen(), "CUSTOM_EXTERN_KERNEL_CODEGEN"),
    ),
    (
        "Reshaped cat inputs realized in their own shape",
        _inductor_patches._reshaped_cat_inputs_realized,
        lambda mp: mp.delattr(_ir().ConcatKernel, "realize_into"),
    ),
    (
        "Dtype rules built once",
        _inductor_patches._dtype_rules_built_once,
        lambda mp: mp.delattr(_dtype_propagation().DtypePropagationOpsHandler, "__init__"),
    ),
    (
        "Reshaped extern inputs realized in their own shape",
        _inductor_patches._reshaped_extern_inputs_realized,
        lambda mp: mp.delattr(_ir().ExternKernel, "require_strides"),
    ),
    (
        "Merged dims split before a copy",
        _inductor_patches._merged_dims_split,
        lambda mp: mp.delattr(_ir().ExternKernel, "require_strides"),
    ),
    (
        "Vectorized bitcasts",
        _inductor_patches._vectorized_bitcasts,
        lambda mp: mp.setattr(_cpp(), "CppVecOverrides", None),
    ),
    ("Accurate expm1", _inductor_patches._accurate_expm1, lambda mp: mp.setattr(_cpp(), "CppVecOverrides", None)),
    (
        "Hypot of floats in double",
        _inductor_patches._hypot_in_double,
        lambda mp: mp.setattr(_cpp(), "CppVecOverrides", None),
    ),
    (
        "Empty tails not generated",
        _inductor_patches._empty_tails_not_generated,
        lambda mp: mp.delattr(_cpp().LoopNest, "tile"),
    ),
    (
        "Reductions fused with their producers",
        _inductor_patches._reductions_fused_with_producers,
        lambda mp: mp.delattr(_cpp().CppScheduling, "_why_fuse_nodes"),
    ),
    (
        "Bitcasts of computed values",
        _inductor_patches._pointwise_bitcasts,
        lambda mp: mp.delitem(_lowering().lowerings, torch.ops.aten.view.dtype),
    ),
    (
        "Shared subexpressions",
        _inductor_patches._shared_subexpressions,
        lambda mp: mp.delattr(_ir().Pointwise, "make_loader"),
    ),
    (
        "Heavy values computed once",
        _inductor_patches._heavy_values_computed_once,
        lambda mp: mp.delattr(_ir().StorageBox, "should_realize_on_reuse"),
    ),
    (
        "Nan constants in index propagation",
        _inductor_patches._nan_constants_not_compared,
        lambda mp: mp.delattr(_index_propagation().SymPyOps, "maximum"),
    ),
    (
        "Strides of linear indices",
        _inductor_patches._strides_of_linear_indices,
        lambda mp: mp.delattr(_cpp(), "stride_at_vec_range"),
    ),
    (
        "Kernels built together",
        _kernel_batches.kernels_built_together,
        lambda mp: mp.delattr(_async_compile().AsyncCompile, "cpp_pybinding"),
    ),
    (
        "Streaming stores",
        _streaming_stores.streaming_stores,
        lambda mp: mp.delattr(_cpp().KernelGroup, "codegen_group"),
    ),
    (
        "Large intermediates freed between kernels",
        _inductor_patches._large_intermediates_freed,
        lambda mp: mp.delattr(_cpp().CppScheduling, "codegen_node"),
    ),
    (
        "The ISA probe remembered",
        _inductor_patches._isa_probe_remembered,
        lambda mp: mp.delattr(_cpu_vec_isa().VecISA, "_probe_load"),
    ),
    ("Interleaved access", _interleaved.interleaved_access, lambda mp: mp.delattr(_cpp(), "stride_at_vec_range")),
    ("Words as pairs", _words.words_as_pairs, lambda mp: mp.setattr(_cpp().CppVecKernel, "get_to_dtype_expr", None)),
    (
        "quiet_complex_warning",
        _inductor_patches.quiet_complex_warning,
        lambda mp: mp.delattr(_lowering(), "_warn_complex_not_supported"),
    ),
]


@pytest.mark.parametrize("name, adjustment, remove", MISSING, ids=[m[0] for m in MISSING])
def test_missing_internals_are_reported_once(name, adjustment, remove, monkeypatch, caplog, fresh_warnings):
    remove(monkeypatch)
    cpp, ir, lowering = _cpp(), _ir(), _lowering()
    before = (
        dict(vars(cpp)),
        dict(vars(ir.Pointwise)),
        dict(vars(ir.StorageBox)),
        dict(vars(cpp.CppVecKernel)),
        dict(lowering.lowerings),
        dict(vars(_index_propagation().SymPyOps)),
        dict(vars(_async_compile().AsyncCompile)),
        dict(vars(cpp.CppScheduling)),
        dict(vars(_cpu_vec_isa().VecISA)),
        dict(getattr(_custom_extern_codegen(), "CUSTOM_EXTERN_KERNEL_CODEGEN", {})),
    )
    with caplog.at_level("WARNING"):
        for _ in range(2):
            with adjustment():
                pass
    records = [r for r in caplog.records if name in r.getMessage() and "not applied" in r.getMessage()]
    assert len(records) == 1, caplog.text
    after = (
        dict(vars(cpp)),
        dict(vars(ir.Pointwise)),
        dict(vars(ir.StorageBox)),
        dict(vars(cpp.CppVecKernel)),
        dict(lowering.lowerings),
        dict(vars(_index_propagation().SymPyOps)),
        dict(vars(_async_compile().AsyncCompile)),
        dict(vars(cpp.CppScheduling)),
        dict(vars(_cpu_vec_isa().VecISA)),
        dict(getattr(_custom_extern_codegen(), "CUSTOM_EXTERN_KERNEL_CODEGEN", {})),
    )
    assert after == before  # nothing was patched


def test_64_bit_transposes_need_the_helper_they_specialize(monkeypatch, caplog, fresh_warnings):
    # Note [64-bit transposes in registers]: a prefix header without transpose_mxn_helper gets
    # no specialization (which would not compile), and one warning naming the adjustment.
    from torch._inductor import codecache

    monkeypatch.setattr(codecache, "_get_cpp_prefix_header", lambda device: "no/such/header.h")
    _kernel_batches.transposes_64.cache_clear()
    try:
        with caplog.at_level("WARNING"):
            assert _kernel_batches.transposes_64() == ""
            assert _kernel_batches.transposes_64() == ""
    finally:
        monkeypatch.undo()
        _kernel_batches.transposes_64.cache_clear()
    records = [r for r in caplog.records if "64-bit transposes in registers" in r.getMessage()]
    assert len(records) == 1 and "not applied" in records[0].getMessage(), caplog.text
    assert "transpose_mxn_helper<int64_t, false>" in _kernel_batches.transposes_64()


def test_sines_and_cosines_need_atens_functions(monkeypatch, caplog, fresh_warnings):
    # Note [Sines and cosines of one value]: where ATen's float sine and cosine are not the
    # 3.5-ULP Sleef functions one sincos call replaces, no helper and no pairing, one warning.
    monkeypatch.setitem(_kernel_batches._ATEN_SIN_COS, "vec512/vec512_float.h", ("Sleef_sinf16_u10(values)",))
    _kernel_batches.sines_and_cosines.cache_clear()
    try:
        with caplog.at_level("WARNING"):
            assert _kernel_batches.sines_and_cosines() == ""
            assert _kernel_batches.sines_and_cosines() == ""
            source = _kernel_batches.library_source([(["float*"], KERNEL_WITH_SIN_AND_COS)])
    finally:
        monkeypatch.undo()
        _kernel_batches.sines_and_cosines.cache_clear()
    records = [r for r in caplog.records if "Sines and cosines of one value" in r.getMessage()]
    assert len(records) == 1 and "not applied" in records[0].getMessage(), caplog.text
    assert "torchcx_sincos" not in source and "tmp0.sin()" in source
    assert "torchcx_sincos::of(tmp0)" in _kernel_batches.library_source([(["float*"], KERNEL_WITH_SIN_AND_COS)])


def test_bfloat16_rounding_needs_atens_integer_rounding(monkeypatch, caplog, fresh_warnings):
    # Note [Bfloat16 rounding in one instruction]: where ATen's conversion is not the integer
    # rounding the helper reproduces bit for bit, no helper and no rewrite, one warning.
    monkeypatch.setitem(_kernel_batches._ATEN_BF16_ROUNDING, "vec512/vec512_bfloat16.h", ("_mm512_cvtne2ps_pbh(",))
    _kernel_batches._bfloat16_rounding_checked.cache_clear()
    try:
        with caplog.at_level("WARNING"):
            assert _kernel_batches.bfloat16_rounding() == ""
            assert _kernel_batches.bfloat16_rounding() == ""
            source = _kernel_batches.library_source([(["at::BFloat16*"], KERNEL_ROUNDING_TO_BFLOAT16)])
    finally:
        monkeypatch.undo()
        _kernel_batches._bfloat16_rounding_checked.cache_clear()
    records = [r for r in caplog.records if "Bfloat16 rounding in one instruction" in r.getMessage()]
    assert len(records) == 1 and "not applied" in records[0].getMessage(), caplog.text
    assert "torchcx_bf16" not in source and "at::vec::convert<at::BFloat16,1,float,2>(tmp0)" in source
    source = _kernel_batches.library_source([(["at::BFloat16*"], KERNEL_ROUNDING_TO_BFLOAT16)])
    assert "torchcx_bf16::round2(tmp0)" in source and "torchcx_bf16::round1(tmp1)" in source


KERNEL_ROUNDING_TO_BFLOAT16 = """extern "C"  void  kernel(at::BFloat16* out_ptr0)
{
    auto tmp0 = at::vec::VectorizedN<float, 2>(0.5f);
    at::vec::convert<at::BFloat16,1,float,2>(tmp0).store(out_ptr0);
    auto tmp1 = at::vec::Vectorized<float>(0.25f);
    at::vec::convert<at::BFloat16,1,float,1>(tmp1).store(out_ptr0, 16);
}"""

KERNEL_WITH_SIN_AND_COS = """extern "C"  void  kernel(float* out_ptr0)
{
    auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0);
    auto tmp1 = tmp0.sin();
    auto tmp2 = tmp0.cos();
    (tmp1 + tmp2).store(out_ptr0);
}"""


def test_extern_calls_skip_the_dispatcher():
    # Note [Extern calls without the dispatcher]: the wrapper calls torchcx's kernel function,
    # with the same arguments; Inductor's registry holds no entry outside torchcx's compiles.
    x = torch.randn(2, 8, dtype=torch.complex64)
    out, code = compiled(lambda z: torch.cumsum(z, 1) * 2, x)
    torch.testing.assert_close(out, torch.cumsum(x, 1) * 2, rtol=0, atol=0)
    assert "= torchcx_extern_kernel('aten::cumsum.default', " in code
    assert "torch.ops.torchcx.extern.default(" not in code
    assert _inductor_patches._EXTERN_OP not in _custom_extern_codegen().CUSTOM_EXTERN_KERNEL_CODEGEN


def test_reshaped_cat_inputs_realized_in_their_own_shape(monkeypatch):
    # Note [Reshaped cat inputs realized in their own shape]: in an FNO layer's backward, the
    # weight gradient's real GEMM stacks each corner of the output gradient's spectrum into
    # its operand (a cat) through a reshape merging the two mode dims; the corner is computed
    # first, row-major, in its own (tiled) loops, where without the adjustment the cat
    # gathered it with each merged mode index split by division.
    code, code_without = _fno_backward_with_and_without(monkeypatch, "_reshaped_cat_inputs_realized", modes=8, batch=2)
    assert "div_floor_integer" not in code
    assert "div_floor_integer" in code_without


def _fno_backward_with_and_without(monkeypatch, adjustment: str, modes: int, batch: int) -> tuple[str, str]:
    """The backward's code of an FNO layer's weight gradients (16 channels, a 32x32 grid)
    compiled with and then without the adjustment ``adjustment`` (a context manager of
    ``_inductor_patches``), the gradients checked against eager's and bit-identical both ways."""
    from torchcx.bench.workloads.fno import SpectralConv2d

    torch.manual_seed(0)
    layer = SpectralConv2d(16, 16, modes, modes)
    x = torch.randn(batch, 16, 32, 32)

    def step(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(layer(x).pow(2).sum(), (layer.weights1, layer.weights2))

    with torchcx.config.patch(fft_path="vendor"):
        grads, code = compiled(step, x)
        monkeypatch.setattr(_inductor_patches, adjustment, contextlib.nullcontext)
        grads_without, code_without = compiled(step, x)
    for grad, without, expected in zip(grads, grads_without, step(x)):
        # FFTs and sums of products: float32 rounding relative to the largest term
        torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())
        torch.testing.assert_close(grad, without, rtol=0, atol=0)  # the same values, moved differently

    def backward(code: str) -> str:
        return next(part for part in code.split("# AOT ID:") if "_backward']" in part.split("\n", 1)[0])

    return backward(code), backward(code_without)


def test_dtype_rules_built_once(monkeypatch):
    # Note [Dtype rules built once]: Inductor constructs its dtype handler for every op it
    # emits; while torchcx compiles, the rules are installed once (again only if the registry
    # grew), where each construction installed them all again.
    handler = _dtype_propagation().DtypePropagationOpsHandler
    init, full = handler.__init__, []

    def counted(self):
        full.append(self)
        init(self)

    monkeypatch.setattr(handler, "__init__", counted)
    x = torch.randn(4, 8, dtype=torch.complex64)
    out, _ = compiled(torch.sin, x)
    torch.testing.assert_close(out, torch.sin(x))
    with_adjustment = len(full)
    monkeypatch.setattr(_inductor_patches, "_dtype_rules_built_once", contextlib.nullcontext)
    full.clear()
    compiled(torch.sin, x)
    assert with_adjustment <= 1 < 10 < len(full)


def test_reshaped_extern_inputs_realized_in_their_own_shape(monkeypatch):
    # Note [Reshaped extern inputs realized in their own shape]: a batched GEMM over an FFT's
    # kept modes takes each corner as a reshape of a permuted copy; the copy is computed in its
    # own (tiled) loops and the GEMM gets a reinterpretation of it, where without the
    # adjustment the reshape was copied with each merged mode index split by division.
    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bixy,ioxy->boxy", torch.fft.fft(x, dim=-2)[:, :, :8, :8], w)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 32, 32, 16, dtype=torch.complex64, generator=g)
    w = torch.randn(32, 32, 8, 8, dtype=torch.complex64, generator=g)
    with torchcx.config.patch(fft_path="vendor"):
        out, code = compiled(fn, x, w)
        monkeypatch.setattr(_inductor_patches, "_reshaped_extern_inputs_realized", contextlib.nullcontext)
        _, code_without = compiled(fn, x, w)
    torch.testing.assert_close(out, fn(x, w))
    gemm = next(line for line in code.splitlines() if "'aten::bmm.default'" in line)
    assert "[reinterpret_tensor(buf" in gemm and "div_floor_integer" not in code
    assert "div_floor_integer" in code_without


def test_merged_dims_split_before_a_copy(monkeypatch):
    # Note [Merged dims split before a copy]: in an FNO layer's backward, the weight gradient's
    # batched GEMM takes each corner of the output gradient's spectrum flattened to (modes, batch,
    # channels); its copy is run over the two mode dims the flattening merged (and tiled), where
    # without the adjustment each merged mode index was split by division and modulo.
    if not _inductor_patches._vector_tile():
        pytest.skip("Inductor has no vector ISA on this machine: nothing is tiled, nothing split")
    # (16 modes: whole 16x16 tiles; a batch of 8: MKL's GEMM, not the planar one of the cat test)
    code, code_without = _fno_backward_with_and_without(monkeypatch, "_merged_dims_split", modes=16, batch=8)
    assert "div_floor_integer" not in code and "transpose_mxn<int64_t" in code
    assert "div_floor_integer" in code_without


@pytest.mark.parametrize("perm", [(2, 3, 0, 1), (3, 2, 0, 1)], ids=["rows-outer", "columns-outer"])
def test_merged_dims_split_for_any_order_of_the_merged_dims(perm, monkeypatch):
    # Note [Merged dims split before a copy], on a corner of an FFT's output permuted either way,
    # flattened and negated before a batched GEMM: the copy is split (no division in the code)
    # and the product is eager's.
    if not _inductor_patches._vector_tile():
        pytest.skip("Inductor has no vector ISA on this machine: nothing is tiled, nothing split")

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        corner = torch.fft.fft(x, dim=-2)[:, :, :16, :32].permute(*perm)
        return torch.bmm(-corner.reshape(512, 4, 16), w)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, 64, 64, dtype=torch.complex64, generator=g)
    w = torch.randn(512, 16, 8, dtype=torch.complex64, generator=g)
    with torchcx.config.patch(fft_path="vendor"):
        out, code = compiled(fn, x, w)
        monkeypatch.setattr(_inductor_patches, "_merged_dims_split", contextlib.nullcontext)
        _, code_without = compiled(fn, x, w)
    expected = fn(x, w)
    # sums of 16 products of FFT outputs: float32 rounding relative to the largest term
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())
    assert "div_floor_integer" not in code
    assert "div_floor_integer" in code_without


def test_all_adjustments_apply_on_this_torch(caplog, fresh_warnings):
    # On the torch they were written for, every adjustment applies: no warning at all.
    x = torch.randn(64, dtype=torch.complex64)
    with caplog.at_level("WARNING"):
        out, _ = compiled(lambda z: torch.expm1(z * 2), x)
    torch.testing.assert_close(out, torch.expm1(x * 2))
    assert "torchcx" not in caplog.text


def test_on_another_torch_the_shuffles_stay_off_and_say_so(monkeypatch, caplog, fresh_warnings):
    # Note [Adjustments and torch versions]: on another minor the shuffles (which match
    # Inductor 2.13's C++) stay off, with one warning; the adjustments guarded by their
    # attributes still apply.
    from torchcx.bench.workloads.rotary import apply_rotary_emb, precompute_freqs_cis

    monkeypatch.setattr(torch, "__version__", "2.14.0+cpu")
    g = torch.Generator().manual_seed(0)
    xq, xk = torch.randn(1, 4, 2, 64, generator=g), torch.randn(1, 4, 2, 64, generator=g)
    freqs = precompute_freqs_cis(64, 4)
    with caplog.at_level("WARNING"):
        out, code = compiled(apply_rotary_emb, xq, xk, freqs)
        words, words_code = compiled(lambda z: torch.expm1(z * 2), torch.randn(64, dtype=torch.complex64))
    for got, want in zip(out, apply_rotary_emb(xq, xk, freqs)):
        torch.testing.assert_close(got, want)
    assert "deinterleave2" not in code and "interleave2" not in code
    assert "at::vec::cast<float>" in words_code and ".expm1()" in words_code
    warnings = [r for r in caplog.records if "written for torch 2.13" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    message = warnings[0].getMessage()
    assert "are off" in message
    assert all(f"[{name}]" in message for name in ("Interleaved access", "Words as pairs", "Pairs in lane order"))


@pytest.mark.skipif(
    not (sys.platform == "linux" and _cpu_vec_isa().pick_vec_isa()), reason="Inductor probes vector ISAs on Linux"
)
def test_the_isa_probe_is_remembered(tmp_path, monkeypatch):
    # Note [The ISA probe remembered]: Inductor's dlopen probe of an ISA test library runs in
    # a new Python process; while torchcx compiles, it runs once per library (and whenever
    # the library changes), and its success is read back from the stamp beside it.
    cpu_vec_isa = _cpu_vec_isa()
    isa = cpu_vec_isa.pick_vec_isa()
    libraries = []
    with monkeypatch.context() as m:  # build Inductor's test library (cached) and learn its path
        m.setattr(cpu_vec_isa.VecISA, "_probe_load", lambda self, path: libraries.append(path) or True)
        assert isa.check_build(cpu_vec_isa.VecISA._avx_code)
    built = Path(libraries[0])
    library = tmp_path / "isa.so"
    library.write_bytes(built.read_bytes())
    broken = tmp_path / "broken.so"
    broken.write_bytes(b"not a library")
    probes = []
    real_run = cpu_vec_isa.subprocess.run

    def counted(*args, **kwargs):
        probes.append(args[0][-1])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(cpu_vec_isa.subprocess, "run", counted)

    def probe(path):
        before = len(probes)
        loaded = isa._probe_load(str(path))
        return loaded, len(probes) - before

    assert probe(library) == (True, 1)  # outside torchcx's compilations: Inductor's probe, no stamp
    assert not (tmp_path / "isa.so.torchcx-probe").exists()
    with _inductor_patches.inductor_patches():
        assert probe(library) == (True, 1)  # the first probe runs, and leaves its stamp
        assert (tmp_path / "isa.so.torchcx-probe").exists()
        assert probe(library) == (True, 0)  # remembered
        library.write_bytes(built.read_bytes() + b"\0")  # another library at the same path
        assert probe(library) == (True, 1)
        assert probe(library) == (True, 0)
        assert probe(broken) == (False, 1)  # a failure is never remembered
        assert probe(broken) == (False, 1)
    assert probe(library) == (True, 1)  # the patch ends with torchcx's compilation


def test_bitcasts_of_computed_values_take_effect(monkeypatch):
    # Note [Bitcasts of computed values]: the OpInfo sample of diagonal_scatter compiles
    # (a 10x10 complex64 input is bitcast to words; reinplacing makes the scatter a mutation
    # through that bitcast)...
    x = torch.randn(10, 10, dtype=torch.complex64)
    src = torch.randn(10, dtype=torch.complex64)
    out, _ = compiled(torch.diagonal_scatter, x, src)
    torch.testing.assert_close(out, torch.diagonal_scatter(x, src))
    # ... and without the adjustment it does not, on torch 2.13 (pytorch/pytorch#189584: DtypeView
    # has no reindexer). When this half fails, Inductor has the fix and the adjustment can go.
    monkeypatch.setattr(_inductor_patches, "_pointwise_bitcasts", contextlib.nullcontext)
    with pytest.raises(Exception, match="make_reindexer NYI on DtypeView"):
        compiled(torch.diagonal_scatter, x, src)


def test_complex_warning_is_quieted_while_torchcx_compiles(monkeypatch):
    # quiet_complex_warning: Inductor's "does not support code generation for complex
    # operators" is reached while torchcx compiles (its pattern matcher looks at the complex
    # graph: a matrix product here) and is silenced there.
    lowering = _lowering()
    warned, quieted = [], []
    monkeypatch.setattr(lowering, "_warn_complex_not_supported", lambda: warned.append(1))
    for_this_thread = _patching.for_this_thread

    def spying(patched, original):
        if original is lowering._warn_complex_not_supported:
            silent = patched

            def patched():  # noqa: F811
                quieted.append(1)
                return silent()

        return for_this_thread(patched, original)

    monkeypatch.setattr(_patching, "for_this_thread", spying)  # (patched_for_this_thread's)
    x = torch.randn(8, 8, dtype=torch.complex64)
    out, _ = compiled(lambda z: z @ z, x)
    torch.testing.assert_close(out, x @ x)
    assert not warned
    assert quieted, "Inductor no longer reaches its complex warning while torchcx compiles: the adjustment is moot"


def test_torchcx_never_loads_a_stock_aot_autograd_entry(monkeypatch):
    # docs/internals.md, "The AOTAutograd cache": its key does not see the inner compiler, so
    # torchcx.compile(f) once loaded the entry a stock torch.compile(f) had saved and lowered
    # nothing (complex ops ran as Inductor's eager fallbacks). torchcx's identity is in the
    # key now (Note [torchcx graphs in AOTAutograd's cache]): torchcx misses, lowers, and
    # saves an entry of its own.
    import warnings

    from torch._dynamo.utils import counters
    from torch._inductor.utils import fresh_cache

    def f(z):
        return z * z.conj() + torch.exp(z)

    lowered = []
    retrace = torchcx.backend.retrace
    monkeypatch.setattr(torchcx.backend, "retrace", lambda *a, **k: lowered.append(1) or retrace(*a, **k))
    x = torch.randn(16, dtype=torch.complex64)
    with fresh_cache(), warnings.catch_warnings(), torch._functorch.config.patch(enable_autograd_cache=True):
        warnings.simplefilter("ignore")
        counters.clear()
        torch._dynamo.reset()
        torch.compile(f)(x)
        assert counters["aot_autograd"]["autograd_cache_saved"] == 1  # (the cache is live in this torch)
        counters.clear()
        torch._dynamo.reset()
        out = torchcx.compile(f)(x)
        assert counters["aot_autograd"]["autograd_cache_hit"] == 0
        assert counters["aot_autograd"]["autograd_cache_saved"] == 1
        assert lowered == [1]
    torch.testing.assert_close(out, f(x))
