"""Complex numbers with bfloat16 and float16 parts beyond OpInfo (docs/low-precision.md).

Making, converting and inspecting them; what a dtype named in code means
(Note [dtype of a ComplexTensor]); arithmetic in float32 rounded once per op;
native ``complex32`` tensors through ``torchcx.compile`` (in and out as
complex32, for ops eager ``chalf`` has no CPU kernel for) and ComplexTensors
with bfloat16 parts likewise; and a complex layer with bfloat16 parts that
trains, with and without float32 master weights.

Eager ``chalf`` lacks most CPU kernels, and nothing in PyTorch computes
complex values with bfloat16 parts, so the reference is complex64 on the same
(rounded) inputs, rounded once to the part dtype (``lowp_harness``); where
eager ``chalf`` has the op, its result must agree too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchcx
from compile_harness import record_inductor_graphs
from lowp_harness import error_in_ulps, high, rounded
from torchcx import ComplexTensor
from torchcx.bench.memory import peak_memory

PARTS = [torch.bfloat16, torch.float16]
C64 = torch.complex64


def native(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=C64, generator=g)


def lowp(*shape: int, part: torch.dtype, seed: int = 0) -> ComplexTensor:
    return torchcx.as_complex_tensor(native(*shape, seed=seed), part)


# -- making, converting, inspecting --------------------------------------------------------------


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_make_and_inspect(part: torch.dtype) -> None:
    re, im = torch.tensor([1.5, -2.0]).to(part), torch.tensor([0.25, 3.0]).to(part)
    z = torchcx.complex(re, im)
    assert z.re is re and z.im is im  # the parts as given, no copy
    assert z.dtype == torch.complex32 and z.component_dtype == part
    assert z.element_size() == 4 and z.nbytes == 8  # memory accounting: half of complex64's
    assert z.real.dtype == part and z.abs().dtype == part
    assert repr(z) == f"ComplexTensor([ 1.5000+0.2500j, -2.0000+3.0000j], component_dtype={part})"
    assert z.tolist() == [1.5 + 0.25j, -2 + 3j]


def test_as_complex_tensor_from_complex64_and_complex32() -> None:
    t = native(3, 4)
    b = torchcx.as_complex_tensor(t, torch.bfloat16)
    assert b.component_dtype == torch.bfloat16
    assert torch.equal(b.re, t.real.bfloat16()) and torch.equal(b.im, t.imag.bfloat16())
    # the parts the data already has: no copy, the ComplexTensor aliases the native tensor
    h = t.to(torch.complex32)
    z = torchcx.as_complex_tensor(h)
    assert z.component_dtype == torch.float16 and z.re.data_ptr() == h.data_ptr()
    z.mul_(2)
    assert torch.equal(h.to(C64), (t.to(torch.complex32).to(C64) * 2))
    assert torchcx.as_complex_tensor(z) is z and torchcx.as_complex_tensor(z, torch.float16) is z
    f = torchcx.as_complex_tensor(t)
    assert f.component_dtype == torch.float32 and f.re.data_ptr() == t.data_ptr()
    # a real tensor gets a zero imaginary part
    r = torchcx.as_complex_tensor(torch.ones(2, dtype=torch.bfloat16))
    assert r.component_dtype == torch.bfloat16 and r.tolist() == [1, 1]
    with pytest.raises(TypeError, match="complex parts"):
        torchcx.as_complex_tensor(t, torch.int32)


def test_as_complex_tensor_is_differentiable() -> None:
    t = native(4).requires_grad_()
    z = torchcx.as_complex_tensor(t, torch.bfloat16)
    assert z.requires_grad and z.component_dtype == torch.bfloat16
    (z.abs() ** 2).float().sum().backward()
    assert t.grad is not None
    torch.testing.assert_close(t.grad, 2 * t.detach(), rtol=2e-2, atol=2e-2)  # d|z|^2 = 2z, through bfloat16


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_to_and_back(part: torch.dtype) -> None:
    t = native(3)
    z = torchcx.as_complex_tensor(t, part)
    w = z.to(C64)  # parts converted; still a ComplexTensor
    assert isinstance(w, ComplexTensor) and w.component_dtype == torch.float32
    torch.testing.assert_close(w.to_interleaved(), rounded(t, part), rtol=0, atol=0)
    assert z.to(torch.complex128).component_dtype == torch.float64
    assert z.to(z.dtype) is z  # z.dtype is complex32 whatever the parts: nothing to do, as torch
    assert z.with_component_dtype(torch.float16).component_dtype == torch.float16
    # native tensors: complex64 for every part dtype, complex32 where the parts are float16
    assert torch.equal(z.to_interleaved(C64), rounded(t, part))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch: complex32 is experimental)
        h = z.with_component_dtype(torch.float16).to_interleaved(torch.complex32)
    assert type(h) is torch.Tensor and h.dtype == torch.complex32
    if part == torch.bfloat16:
        with pytest.raises(TypeError, match="no complex dtype with bfloat16 parts"):
            z.to_interleaved()
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.to(torch.float32).dtype == torch.float32  # a real dtype: the real part, as torch


def test_chalf_of_bfloat16_parts_is_a_no_op() -> None:
    # Tensor.to returns the tensor itself when it has the dtype already, before
    # any op reaches torchcx: bfloat16 parts report complex32.
    b = lowp(3, part=torch.bfloat16)
    assert b.chalf() is b and b.to(torch.complex32) is b


# -- what a named dtype means ------------------------------------------------------------------


def test_own_dtype_keeps_bfloat16_parts() -> None:
    b = lowp(2, 3, part=torch.bfloat16)
    made = {
        "zeros_like(dtype=)": torch.zeros_like(b, dtype=b.dtype),
        "full_like(dtype=)": torch.full_like(b, 1j, dtype=b.dtype),
        "new_zeros(dtype=)": b.new_zeros(2, dtype=b.dtype),
        "new_empty_strided(dtype=)": b.new_empty_strided((2,), (1,), dtype=b.dtype),
        "randn_like": torch.randn_like(b),
        "sum(dtype=)": b.sum(dtype=b.dtype),
        "to(dtype)": b.to(b.dtype),
    }
    for name, x in made.items():
        assert isinstance(x, ComplexTensor) and x.component_dtype == torch.bfloat16, name


def test_complex32_means_float16_elsewhere() -> None:
    # PyTorch's meaning; complex32_parts changes it for the ops torchcx computes.
    with torchcx.ops.ComplexMode():
        assert torch.zeros(2, dtype=torch.complex32).component_dtype == torch.float16
        with torchcx.complex32_parts(torch.bfloat16):
            assert torch.zeros(2, dtype=torch.complex32).component_dtype == torch.bfloat16
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        with torchcx.complex32_parts(torch.float32):
            pass


#: Ops PyTorch computes by decompositions that name ``self.dtype`` (complex32) or
#: its real counterpart: their results keep the inputs' bfloat16 parts.
DECOMPOSED: dict[str, Callable[[Any], Any]] = {
    "addcmul": lambda z: torch.addcmul(z, z, z * 1j, value=0.5),
    "addcdiv": lambda z: torch.addcdiv(z, z, z + 2, value=2),
    "renorm": lambda z: torch.renorm(z, 2, 0, 1.0),
    "pad.circular": lambda z: F.pad(z.unsqueeze(0), (1, 2), mode="circular").squeeze(0),
}


@pytest.mark.parametrize("name", list(DECOMPOSED))
def test_decompositions_keep_bfloat16_parts(name: str) -> None:
    fn = DECOMPOSED[name]
    b = lowp(3, 4, part=torch.bfloat16)
    with torchcx.ops.ComplexMode():
        out = fn(b)
    assert isinstance(out, ComplexTensor) and out.component_dtype == torch.bfloat16
    reference = fn(b.to_interleaved(C64))
    assert error_in_ulps(high(out), rounded(reference, torch.bfloat16), torch.bfloat16, normwise=False) <= 4


def test_view_as_complex_of_bfloat16_pair() -> None:
    pair = torch.randn(3, 2).bfloat16()
    with pytest.raises(RuntimeError, match="BFloat16"):
        torch.view_as_complex(pair)  # no complex dtype with bfloat16 parts in PyTorch
    with torchcx.ops.ComplexMode():
        z = torch.view_as_complex(pair)
    assert isinstance(z, ComplexTensor) and z.component_dtype == torch.bfloat16
    z.mul_(2)  # a view: writes reach the pair
    assert torch.equal(z.re, pair[:, 0]) and z.re.data_ptr() == pair.data_ptr()


def test_istft_of_bfloat16_parts() -> None:
    # istft views its input as real and back as complex (view_as_complex of a bfloat16 pair)
    x = native(64)
    window = torch.hann_window(16)
    spectrum = torch.stft(x, 16, hop_length=4, window=window, return_complex=True)
    b = torchcx.as_complex_tensor(spectrum, torch.bfloat16)
    with torchcx.ops.ComplexMode():
        # (a float32 window would promote the result to complex64, as torch promotes chalf with float32)
        back = torch.istft(b, 16, hop_length=4, window=window.bfloat16(), return_complex=True, length=64)
    assert back.component_dtype == torch.bfloat16
    assert error_in_ulps(high(back), rounded(x, torch.bfloat16), torch.bfloat16, normwise=True) <= 16


# -- arithmetic: float32, one rounding per op -----------------------------------------------------


def test_products_round_once() -> None:
    # z = x + i with x = 1 + 2^-4 + 2^-7 (a bfloat16 number): Re z^2 = x^2 - 1 = 0.14556884765625,
    # which rounds to 149/1024. The same formula in bfloat16 real arithmetic rounds x^2 first (to
    # 1.1484375) and gives 152/1024: three bfloat16 ulps off.
    x = torch.tensor([1 + 2.0**-4 + 2.0**-7], dtype=torch.bfloat16)
    z = torchcx.complex(x, torch.ones_like(x))
    assert (z * z).real.item() == 149 / 1024
    assert (x * x - 1).item() == 152 / 1024
    # (The matmul family rounds each of its real GEMMs to the part dtype before combining them:
    # Note [Complex GEMM strategies] bounds that error by 2u (|A||B|)_ij, test_linalg checks it.)


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_reductions_accumulate_in_float32(part: torch.dtype) -> None:
    # 4096 terms of 1 + 0.5i: a sum in bfloat16 would stall at 256 (spacing 2), in float16 at 2048.
    z = torchcx.complex(torch.ones(4096, dtype=part), torch.full((4096,), 0.5, dtype=part))
    assert z.sum().item() == 4096 + 2048j
    assert z.cumsum(0)[-1].item() == 4096 + 2048j
    assert (z.unsqueeze(0) @ torch.ones_like(z).unsqueeze(1)).item() == 4096 + 2048j


# -- through torchcx.compile: complex32 in and out, bfloat16 parts in and out -----------------------

#: Groups of ops compiled as one function each (a compilation takes seconds): (the ops, input shapes,
#: allowed error in u of the part dtype, normwise). test_opinfo_lowp.RULES gives the reasons.
Ops = dict[str, Callable[..., torch.Tensor]]
GROUPS: dict[str, tuple[Ops, tuple[tuple[int, ...], ...], float, bool]] = {
    "pointwise": (
        {
            "add": lambda a, b: a + b,
            "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b,
            "exp": lambda a, b: torch.exp(a),
            "log": lambda a, b: torch.log(a),
            "sqrt": lambda a, b: torch.sqrt(a),
            "sin": lambda a, b: torch.sin(a),
            "cos": lambda a, b: torch.cos(a),
            "tanh": lambda a, b: torch.tanh(a),
            "asin": lambda a, b: torch.asin(a),
            "atan": lambda a, b: torch.atan(a),
            "sigmoid": lambda a, b: torch.sigmoid(a),
            "pow": lambda a, b: a**2.5,
            "reciprocal": lambda a, b: torch.reciprocal(a),
            "abs": lambda a, b: torch.abs(a),
            "angle": lambda a, b: torch.angle(a),
        },
        ((4, 8), (4, 8)),
        4,
        False,
    ),
    "reductions": (
        {
            "sum": lambda a: a.sum(-1),
            "mean": lambda a: a.mean(0),
            "prod": lambda a: a[:, :6].prod(-1),
            "cumsum": lambda a: a.cumsum(-1),
            "vector_norm": lambda a: torch.linalg.vector_norm(a, dim=-1),
        },
        ((8, 64),),
        8,
        True,
    ),
    "matmul": (
        {
            "mm": lambda a, b, c: a[0] @ b[0],
            "bmm": lambda a, b, c: torch.bmm(a, b),
            "addmm": lambda a, b, c: torch.addmm(c, a[0], b[0], beta=0.5, alpha=1 - 1j),
            "einsum": lambda a, b, c: torch.einsum("bij,bjk->bik", a, b),
            "vdot": lambda a, b, c: torch.vdot(a[0, 0], b[0, :, 0]),
        },
        ((2, 8, 16), (2, 16, 4), (8, 4)),
        16,
        True,
    ),
    "fft": (
        {
            "fft": lambda a: torch.fft.fft(a),
            "fft.n=12": lambda a: torch.fft.fft(a, n=12),
            "ifft": lambda a: torch.fft.ifft(a, norm="ortho"),
            "fft2": lambda a: torch.fft.fft2(a),
            "irfft": lambda a: torch.fft.irfft(a, n=30),
        },
        ((4, 16),),
        16,
        True,
    ),
    "views and indexing": (
        {
            "view_as_real": lambda a, b: torch.view_as_real(a * 2),
            "where": lambda a, b: torch.where(a.real > 0, a, b),
            "cat": lambda a, b: torch.cat([a, b.conj()]),
            "index": lambda a, b: a[[0, 2], 1:5].mT,
            "masked_fill": lambda a, b: a.masked_fill(b.imag > 0, 1 - 2j),
        },
        ((4, 8), (4, 8)),
        0,
        False,
    ),
}


def _compiled_group(ops: Ops, args: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """All ops of a group in one torchcx.compile'd function; its graphs must be real-only."""

    def group(*args: torch.Tensor) -> dict[str, torch.Tensor]:
        return {name: op(*args) for name, op in ops.items()}

    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch: complex32 is experimental)
        out = torchcx.compile(group)(*args)
    assert not recorder.complex_nodes, f"complex values reached Inductor: {recorder.complex_nodes[:3]}"
    return out


