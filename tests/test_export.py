"""torchcx.export: real-only exported programs, and their routes to deployment (issue 20).

Every program of ``export_programs.PROGRAMS`` goes through each route and must match
eager within its float tolerance: the exported program run from Python, in both
signatures; ``torch.export.save``/``load`` then AOTInductor; ``torch.onnx.export``
then onnxruntime. The ONNX route needs the ``export`` extra (onnx, onnxscript,
onnxruntime) and is skipped, saying so, without it.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils._pytree import tree_flatten

import torchcx
from export_programs import PROGRAMS, Program
from torchcx.tensor import ComplexTensor

BY_NAME = {p.name: p for p in PROGRAMS}
HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript", "onnxruntime"))
needs_onnx = pytest.mark.skipif(
    not HAS_ONNX, reason="the ONNX route needs the export extra: pip install -e '.[export]'"
)

# Programs whose inputs have bfloat16 parts have no complex dtype: only the real signature.
_BFLOAT16_INPUTS = {p.name for p in PROGRAMS if any(isinstance(a, ComplexTensor) for a in p.make(True)[1])}
# (boundary views: the complex signature's view_as_real of inputs and view_as_complex of outputs)
_BOUNDARY = {torch.ops.aten.view_as_real.default, torch.ops.aten.view_as_complex.default}


def _pairs(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return torch.stack([x.re, x.im], dim=-1)
    if isinstance(x, torch.Tensor) and x.is_complex():
        return torch.view_as_real(x.resolve_conj())
    return x


@functools.cache
def _case(name: str) -> tuple[torch.nn.Module, tuple[Any, ...], Any]:
    """(module, example inputs, eager's result) of a program at test size, made once."""
    module, args = BY_NAME[name].make(True)
    with torch.no_grad():
        return module, args, module(*args)


@functools.cache
def _exported(name: str, complex_io: str, target: str = "aoti", fft: str = "auto") -> torch.export.ExportedProgram:
    module, args, _ = _case(name)
    return torchcx.export(module, args, complex_io=complex_io, target=target, fft=fft)


def _inputs(name: str, complex_io: str) -> tuple[Any, ...]:
    args = _case(name)[1]
    return args if complex_io == "complex" else tuple(_pairs(a) for a in args)


def _assert_matches_eager(program: Program, got: Any, complex_io: str) -> None:
    expected = _case(program.name)[2]
    got_leaves, expected_leaves = tree_flatten(got)[0], tree_flatten(expected)[0]
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        if complex_io == "complex":
            assert g.dtype == e.dtype
        e = _pairs(e)
        g = _pairs(g)
        assert g.shape == e.shape
        scale = e.double().abs().max().clamp_min(1e-30)
        error = ((g.double() - e.double()).abs().max() / scale).item()
        assert error <= program.rtol, f"{program.name}: max error {error:.2e} of the largest magnitude"


def _complex_nodes(ep: torch.export.ExportedProgram, allowed: set[Any]) -> list[str]:
    found = []
    for node in ep.graph.nodes:
        values = [v for v in tree_flatten(node.meta.get("val"))[0] if isinstance(v, torch.Tensor)]
        if any(v.is_complex() for v in values) and not (node.op == "placeholder" or node.target in allowed):
            found.append(f"{node.name}: {node.target}")
    return found


def _io_cases() -> list[Any]:
    return [
        pytest.param(p, io, id=f"{p.name}-{io}")
        for p in PROGRAMS
        for io in ("complex", "real")
        if not (io == "complex" and p.name in _BFLOAT16_INPUTS)
    ]


@pytest.mark.parametrize("program,complex_io", _io_cases())
def test_exported_graph_is_real_and_matches_eager(program: Program, complex_io: str) -> None:
    ep = _exported(program.name, complex_io)
    assert _complex_nodes(ep, _BOUNDARY if complex_io == "complex" else set()) == []
    for name, value in ep.state_dict.items():
        assert not value.is_complex(), f"state {name} is complex"
    with torch.no_grad():
        _assert_matches_eager(program, ep.module()(*_inputs(program.name, complex_io)), complex_io)


def _signature(program: Program) -> str:
    return "real" if program.name in _BFLOAT16_INPUTS else "complex"


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_save_load_then_aoti(program: Program, tmp_path: Any) -> None:
    complex_io = _signature(program)
    torch.export.save(_exported(program.name, complex_io), tmp_path / "program.pt2")
    loaded = torch.export.load(tmp_path / "program.pt2")
    inputs = _inputs(program.name, complex_io)
    with torch.no_grad():
        _assert_matches_eager(program, loaded.module()(*inputs), complex_io)
    # (torchcx's adjustments in the generated kernels; the plain function is tested below)
    package = torchcx.aoti_compile_and_package(loaded, package_path=str(tmp_path / "model.pt2"))
    runner = torch._inductor.aoti_load_package(package)
    _assert_matches_eager(program, runner(*inputs), complex_io)


def run_onnx(path: str, inputs: tuple[torch.Tensor, ...], outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run the ONNX model at ``path`` in onnxruntime on ``inputs``; ``outputs`` give shapes and dtypes.

    bfloat16 tensors go in and out as their bits (onnxruntime's Python API has no
    bfloat16 array type), bound with their ONNX element type.
    """
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    keep = []

    def ort_value(t: torch.Tensor) -> Any:
        if t.dtype == torch.bfloat16:
            bits = t.contiguous().view(torch.int16).numpy().view(np.uint16)
            keep.append(bits)
            return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, 16)  # TensorProto.BFLOAT16
        array = t.contiguous().numpy()
        keep.append(array)
        return ort.OrtValue.ortvalue_from_numpy(array)

    for meta, t in zip(session.get_inputs(), inputs):
        binding.bind_ortvalue_input(meta.name, ort_value(t))
    results = [torch.empty(o.shape, dtype=o.dtype) for o in outputs]
    for meta, t in zip(session.get_outputs(), results):
        binding.bind_ortvalue_output(meta.name, ort_value(t))
    session.run_with_iobinding(binding)
    out = []
    for t, array in zip(results, keep[len(inputs) :]):
        data = (
            torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
            if t.dtype == torch.bfloat16
            else torch.from_numpy(array)
        )
        out.append(data)
    return out


# onnxruntime's CPU provider has no bfloat16 kernels for Neg, Mul, Div, ... (only casts and a few ops).
_ONNX_XFAIL = {"complex-mlp-bf16": "onnxruntime's CPU provider has no bfloat16 Neg/Mul kernels"}


@needs_onnx
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_onnx_runs_in_onnxruntime(program: Program, tmp_path: Any) -> None:
    if program.name in _ONNX_XFAIL:
        pytest.xfail(_ONNX_XFAIL[program.name])
    ep = _exported(program.name, "real", target="onnx")
    inputs = _inputs(program.name, "real")
    onnx_program = torch.onnx.export(ep, inputs, dynamo=True, verbose=False)
    onnx_program.save(str(tmp_path / "model.onnx"))
    expected = [_pairs(e) for e in tree_flatten(_case(program.name)[2])[0]]
    got = run_onnx(str(tmp_path / "model.onnx"), inputs, expected)
    _assert_matches_eager(program, got, "real")


@pytest.mark.parametrize("route", ["python", "aoti", pytest.param("onnx", marks=needs_onnx)])
def test_vendor_fft(route: str, tmp_path: Any) -> None:
    """fft="vendor" keeps the aten FFT ops (on complex tensors made of the parts); each target runs them."""
    program = BY_NAME["rfft-phase-irfft"]
    complex_io = "real" if route == "onnx" else "complex"
    ep = _exported(program.name, complex_io, "onnx" if route == "onnx" else "aoti", "vendor")
    targets = {str(n.target) for n in ep.graph.nodes}
    assert {"aten._fft_r2c.default", "aten._fft_c2r.default"} <= targets
    inputs = _inputs(program.name, complex_io)
    if route == "python":
        got = ep.module()(*inputs)
    elif route == "aoti":
        package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "model.pt2"))
        got = torch._inductor.aoti_load_package(package)(*inputs)
    else:
        torch.onnx.export(ep, inputs, dynamo=True, verbose=False).save(str(tmp_path / "model.onnx"))
        got = run_onnx(str(tmp_path / "model.onnx"), inputs, [_case(program.name)[2]])[0]
    _assert_matches_eager(program, got, complex_io)


def test_vendor_gemm_in_aoti(tmp_path: Path) -> None:
    """gemm="vendor" keeps complex matrix products as aten ops on complex tensors; AOTInductor runs them."""
    program = BY_NAME["complex-mlp"]
    module, args, _ = _case(program.name)
    ep = torchcx.export(module, args, gemm="vendor")
    products = [n for n in ep.graph.nodes if n.target is torch.ops.aten.mm.default]
    assert products and all(n.meta["val"].is_complex() for n in products)
    package = torchcx.aoti_compile_and_package(ep, package_path=str(tmp_path / "model.pt2"))
    _assert_matches_eager(program, torch._inductor.aoti_load_package(package)(*args), "complex")


@pytest.mark.parametrize("complex_io", ["complex", "real"])
def test_dynamic_batch(complex_io: str) -> None:
    module, args, _ = _case("complex-mlp")
    batch = torch.export.Dim("batch")
    ep = torchcx.export(module, args, complex_io=complex_io, dynamic_shapes=({0: batch},))
    z = torch.randn(7, args[0].shape[1], dtype=torch.complex64)
    with torch.no_grad():
        got, expected = ep.module()(z if complex_io == "complex" else _pairs(z)), module(z)
    torch.testing.assert_close(_pairs(got), _pairs(expected), rtol=1e-5, atol=1e-5)


class _RopeUpTo(torch.nn.Module):
    """LLaMA's rotary embedding for any sequence up to ``max_seq`` (freqs_cis sliced to it)."""

    def __init__(self, head_dim: int, max_seq: int) -> None:
        super().__init__()
        from export_programs import precompute_freqs_cis

        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, max_seq))

    def forward(self, xq: torch.Tensor) -> torch.Tensor:
        seq = xq.shape[1]
        x = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        freqs = self.freqs_cis[:seq].view(1, seq, 1, x.shape[-1])
        return torch.view_as_real(x * freqs).flatten(3).type_as(xq)


