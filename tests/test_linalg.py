"""Linear algebra beyond OpInfo: matmul broadcasting, real x complex operands,
float16/bfloat16 parts, complex alpha/beta, convolutions, norms, pinv, extern kernels.

Native complex PyTorch is the reference throughout; ComplexTensors are made
from private copies of the native inputs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torchcx
from torchcx import ComplexTensor
from torchcx.ops.linalg import complex_bilinear, complex_matmul

DTYPES = [torch.complex64, torch.complex128]
dtype_ids = ["complex64", "complex128"]


def rand(*shape: int, dtype: torch.dtype = torch.complex64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + sum(shape))
    return torch.randn(shape, dtype=dtype, generator=g)


def cx(t: torch.Tensor) -> Any:
    """A ComplexTensor over a private copy of a native complex tensor (real tensors pass through)."""
    return ComplexTensor.from_interleaved(t.clone()) if t.is_complex() else t.clone()


def native(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved(torch.complex64) if x.component_dtype == torch.bfloat16 else x.to_interleaved()
    return x


def check(fn: Callable[..., Any], *args: Any, mode: bool = False, **kwargs: Any) -> Any:
    """fn on ComplexTensors (under ComplexMode if ``mode``) equals fn on native tensors."""
    expected = fn(*args, **kwargs)
    with torchcx.ops.ComplexMode() if mode else contextlib.nullcontext():
        actual = fn(*(cx(a) if isinstance(a, torch.Tensor) else a for a in args), **kwargs)
    assert isinstance(actual, ComplexTensor) == expected.is_complex()
    torch.testing.assert_close(native(actual), expected)
    return actual


# -- matmul broadcasting -------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)),  # dot
    ((3,), (3, 4)),  # vector x matrix
    ((4, 3), (3,)),  # mv
    ((4, 3), (3, 5)),  # mm
    ((2, 4, 3), (3, 5)),  # batched x matrix
    ((4, 3), (2, 3, 5)),  # matrix x batched
    ((3,), (2, 3, 4)),  # vector x batched
    ((2, 4, 3), (3,)),  # batched x vector
    ((2, 1, 4, 3), (5, 3, 2)),  # broadcast batch dims
    ((2, 4, 0), (0, 3)),  # empty contraction
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_matmul_broadcasting(shapes: tuple[tuple[int, ...], ...], dtype: torch.dtype) -> None:
    a, b = rand(*shapes[0], dtype=dtype), rand(*shapes[1], dtype=dtype, seed=1)
    check(torch.matmul, a, b)


def test_matmul_conjugated_and_transposed_operands() -> None:
    # conj() is a lazily negated imaginary part; mH adds a transpose on top.
    a, b = rand(4, 3), rand(4, 3, seed=1)
    torch.testing.assert_close(native(cx(a).mH @ cx(b)), a.mH @ b)
    torch.testing.assert_close(native(cx(a) @ cx(b).conj().mT), a @ b.conj().mT)
    torch.testing.assert_close(native(torch.vdot(cx(a[0]), cx(b[0]))), torch.vdot(a[0], b[0]))


# -- real x complex ----------------------------------------------------------------------

SAME_DTYPE_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    # torch requires one dtype for these: a real operand with a complex one is an error.
    "mm": lambda x, y: torch.mm(x.reshape(2, 3), y.reshape(3, 2)),
    "bmm": lambda x, y: torch.bmm(x.reshape(1, 2, 3), y.reshape(1, 3, 2)),
    "matmul": lambda x, y: torch.matmul(x.reshape(2, 3), y.reshape(3, 2)),
    "mv": lambda x, y: torch.mv(x.reshape(2, 3), y[:3]),
    "dot": torch.dot,
    "vdot": torch.vdot,
    "addmm": lambda x, y: torch.addmm(x[:4].reshape(2, 2), x.reshape(2, 3), y.reshape(3, 2)),
    "baddbmm": lambda x, y: torch.baddbmm(x[:4].reshape(1, 2, 2), x.reshape(1, 2, 3), y.reshape(1, 3, 2)),
    "addbmm": lambda x, y: torch.addbmm(x[:4].reshape(2, 2), x.reshape(1, 2, 3), y.reshape(1, 3, 2)),
    "addmv": lambda x, y: torch.addmv(x[:2], x.reshape(2, 3), y[:3]),
    "linear": lambda x, y: F.linear(x.reshape(2, 3), y.reshape(2, 3)),
    "linalg.cross": lambda x, y: torch.linalg.cross(x.reshape(2, 3), y.reshape(2, 3)),
}


@pytest.mark.parametrize("order", ["real_complex", "complex_real"])
@pytest.mark.parametrize("name", list(SAME_DTYPE_OPS))
def test_same_dtype_ops_reject_real_complex_mix(name: str, order: str) -> None:
    fn = SAME_DTYPE_OPS[name]
    c, r = rand(6), torch.randn(6)
    args = (r, c) if order == "real_complex" else (c, r)
    with pytest.raises(RuntimeError):
        fn(*args)  # eager
    with pytest.raises(RuntimeError):
        fn(*(cx(a) for a in args))  # torchcx, as eager


def test_same_dtype_ops_reject_mixed_precision() -> None:
    a, b = cx(rand(2, 3)), cx(rand(3, 2, dtype=torch.complex128))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(a, b)
    # bfloat16 and float16 parts both report complex32: still different types.
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(a.with_component_dtype(torch.bfloat16), cx(rand(3, 2)).with_component_dtype(torch.float16))


PROMOTING_OPS: dict[str, Callable[..., Any]] = {
    # torch promotes real operands here; torchcx computes them with two real products.
    "addr": lambda s, u, v: torch.addr(s, u, v),
    "addr_alpha_beta": lambda s, u, v: torch.addr(s, u, v, beta=0.5 - 1j, alpha=2 + 3j),
    "outer": lambda s, u, v: torch.outer(u, v),
    "kron": lambda s, u, v: torch.kron(u.reshape(2, 2), v.reshape(2, 2)),
}


@pytest.mark.parametrize("real", ["self", "u", "v", "u_v"])
@pytest.mark.parametrize("name", list(PROMOTING_OPS))
def test_promoting_ops_real_and_complex(name: str, real: str) -> None:
    tensors = {"self": rand(4, 4), "u": rand(4, seed=1), "v": rand(4, seed=2)}
    for key in real.split("_"):
        tensors[key] = tensors[key].real.clone()
    check(PROMOTING_OPS[name], tensors["self"], tensors["u"], tensors["v"])


@pytest.mark.parametrize("strategy", ["4m", "3m"])
@pytest.mark.parametrize("real", [None, "a", "b"])
def test_real_operand_costs_two_products(real: str | None, strategy: str) -> None:
    calls = []

    def gemm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls.append((x.shape, y.shape))
        return torch.mm(x, y)

    a, b = rand(3, 4), rand(4, 2, seed=1)
    if real == "a":
        a = a.real.clone()
    if real == "b":
        b = b.real.clone()
    re, im = complex_matmul(cx(a), cx(b), gemm=gemm, strategy=strategy)
    assert len(calls) == (2 if real else int(strategy[0]))
    expected = a.to(torch.complex64) @ b.to(torch.complex64)
    torch.testing.assert_close(torch.complex(re, im), expected)


@pytest.mark.parametrize("strategy", ["4m", "3m"])
@pytest.mark.parametrize("conj", ["", "a", "b", "ab"])
@pytest.mark.parametrize("real", [None, "a", "b"])
def test_strategies_and_conjugated_operands(strategy: str, conj: str, real: str | None) -> None:
    a, b = rand(5, 6, dtype=torch.complex128), rand(6, 4, dtype=torch.complex128, seed=1)
    if real == "a":
        a = a.real.clone()
    if real == "b":
        b = b.real.clone()
    re, im = complex_bilinear(
        torch.mm,
        cx(a),
        cx(b),
        strategy=strategy,
        conj_a="a" in conj,
        conj_b="b" in conj,  # type: ignore[arg-type]
    )
    ea = a.conj() if "a" in conj else a
    eb = b.conj() if "b" in conj else b
    expected = ea.to(torch.complex128) @ eb.to(torch.complex128)
    torch.testing.assert_close(torch.complex(re, im), expected)


def test_unknown_strategy_is_an_error() -> None:
    with pytest.raises(ValueError, match="strategy"):
        complex_matmul(cx(rand(2, 2)), cx(rand(2, 2)), strategy="5m")  # type: ignore[arg-type]


# -- float16 / bfloat16 parts -------------------------------------------------------------
#
# Reference: the same op in complex64 on the same (rounded) inputs. Bound, per
# output part: 3u * scale, with u the part dtype's unit roundoff and scale the
# op applied to the moduli (|beta||S| + |alpha||A||B| for addmm). The products
# are rounded once to the part dtype (torch's float32-accumulating GEMMs), the
# combination once more: 2u * scale by Note [Complex GEMM strategies], plus
# slack for float32 accumulation and the alpha/beta products. (Measured: <= 1u.)

LOW = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}

LOW_PRECISION_OPS: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "mm": (torch.mm, ((8, 16), (16, 4))),
    "bmm": (torch.bmm, ((2, 8, 16), (2, 16, 4))),
    "mv": (torch.mv, ((8, 16), (16,))),
    "dot": (torch.dot, ((16,), (16,))),
    "vdot": (torch.vdot, ((16,), (16,))),
    "matmul": (torch.matmul, ((2, 8, 16), (16, 4))),
    "addmm": (lambda s, a, b: torch.addmm(s, a, b, beta=1 - 2j, alpha=2 + 3j), ((8, 4), (8, 16), (16, 4))),
    "baddbmm": (lambda s, a, b: torch.baddbmm(s, a, b, beta=0.5, alpha=1j), ((2, 8, 4), (2, 8, 16), (2, 16, 4))),
    "addbmm": (lambda s, a, b: torch.addbmm(s, a, b, alpha=-1 + 1j), ((8, 4), (3, 8, 16), (3, 16, 4))),
    "addmv": (lambda s, a, b: torch.addmv(s, a, b, beta=2j), ((8,), (8, 16), (16,))),
    "addr": (lambda s, a, b: torch.addr(s, a, b, alpha=1 + 1j), ((8, 4), (8,), (4,))),
}


def _moduli_op(name: str, fn: Callable[..., Any], args: list[torch.Tensor]) -> torch.Tensor:
    """The op on |args| with |alpha|, |beta|: the scale of the rounding error bound."""
    mods = [a.abs().double() for a in args]
    # (|beta|, |alpha|, the plain product) of the ops with an epilogue
    epilogues = {
        "addmm": (math.sqrt(5), math.sqrt(13), torch.mm),
        "baddbmm": (0.5, 1.0, torch.bmm),
        "addbmm": (1.0, math.sqrt(2), lambda a, b: torch.bmm(a, b).sum(0)),
        "addmv": (2.0, 1.0, torch.mv),
        "addr": (1.0, math.sqrt(2), torch.outer),
    }
    if name in epilogues:
        beta, alpha, product = epilogues[name]
        return beta * mods[0] + alpha * product(mods[1], mods[2])
    return fn(*mods)


@pytest.mark.parametrize("part", list(LOW), ids=str)
@pytest.mark.parametrize("name", list(LOW_PRECISION_OPS))
def test_low_precision_parts(name: str, part: torch.dtype) -> None:
    fn, shapes = LOW_PRECISION_OPS[name]
    inputs = [cx(rand(*s, seed=i)).with_component_dtype(part) for i, s in enumerate(shapes)]
    out = fn(*inputs)
    assert isinstance(out, ComplexTensor) and out.component_dtype == part
    args64 = [x.to_interleaved(torch.complex64) for x in inputs]
    reference = fn(*args64)
    scale = _moduli_op(name, fn, args64)
    bound = 3 * LOW[part] * scale + 1e-30
    result = out.to_interleaved(torch.complex64)
    assert ((result.real - reference.real).abs().double() <= bound).all()
    assert ((result.imag - reference.imag).abs().double() <= bound).all()


# -- complex alpha and beta ----------------------------------------------------------------

SCALARS = [(1, 1), (2 + 3j, 1 - 2j), (1j, 0), (0.5, -2), (-1 + 0.5j, 1j)]

ADD_OPS: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "addmm": (torch.addmm, ((3, 4), (3, 5), (5, 4))),
    "addmm_broadcast": (torch.addmm, ((4,), (3, 5), (5, 4))),
    "baddbmm": (torch.baddbmm, ((2, 3, 4), (2, 3, 5), (2, 5, 4))),
    "addbmm": (torch.addbmm, ((3, 4), (2, 3, 5), (2, 5, 4))),
    "addmv": (torch.addmv, ((3,), (3, 5), (5,))),
    "addr": (torch.addr, ((3, 4), (3,), (4,))),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("scalars", SCALARS, ids=str)
@pytest.mark.parametrize("name", list(ADD_OPS))
def test_complex_alpha_beta(name: str, scalars: tuple[complex, complex], dtype: torch.dtype) -> None:
    fn, shapes = ADD_OPS[name]
    alpha, beta = scalars
    args = [rand(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]
    check(fn, *args, alpha=alpha, beta=beta)


@pytest.mark.parametrize("name", list(ADD_OPS))
def test_beta_zero_ignores_nan_in_self(name: str) -> None:
    fn, shapes = ADD_OPS[name]
    args = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    args[0] = torch.full_like(args[0], complex(math.nan, math.inf))
    out = check(fn, *args, beta=0, alpha=1 - 1j)
    assert not native(out).isnan().any()


def test_in_place_and_out_variants() -> None:
    s, a, b = rand(3, 4), rand(3, 5, seed=1), rand(5, 4, seed=2)
    cs = cx(s)
    result = cs.addmm_(cx(a), cx(b), alpha=1j)
    assert result is cs
    torch.testing.assert_close(native(cs), s.addmm(a, b, alpha=1j))
    out = cx(torch.empty(3, 4, dtype=torch.complex64))
    torch.mm(cx(a), cx(b), out=out)
    torch.testing.assert_close(native(out), a @ b)


def test_results_do_not_alias_inputs() -> None:
    # addr with real vectors: the imaginary part is beta * self.im alone, still a new tensor.
    s = cx(rand(3, 4))
    out = torch.addr(s, torch.randn(3), torch.randn(4))
    assert out.im.untyped_storage().data_ptr() != s.im.untyped_storage().data_ptr()
    torch.testing.assert_close(native(out.im), native(s.im))
    a = cx(rand(2, 2))
    for result in (torch.mm(a, a), torch.trace(a), torch.linalg.vector_norm(a)):
        parts = (result.re, result.im) if isinstance(result, ComplexTensor) else (result,)
        for p in parts:
            assert p.untyped_storage().data_ptr() not in (a.re.untyped_storage().data_ptr(),)


def test_complex_scalar_with_real_tensors_is_an_error() -> None:
    # Under ComplexMode a complex alpha routes real tensors to torchcx: same error as eager.
    s, u, v = torch.randn(2, 2), torch.randn(2), torch.randn(2)
    with pytest.raises(RuntimeError):
        torch.addr(s, u, v, alpha=1j)
    with torchcx.ops.ComplexMode(), pytest.raises(RuntimeError):
        torch.addr(s, u, v, alpha=1j)


# -- convolutions --------------------------------------------------------------------------
#
# F.conv1d/2d/3d and F.conv_transpose* split complex operands themselves
# (ATen's complex_convolution: view_as_real, three real convolutions, a
# product with 1j) before dispatch reaches torchcx. On ComplexTensors that
# runs under ComplexMode (as the OpInfo tests do): the product with 1j is then
# torchcx's and the result a ComplexTensor. aten.convolution itself is torchcx's.

CONVS = [
    # (dims, input shape, weight shape, kwargs)
    (1, (2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    (1, (1, 3, 7), (2, 3, 4), {"padding": "same"}),
    (2, (2, 4, 7, 6), (4, 1, 3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 4}),
    (3, (1, 2, 5, 4, 4), (3, 2, 2, 3, 2), {"stride": (1, 2, 1), "padding": 1}),
]


def _conv(dims: int) -> Callable[..., torch.Tensor]:
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}d-{c[1]}")
def test_conv(case: tuple[Any, ...], bias: bool, dtype: torch.dtype) -> None:
    dims, in_shape, w_shape, kwargs = case
    x, w = rand(*in_shape, dtype=dtype), rand(*w_shape, dtype=dtype, seed=1)
    b = rand(w_shape[0], dtype=dtype, seed=2) if bias else None
    check(_conv(dims), x, w, b, mode=True, **kwargs)


@pytest.mark.xfail(
    strict=True,
    reason="outside ComplexMode ATen's complex_convolution multiplies plain real tensors by 1j: "
    "the result is a native complex64 tensor (also for bfloat16 parts), not a ComplexTensor",
)
def test_conv_outside_complex_mode_returns_complex_tensor() -> None:
    x, w = (
        cx(rand(1, 2, 5)).with_component_dtype(torch.bfloat16),
        cx(rand(3, 2, 2)).with_component_dtype(torch.bfloat16),
    )
    out = F.conv1d(x, w)
    assert isinstance(out, ComplexTensor) and out.component_dtype == torch.bfloat16


TRANSPOSED = [
    (1, (2, 4, 5), (4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    (2, (1, 2, 4, 3), (2, 3, 2, 3), {"stride": (2, 3), "dilation": (2, 1), "output_padding": (1, 2)}),
    (3, (1, 2, 3, 3, 2), (2, 1, 2, 2, 2), {"stride": 2, "padding": (0, 1, 0)}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("case", TRANSPOSED, ids=lambda c: f"{c[0]}d-{c[1]}")
def test_conv_transpose(case: tuple[Any, ...], dtype: torch.dtype) -> None:
    dims, in_shape, w_shape, kwargs = case
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]
    groups = kwargs.get("groups", 1)
    x, w = rand(*in_shape, dtype=dtype), rand(*w_shape, dtype=dtype, seed=1)
    b = rand(w_shape[1] * groups, dtype=dtype, seed=2)
    check(fn, x, w, b, mode=True, **kwargs)


def _aten_conv_args(transposed: bool) -> tuple[Any, ...]:
    # (stride, padding, dilation, transposed, output_padding, groups) of a grouped, strided 2-d case
    return ([2, 1], [1, 0], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("real", [None, "input", "weight", "bias"])
def test_aten_convolution(real: str | None, transposed: bool) -> None:
    # aten.convolution itself (native kernels take no complex tensors; F.conv* split them
    # first): complex with complex, and a real operand with a complex one (two real convs).
    x = rand(2, 4, 6, 5, dtype=torch.complex128)
    w = rand(4, 3, 3, 2, dtype=torch.complex128, seed=1) if transposed else rand(6, 2, 3, 2, dtype=torch.complex128)
    b = rand(6, dtype=torch.complex128, seed=2)
    tensors = {"input": x, "weight": w, "bias": b}
    if real is not None:
        tensors[real] = tensors[real].real.clone()
    args = _aten_conv_args(transposed)
    out = torch.convolution(*(cx(t) for t in tensors.values()), *args)

    # reference: the definition, convolution of the parts in float64
    def conv(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.convolution(u, v, None, *args)

    def split(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (t.real, t.imag) if t.is_complex() else (t, torch.zeros_like(t))

    (xr, xi), (wr, wi), (br, bi) = (split(t) for t in tensors.values())
    shape = (1, -1, 1, 1)
    ref = torch.complex(
        conv(xr, wr) - conv(xi, wi) + br.reshape(shape), conv(xr, wi) + conv(xi, wr) + bi.reshape(shape)
    )
    torch.testing.assert_close(native(out), ref)


# -- trace, block_diag, norms, pinv ----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
def test_trace_and_block_diag(dtype: torch.dtype) -> None:
    check(torch.trace, rand(4, 3, dtype=dtype))
    check(torch.block_diag, rand(2, 3, dtype=dtype), rand(1, 2, dtype=dtype, seed=1))
    # block_diag promotes a real block, as eager
    check(torch.block_diag, rand(2, 2, dtype=dtype), torch.randn(1, 3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, math.inf, -math.inf])
def test_vector_norm(ord: float, dtype: torch.dtype) -> None:
    x = rand(3, 4, dtype=dtype)
    check(torch.linalg.vector_norm, x, ord)
    check(torch.linalg.vector_norm, x, ord, dim=-1, keepdim=True)
    check(torch.linalg.vector_norm, x, ord, dim=(0, 1), dtype=torch.complex128)


def test_vector_norm_no_overflow_and_dtype_rules() -> None:
    x = torch.tensor([3e30 + 4e30j, 1e30j], dtype=torch.complex64)
    check(torch.linalg.vector_norm, x, math.inf)
    with pytest.raises(RuntimeError, match="complex"):
        torch.linalg.vector_norm(cx(x), dtype=torch.float64)
    low = cx(x / 1e30).with_component_dtype(torch.bfloat16)
    assert torch.linalg.vector_norm(low).dtype == torch.bfloat16


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv(hermitian: bool) -> None:
    a = rand(2, 4, 4, dtype=torch.complex128)
    if hermitian:
        a = a + a.mH
    check(torch.linalg.pinv, a, hermitian=hermitian)
    check(torch.linalg.pinv, a, atol=0.5, hermitian=hermitian)
    check(torch.linalg.pinv, a, rtol=0.3, hermitian=hermitian)
    check(torch.linalg.pinv, rand(5, 3, dtype=torch.complex128))
    check(torch.linalg.pinv, rand(3, 0, dtype=torch.complex128))


# -- extern kernels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        torch.linalg.inv,
        torch.linalg.det,
        lambda a: torch.linalg.slogdet(a),
        lambda a: torch.linalg.solve(a, a[..., :2]),
        lambda a: torch.linalg.qr(a),
        lambda a: torch.linalg.svdvals(a),
        lambda a: torch.linalg.eigvalsh(a + a.mH),
        lambda a: torch.linalg.cholesky(a @ a.mH + torch.eye(4)),
        lambda a: torch.linalg.lu_factor(a),
        lambda a: torch.linalg.matrix_exp(a),
        lambda a: torch.linalg.matrix_power(a, -2),
        lambda a: torch.linalg.matrix_norm(a, "nuc"),
    ],
    ids=[
        "inv",
        "det",
        "slogdet",
        "solve",
        "qr",
        "svdvals",
        "eigvalsh",
        "cholesky",
        "lu_factor",
        "expm",
        "power",
        "nuc",
    ],
)
def test_extern_kernels(fn: Callable[..., Any]) -> None:
    a = rand(2, 4, 4, dtype=torch.complex128)
    expected = fn(a)
    actual = fn(cx(a))
    for e, x in zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(actual)):
        torch.testing.assert_close(native(x), e)


def test_extern_low_precision_and_out() -> None:
    a = rand(3, 3)
    low = cx(a).with_component_dtype(torch.bfloat16)
    inv = torch.linalg.inv(low)
    assert inv.component_dtype == torch.bfloat16
    reference = torch.linalg.inv(low.to_interleaved(torch.complex64))
    torch.testing.assert_close(native(inv), reference, rtol=2e-2, atol=2e-2)
    out = cx(torch.empty(3, 3, dtype=torch.complex64))
    torch.linalg.inv(cx(a), out=out)
    torch.testing.assert_close(native(out), torch.linalg.inv(a))


def test_eig_of_real_matrix_under_complex_mode() -> None:
    a = torch.randn(4, 4, dtype=torch.float64)
    with torchcx.ops.ComplexMode():
        values, vectors = torch.linalg.eig(a)
    assert isinstance(values, ComplexTensor) and isinstance(vectors, ComplexTensor)
    expected = torch.linalg.eig(a)
    torch.testing.assert_close(native(values), expected[0])
    torch.testing.assert_close(native(vectors), expected[1])