def _reference(ops: Ops, args: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """The ops in complex64 on the inputs' values (the complex32 or bfloat16 ones, exactly)."""
    upcast = [a.to_interleaved(C64) if isinstance(a, ComplexTensor) else a.to(C64) for a in args]
    return {name: op(*upcast) for name, op in ops.items()}


def _check_values(
    out: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], part: torch.dtype, ulps: float, normwise: bool
) -> None:
    for name, r in reference.items():
        error = error_in_ulps(high(out[name]), rounded(r, part), part, normwise, unrounded=r)
        assert error <= ulps, f"{name}: off by {error:.3g}u (allowed {ulps}u)"


@pytest.mark.parametrize("group", list(GROUPS))
def test_chalf_in_and_out(group: str) -> None:
    ops, shapes, ulps, normwise = GROUPS[group]
    args = [native(*s, seed=i).to(torch.complex32) for i, s in enumerate(shapes)]
    out = _compiled_group(ops, args)
    reference = _reference(ops, args)
    for name, r in reference.items():
        want = torch.complex32 if r.is_complex() else torch.float16
        assert type(out[name]) is torch.Tensor and out[name].dtype == want, f"{name}: {out[name].dtype}"
    _check_values(out, reference, torch.float16, ulps, normwise)
    # Where eager chalf has a CPU kernel it agrees; most ops have none ("not implemented for 'ComplexHalf'").
    for name, op in ops.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                eager = op(*args)
        except (NotImplementedError, RuntimeError):
            continue
        assert error_in_ulps(high(out[name]), high(eager), torch.float16, normwise=True) <= 2, name