def test_dynamic_batch_and_sequence_rope_in_aoti(tmp_path: Path) -> None:
    """An LLM's rotary embedding exported once for every batch and sequence length, run by AOTInductor."""
    module = _RopeUpTo(16, 64)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=64)
    ep = torchcx.export(module, (torch.randn(2, 8, 2, 16),), dynamic_shapes=({0: batch, 1: seq},))
    runner = torch._inductor.aoti_load_package(
        torchcx.aoti_compile_and_package(ep, package_path=str(tmp_path / "rope.pt2"))
    )
    for shape in [(3, 5, 2, 16), (1, 64, 2, 16)]:
        x = torch.randn(*shape)
        expected = module(x)
        torch.testing.assert_close(ep.module()(x), expected)
        torch.testing.assert_close(runner(x), expected)


@pytest.mark.parametrize("complex_io", ["complex", "real"])
def test_input_mutation(complex_io: str) -> None:
    def scale_(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.mul_(y)
        return x.abs()

    x, y = torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 4, dtype=torch.complex64)
    ep = torchcx.export(scale_, (x.clone(), y), complex_io=complex_io)
    eager_x = x.clone()
    expected = scale_(eager_x, y)
    given = x.clone() if complex_io == "complex" else _pairs(x.clone()).clone()
    got = ep.module()(given, y if complex_io == "complex" else _pairs(y))
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(given if complex_io == "complex" else torch.view_as_complex(given), eager_x)


def test_exp_of_complex_difference_runs_in_aoti(tmp_path: Any) -> None:
    """torch 2.13's own AOTInductor fails at run time on this program ("Mismatch between ints
    consumed and num_ints"); through torchcx.export (and save/load) it runs, from plain
    aoti_compile_and_package too."""

    def phase(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.exp(1j * (a - b)) * a

    a, b = torch.randn(4, 8, dtype=torch.complex64), torch.randn(4, 8, dtype=torch.complex64)
    ep = torchcx.export(phase, (a, b))
    # torch.export.save of a graph with a Python complex constant (1j) failed upstream
    # (pytorch#160749); here the constant is two real numbers
    torch.export.save(ep, tmp_path / "phase.pt2")
    ep = torch.export.load(tmp_path / "phase.pt2")
    package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "model.pt2"))
    got = torch._inductor.aoti_load_package(package)(a, b)
    torch.testing.assert_close(got, phase(a, b))


def test_errors_name_the_problem() -> None:
    z = torch.randn(3, 3, dtype=torch.complex64)
    low = torchcx.complex(z.real.to(torch.bfloat16), z.imag.to(torch.bfloat16))
    with pytest.raises(TypeError, match="bfloat16 parts has no complex dtype.*complex_io='real'"):
        torchcx.export(torch.exp, (low,))
    with pytest.raises(NotImplementedError, match=r"torchcx.export: .*linalg_inv.*complex64"):
        torchcx.export(torch.linalg.inv, (z,))
    with pytest.raises(ValueError, match="complex_io"):
        torchcx.export(torch.exp, (z,), complex_io="pairs")
    with pytest.raises(ValueError, match="fft must be 'auto', 'real' or 'vendor'"):
        torchcx.export(torch.exp, (z,), fft="fast")
    with pytest.raises(ValueError, match="gemm='vendor' keeps complex matrix products"):
        torchcx.export(torch.matmul, (z, z), gemm="vendor", target="onnx")