@pytest.mark.parametrize("group", list(GROUPS))
def test_bfloat16_parts_in_and_out(group: str) -> None:
    ops, shapes, ulps, normwise = GROUPS[group]
    args = [lowp(*s, part=torch.bfloat16, seed=i) for i, s in enumerate(shapes)]
    out = _compiled_group(ops, args)
    reference = _reference(ops, args)
    for name, r in reference.items():
        o = out[name]
        if r.is_complex():
            assert isinstance(o, ComplexTensor) and o.component_dtype == torch.bfloat16, name
        else:
            # a real tensor; view_as_real of planar parts is a RealView, in eager as here
            assert not isinstance(o, ComplexTensor) and o.dtype == torch.bfloat16, name
    _check_values(out, reference, torch.bfloat16, ulps, normwise)


# -- training ------------------------------------------------------------------------------------


class ComplexLinear(nn.Module):
    """y = x W^T with a complex weight computed in ``part``; stored in ``master`` (float32 master weights) or ``part``."""

    def __init__(self, features: int, part: torch.dtype, master: torch.dtype | None = None) -> None:
        super().__init__()
        self.part = part
        w = native(features, features, seed=1) / features**0.5
        self.weight = nn.Parameter(torchcx.as_complex_tensor(w, master or part))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # differentiable: with master weights the gradient reaches the float32 parts
        return x @ self.weight.with_component_dtype(self.part).mT