CPP_RUNNER = Path(__file__).parent.parent / "examples" / "export_cpp" / "run_package.cpp"


@pytest.mark.skipif(shutil.which("g++") is None, reason="building the C++ runner needs g++")
def test_package_runs_from_cpp(tmp_path: Path) -> None:
    """The AOTInductor package of a real-signature program runs from C++ (examples/export_cpp)."""
    torch_dir = Path(torch.__file__).parent
    runner = tmp_path / "run_package"
    build = [
        "g++", "-std=c++20", "-O1", str(CPP_RUNNER), "-o", str(runner),
        f"-I{torch_dir / 'include'}", f"-I{torch_dir / 'include/torch/csrc/api/include'}",
        f"-L{torch_dir / 'lib'}", f"-Wl,-rpath,{torch_dir / 'lib'}", "-ltorch", "-ltorch_cpu", "-lc10",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}",
    ]  # fmt: skip
    subprocess.run(build, check=True, capture_output=True)
    program = BY_NAME["fno-spectral-conv"]
    package = torch._inductor.aoti_compile_and_package(
        _exported(program.name, "real"), package_path=str(tmp_path / "model.pt2")
    )
    (x,) = _inputs(program.name, "real")
    x.contiguous().numpy().tofile(tmp_path / "x.bin")
    shape = ",".join(str(s) for s in x.shape)
    subprocess.run([str(runner), package, str(tmp_path / "out"), str(tmp_path / "x.bin"), shape], check=True)
    expected = _case(program.name)[2]
    got = torch.from_numpy(np.fromfile(tmp_path / "out0.bin", dtype=np.float32)).view(expected.shape)
    _assert_matches_eager(program, got, "real")