def _train(model: nn.Module, steps: int, lr: float) -> list[float]:
    n = 16
    target = native(n, n, seed=2) / n**0.5
    x = native(64, n, seed=3)
    xb = torchcx.as_complex_tensor(x, torch.bfloat16)
    yb = torchcx.as_complex_tensor(x @ target.mT, torch.bfloat16)

    def loss_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        d = model(x) - y
        return (d.real.float() ** 2 + d.imag.float() ** 2).mean()  # the loss in float32

    step = torchcx.compile(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step(xb, yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("master", [None, torch.float32], ids=["bfloat16 weights", "float32 master weights"])
def test_bfloat16_complex_layer_trains(master: torch.dtype | None) -> None:
    torch._dynamo.reset()
    model = ComplexLinear(16, torch.bfloat16, master)
    losses = _train(model, steps=40, lr=3e-2)
    assert losses[-1] < 0.02 * losses[0], losses[::8]
    weight = model.weight
    assert isinstance(weight, ComplexTensor) and weight.component_dtype == (master or torch.bfloat16)
    assert isinstance(weight.grad, ComplexTensor) and weight.grad.component_dtype == weight.component_dtype


def test_eager_backward_of_real_part_needs_complex_mode() -> None:
    # The backward of view_as_real (reached by .real and .imag) is view_as_complex of the
    # gradient: for bfloat16 parts only torchcx can make it (docs/low-precision.md).
    z = lowp(4, part=torch.bfloat16).requires_grad_()
    loss = (z * z.conj()).real.float().sum()
    with torchcx.ops.ComplexMode():
        loss.backward()
    assert isinstance(z.grad, ComplexTensor) and z.grad.component_dtype == torch.bfloat16
    assert torch.equal(z.grad.re, (2 * z.detach()).re) and torch.equal(z.grad.im, (2 * z.detach()).im)


# -- memory --------------------------------------------------------------------------------------

#: name: (program, shapes of its complex inputs, bound on the bfloat16 / complex64 ratio of the
#: program's peak memory). Compiled, the FFT on the real path for both (the same algorithm), as in
#: benchmarks/low_precision.py. Each bound follows from the buffers the compiled program holds at
#: its peak, which depend on the graph only (library scratch is left out: Note [Library scratch in
#: memory figures]):
#: * rotation: inputs and output, the same elements at half the bytes: exactly 1/2;
#: * matmul (8x128x128 @ 8x128x128, M = one complex64 matrix batch): complex64 holds 2M of inputs and
#:   M of output; bfloat16 parts hold M of inputs, two output parts (M/2) and one product part
#:   beside them (four real GEMMs written into two outputs, M/4): (M + 3M/4) / 3M = 7/12;
#: * fft (16x4096): the data buffers (input, one stage buffer, output) at half the bytes, plus the
#:   bfloat16 DFT matrices of the stages (2 x 128x128, 64 KiB, 4% of complex64's 1.5 MiB): 0.55.
MEMORY_CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], float]] = {
    "rotation": (lambda x, f: x * f, [(4, 256, 8, 32), (1, 256, 1, 32)], 1 / 2),
    "matmul": (torch.matmul, [(8, 128, 128), (8, 128, 128)], 7 / 12),
    "fft": (torch.fft.fft, [(16, 4096)], 0.55),
}


@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_bfloat16_parts_halve_peak_memory(case: str) -> None:
    # The program's peak tensor memory from the allocator's records: the same bytes on every
    # run and every CPU (a GEMM library's scratch, which differs by CPU, is left out).
    program, shapes, bound = MEMORY_CASES[case]
    c64 = [native(*shape, seed=i) for i, shape in enumerate(shapes)]
    bf16 = [torchcx.as_complex_tensor(x, torch.bfloat16) for x in c64]
    peaks = []
    with torchcx.config.patch(fft_path="real"):
        for args in (c64, bf16):
            fn = torchcx.compile(lambda *a: program(*a), dynamic=False)
            fn(*args)
            peaks.append(peak_memory(fn, tuple(args))["program_peak_bytes"])
    assert peaks[1] <= bound * peaks[0], (
        f"bfloat16 {peaks[1]} B, complex64 {peaks[0]} B: ratio {peaks[1] / peaks[0]:.3f}"
    )
