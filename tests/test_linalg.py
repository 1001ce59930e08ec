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
from torch.utils._python_dispatch import TorchDispatchMode

import torchcx
from compile_harness import record_inductor_graphs, record_lowered_graphs
from torchcx import ComplexTensor, _layout, _lowering
from torchcx.explain import _capture
from torchcx.ops import linalg
from torchcx.ops.linalg import complex_bilinear, complex_matmul

aten = torch.ops.aten

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


# -- GEMM strategies ---------------------------------------------------------------------
#
# Note [Complex GEMM strategies]: every strategy against complex128, on every
# broadcasting case of matmul, real and conjugated operands; the rule and the
# config override (Note [GEMM strategy rule]).

STRATEGIES = list(linalg.STRATEGIES)


class RealGemms(TorchDispatchMode):
    """Counts the real GEMMs (and complex ones: "native") that run below torchcx."""

    GEMMS = (aten.mm.default, aten.bmm.default, aten.mv.default, aten.dot.default, aten.addmm.default)

    def __init__(self) -> None:
        super().__init__()
        self.real: list[Any] = []
        self.complex: list[Any] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        if func in self.GEMMS:
            (self.complex if args[0].is_complex() else self.real).append(func)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_strategy_matmul_broadcasting(shapes: tuple[tuple[int, ...], ...], strategy: str) -> None:
    a, b = rand(*shapes[0], dtype=torch.complex128), rand(*shapes[1], dtype=torch.complex128, seed=1)
    with torchcx.config.patch(matmul_strategy=strategy):
        check(torch.matmul, a, b)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", ["mm", "bmm", "mv", "dot", "vdot", "addmm", "baddbmm", "addbmm", "addmv", "linear"])
def test_strategy_matmul_family(name: str, strategy: str) -> None:
    fn = SAME_DTYPE_OPS[name]
    a, b = rand(6, dtype=torch.complex128), rand(6, dtype=torch.complex128, seed=1)
    with torchcx.config.patch(matmul_strategy=strategy):
        check(fn, a, b)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("conj", ["", "a", "ab"])
@pytest.mark.parametrize("real", [None, "a", "b"])
@pytest.mark.parametrize("shapes", [((5, 6), (6, 4)), ((3, 5, 6), (6,)), ((6,), (6,))], ids=str)
def test_strategies_real_and_conjugated_operands(
    shapes: tuple[tuple[int, ...], ...], real: str | None, conj: str, strategy: str
) -> None:
    a, b = rand(*shapes[0], dtype=torch.complex128), rand(*shapes[1], dtype=torch.complex128, seed=1)
    if "b" in conj:
        b = b.conj()  # a lazily negated imaginary part
    if real == "a":
        a = a.real.clone()
    if real == "b":
        b = b.real.clone()
    re, im = complex_matmul(cx(a), cx(b), conj_a="a" in conj, strategy=strategy)  # type: ignore[arg-type]
    ea = a.conj() if "a" in conj else a
    expected = ea.to(torch.complex128) @ b.to(torch.complex128)
    torch.testing.assert_close(torch.complex(re, torch.zeros_like(re) if im is None else im), expected)


@pytest.mark.parametrize(
    "strategy, real, gemms",
    [
        ("4m", None, (4, 0)),
        ("3m", None, (3, 0)),
        ("block", None, (1, 0)),
        ("native", None, (0, 1)),
        ("4m", "a", (2, 0)),
        ("3m", "b", (2, 0)),
        ("block", "a", (1, 0)),
        ("block", "b", (1, 0)),
        ("native", "a", (2, 0)),
    ],
)
def test_strategy_gemm_counts(strategy: str, real: str | None, gemms: tuple[int, int]) -> None:
    # (real GEMMs, complex GEMMs): a real operand has no imaginary part to multiply
    a, b = rand(3, 4), rand(4, 2, seed=1)
    a = a.real.clone() if real == "a" else a
    b = b.real.clone() if real == "b" else b
    with RealGemms() as counter:
        re, im = complex_matmul(cx(a), cx(b), gemm=aten.mm.default, strategy=strategy)  # type: ignore[arg-type]
    assert (len(counter.real), len(counter.complex)) == gemms
    torch.testing.assert_close(torch.complex(re, im), a.to(torch.complex64) @ b.to(torch.complex64))


def test_block_expands_the_smaller_operand() -> None:
    # [[Ar, -Ai], [Ai, Ar]] @ [Br; Bi] when A is smaller, [Ar, Ai] @ [[Br, Bi], [-Bi, Br]] otherwise
    shapes = []

    class Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
            if func is aten.mm.default:
                shapes.append((tuple(args[0].shape), tuple(args[1].shape)))
            return func(*args, **(kwargs or {}))

    with Shapes():
        complex_matmul(cx(rand(2, 3)), cx(rand(3, 50)), gemm=aten.mm.default, strategy="block")
        complex_matmul(cx(rand(50, 3)), cx(rand(3, 2)), gemm=aten.mm.default, strategy="block")
    assert shapes == [((4, 6), (6, 50)), ((50, 6), (6, 4))]


def test_config_override_and_errors() -> None:
    a, b = cx(rand(8, 8)), cx(rand(8, 8, seed=1))
    for strategy, gemms in [("4m", (4, 0)), ("3m", (3, 0)), ("block", (1, 0)), ("native", (0, 1))]:
        with torchcx.config.patch(matmul_strategy=strategy), RealGemms() as counter:
            complex_matmul(a, b, gemm=aten.mm.default)
        assert (len(counter.real), len(counter.complex)) == gemms, strategy
    # An explicit strategy argument wins over the setting.
    with torchcx.config.patch(matmul_strategy="4m"), RealGemms() as counter:
        complex_matmul(a, b, strategy="block")
    assert len(counter.real) == 1
    with torchcx.config.patch(matmul_strategy="5m"), pytest.raises(ValueError, match="5m"):
        torch.mm(a, b)
    with pytest.raises(ValueError, match="strategy"):
        complex_matmul(a, b, strategy="5m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strategy"):
        complex_bilinear(torch.mm, a, b, strategy="block")  # type: ignore[arg-type]


@pytest.mark.parametrize("part", [torch.bfloat16, torch.float16], ids=str)
def test_native_falls_back_for_low_precision_parts(part: torch.dtype) -> None:
    # No vendor complex GEMM has float16/bfloat16 parts: "native" keeps the rule's choice.
    a, b = cx(rand(4, 8)).with_component_dtype(part), cx(rand(8, 3, seed=1)).with_component_dtype(part)
    with torchcx.config.patch(matmul_strategy="native"), RealGemms() as counter:
        re, im = complex_matmul(a, b, gemm=aten.mm.default)
    assert not counter.complex and counter.real
    expected = torch.mm(a.to_interleaved(torch.complex64), b.to_interleaved(torch.complex64))
    torch.testing.assert_close(torch.complex(re, im), expected, rtol=2e-2, atol=2e-2)
    with torchcx.config.patch(matmul_strategy="native"):
        out = torch.mm(a, b)
    assert isinstance(out, ComplexTensor) and out.component_dtype == part


def _probe(shape: tuple[int, ...], part: torch.dtype) -> ComplexTensor:
    x = torch.empty(shape, dtype=part)
    return ComplexTensor(x, x)


F32, F64, BF16, F16 = torch.float32, torch.float64, torch.bfloat16, torch.float16
#: (part, a shape, b shape, compiled, the rule's choice): Note [GEMM strategy rule] on CPU
RULE_CASES = [
    (F32, (256, 256), (256, 256), False, "4m"),
    (F64, (16, 256, 256), (16, 256, 256), False, "4m"),
    (F32, (32, 32), (32, 32), False, "block"),  # small: one call instead of four
    (F32, (2, 2), (2, 1 << 17), False, "block"),  # skinny: a gate on a state vector
    (F32, (4096, 64), (64, 64), False, "block"),
    (F32, (1024, 1024), (1024, 1), False, "4m"),  # a matrix-vector product
    (BF16, (256, 256), (256, 256), False, "block"),  # no vendor kernel, one rounding
    (F16, (1024, 1024), (1024,), False, "4m"),
    (F32, (16, 256, 256), (16, 256, 256), True, "native"),
    (F64, (1024, 1024), (1024, 1), True, "native"),
    (F32, (32, 32), (32, 32), True, "block"),  # the extern call costs more than the product
    (F32, (2, 2), (2, 1 << 17), True, "native"),  # skinny: cgemm also beats the block here
    (BF16, (1024, 1024), (1024, 1024), True, "4m"),
    (BF16, (4096, 64), (64, 64), True, "block"),
    (F16, (64, 16, 16), (64, 16, 16), True, "block"),
    (F16, (1024, 1024), (1024, 1), True, "4m"),
]


@pytest.mark.parametrize("case", RULE_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-{'compiled' if c[3] else 'eager'}")
def test_rule(case: tuple[Any, ...]) -> None:
    part, a_shape, b_shape, compiled, expected = case
    assert linalg.gemm_strategy(_probe(a_shape, part), _probe(b_shape, part), part, compiled=compiled) == expected


def test_rule_operand_layouts() -> None:
    # Eager: interleaved float32/float64 operands (native complex tensors) go to the vendor kernel as
    # they are. Compiled: a skinny product reads its operands without a copy when both are graph
    # inputs (or extern results), and then the vendor kernel is the fastest.
    a, b = rand(2, 2), rand(2, 1 << 16, seed=1)
    assert linalg.gemm_strategy(cx(a), cx(b), F32, compiled=False) == "native"
    planar = [ComplexTensor(x.real.contiguous(), x.imag.contiguous()) for x in (a, b)]
    assert linalg.gemm_strategy(*planar, F32, compiled=False) == "block"
    with _lowering.lowering():  # the packed-form memo belongs to a lowering (Note [Traced or computed])
        remembered = [_layout.unpack_remembering(x.view(torch.int64), torch.complex64) for x in (a, b)]
        assert linalg.gemm_strategy(*remembered, F32, compiled=True) == "native"
    # Other devices are not measured yet: the vendor kernel where there is one.
    meta = [ComplexTensor(x.re.to("meta"), x.im.to("meta")) for x in planar]
    assert linalg.gemm_strategy(*meta, F32, compiled=True) == "native"


def test_rule_reads_symbolic_sizes_without_guards() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    with FakeTensorMode(shape_env=env) as mode:
        a = mode.from_tensor(torch.empty(16, 256, 256), symbolic_context=None)
    expected = linalg.gemm_strategy(
        _probe((16, 256, 256), torch.float32), _probe((16, 256, 256), torch.float32), torch.float32, compiled=True
    )
    # Under a fake-tensor tracer the product counts as compiled; the rule only reads size hints.
    fake = ComplexTensor(a, a)
    with mode:
        assert linalg.gemm_strategy(fake, fake, torch.float32) == expected
    assert not env.guards


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4), (2, 4, 50)), ((2, 50, 4), (2, 4, 3))])
def test_block_product_parts_take_eagers_views(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    # The block GEMM's result is split into halves; each part is laid out as eager's product
    # (contiguous), so a view eager allows on the product is valid on the parts. As slices of the
    # block result they were not, and the lowering of a compiled TFNO failed (issue 15).
    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.bmm(a, b)
        return out.view(-1, out.shape[-1]).sum(0) + out.view(out.shape[0], -1).sum()

    a, b = rand(*a_shape), rand(*b_shape, seed=1)
    torch._dynamo.reset()
    with torchcx.config.patch(matmul_strategy="block"):
        torch.testing.assert_close(torchcx.compile(fn)(a, b), fn(a, b))
        product = torch.bmm(cx(a), cx(b))
    assert product.re.is_contiguous() and product.im.is_contiguous()


@pytest.mark.parametrize("strategy", ["auto", *STRATEGIES])
def test_compiled_strategies(strategy: str) -> None:
    # Values, real-only graphs, and "native" listed by explain as an extern kernel.
    def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return (torch.bmm(a, b) * c).abs() + torch.mm(a[0], b[1]).real

    a, b, c = rand(2, 5, 3), rand(2, 3, 4, seed=1), rand(4, seed=2)
    torch._dynamo.reset()
    with torchcx.config.patch(matmul_strategy=strategy), record_inductor_graphs() as recorder:
        report = torchcx.explain(fn, a, b, c)
        out = torchcx.compile(fn)(a, b, c)
    torch.testing.assert_close(out, fn(a, b, c))
    assert report.real_only and not recorder.complex_nodes
    assert ("aten.bmm.default" in report.externs) == (strategy == "native")


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


# -- LAPACK ops compiled: values, gradients, explain ---------------------------------------------


def _eye_plus(a: torch.Tensor) -> torch.Tensor:
    return a @ a.mH + 4 * torch.eye(a.shape[-1], dtype=a.dtype)


COMPILED_LINALG: dict[str, Callable[[torch.Tensor], Any]] = {
    "inv": torch.linalg.inv,
    "det": torch.linalg.det,
    "slogdet": lambda a: torch.linalg.slogdet(a),
    "solve": lambda a: torch.linalg.solve(a, a[..., :2] + 1),
    "cholesky": lambda a: torch.linalg.cholesky(_eye_plus(a)),
    "qr": lambda a: torch.linalg.qr(a),
    "svdvals": torch.linalg.svdvals,
    "eigvalsh": lambda a: torch.linalg.eigvalsh(a + a.mH),
    "eigh_values": lambda a: torch.linalg.eigh(a + a.mH).eigenvalues,
    "lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a.mH),
    "lstsq": lambda a: torch.linalg.lstsq(a, a[..., :1] + 1).solution,
    "pinv": torch.linalg.pinv,
    "matrix_exp": torch.linalg.matrix_exp,
    "matrix_power": lambda a: torch.linalg.matrix_power(a, -2),
    "matrix_norm_nuc": lambda a: torch.linalg.matrix_norm(a, "nuc"),
    "vector_norm": lambda a: torch.linalg.vector_norm(a, 3.0, dim=-1),
    "norm": lambda a: torch.linalg.norm(a),
    "cross": lambda a: torch.linalg.cross(a[..., :3], a[..., 1:]),
    "vecdot": lambda a: torch.linalg.vecdot(a, a.flip(-1)),
}
#: Ops computed by LAPACK (extern kernels), as explain names them.
EXTERNS = {
    "inv": "aten.linalg_inv_ex.default",
    "det": "aten._linalg_det.default",
    "slogdet": "aten._linalg_slogdet.default",
    "solve": "aten._linalg_solve_ex.default",
    "cholesky": "aten.linalg_cholesky_ex.default",
    "qr": "aten.linalg_qr.default",
    "svdvals": "aten._linalg_svd.default",
    "eigvalsh": "aten._linalg_eigh.default",
    "lu_solve": "aten.linalg_lu_solve.default",
    "matrix_exp": "aten.linalg_matrix_exp.default",
}


def _differentiate(fn: Callable[..., Any], a: torch.Tensor, seed: int = 3) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(outputs, gradient of a) for random cotangents (complex for complex outputs)."""
    outs = [o for o in torch.utils._pytree.tree_leaves(fn(a)) if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(seed)
    cotangents = [torch.randn(o.shape, dtype=o.dtype, generator=g) for o in outs]
    (grad,) = torch.autograd.grad(outs, a, cotangents)
    return [o.detach() for o in outs], grad


#: Dynamo breaks the graph at these (an output shape that depends on the data, for real inputs too).
GRAPH_BREAKS = {"lstsq"}


@pytest.mark.parametrize("name", list(COMPILED_LINALG))
def test_compiled_linalg_values_and_gradients(name: str) -> None:
    # Forward and backward graphs real-only, LAPACK calls listed as extern kernels, no fallback.
    fn = COMPILED_LINALG[name]
    a = rand(2, 4, 4, dtype=torch.complex128).requires_grad_()
    expected, expected_grad = _differentiate(fn, a)
    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, _capture() as report:
        actual, grad = _differentiate(torchcx.compile(fn, fullgraph=name not in GRAPH_BREAKS), a)
    for x, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(x, e)
    torch.testing.assert_close(grad, expected_grad)
    assert not recorder.complex_nodes
    externs = {op for graph in report.graphs for op in graph.externs}
    assert not any(graph.fallbacks for graph in report.graphs)
    if name in EXTERNS:
        assert EXTERNS[name] in externs


#: Note [Native gradients]: Dynamo's spellings of the Householder products, and the extern
#: kernel their backward graph is.
HOUSEHOLDER = {
    "linalg.householder_product": (lambda a, t, c: torch.linalg.householder_product(a, t), "householder_product"),
    "orgqr": (lambda a, t, c: a.orgqr(t), "householder_product"),
    "ormqr": (lambda a, t, c: torch.ormqr(a, t, c, transpose=True), "ormqr"),
    "Tensor.ormqr": (lambda a, t, c: a.ormqr(t, c, left=False), "ormqr"),
}


@pytest.mark.parametrize("parts", [None, torch.bfloat16], ids=["native", "bfloat16"])
@pytest.mark.parametrize("name", list(HOUSEHOLDER))
def test_householder_gradients_are_one_extern_kernel(name: str, parts: torch.dtype | None) -> None:
    # The backward graph is one extern call, eager autograd on the native tensors: the
    # same values as eager (bit for bit), none of the formula's 743 real nodes.
    fn, op = HOUSEHOLDER[name]
    g = torch.Generator().manual_seed(5)
    native = [torch.randn(shape, dtype=torch.complex64, generator=g) for shape in ((2, 5, 4), (2, 4), (2, 5, 5))]
    cotangent = torch.randn((2, 5, 4) if op == "householder_product" else (2, 5, 5), dtype=torch.complex64, generator=g)
    if parts is not None:  # values bfloat16 holds: eager computes them in complex64
        *native, cotangent = [
            torch.complex(x.real.to(parts).float(), x.imag.to(parts).float()) for x in (*native, cotangent)
        ]

    def gradients(f: Callable[..., Any], low: torch.dtype | None) -> tuple[Any, ...]:
        def own(x: torch.Tensor) -> Any:
            return x.clone() if low is None else torchcx.complex(x.real.to(low), x.imag.to(low))

        leaves = [own(x).requires_grad_() for x in native]
        out = f(*leaves)
        grads = torch.autograd.grad(out, leaves[:3] if op == "ormqr" else leaves[:2], own(cotangent))
        return tuple(x.to_interleaved(torch.complex64) if isinstance(x, ComplexTensor) else x for x in (out, *grads))

    expected = gradients(fn, None)
    torch._dynamo.reset()
    with (
        torch._inductor.config.patch(force_disable_caches=True),
        record_lowered_graphs() as lowered,
        _capture() as report,
    ):
        actual = gradients(torchcx.compile(fn, fullgraph=True), parts)
    assert any("Note [Native gradients]" in line for line in report.rewrites)
    externs = [[n.args[0] for n in gm.graph.nodes if n.target is torch.ops.torchcx.extern.default] for gm in lowered]
    assert externs == [[f"torchcx::{op}.default"], [f"torchcx::{op}_backward.default"]], [
        str(gm.graph) for gm in lowered
    ]
    if parts is None:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    else:  # each result rounded once to bfloat16 parts
        torch.testing.assert_close(actual, expected, rtol=2**-8, atol=0)


@pytest.mark.parametrize("name", ["inv", "det", "solve", "eigvalsh", "matrix_exp"])
def test_compiled_linalg_gradcheck(name: str) -> None:
    a = rand(3, 3, dtype=torch.complex128).requires_grad_()
    torch._dynamo.reset()
    assert torch.autograd.gradcheck(torchcx.compile(COMPILED_LINALG[name]), (a,))


def test_explain_lists_lapack_externs() -> None:
    torch._dynamo.reset()
    report = torchcx.explain(COMPILED_LINALG["solve"], rand(2, 4, 4).requires_grad_(), backward=True)
    assert "aten._linalg_solve_ex.default" in report.externs
    assert "aten._linalg_solve_ex.default" in str(report)
    assert report.real_only and not report.fallbacks


def test_native_gemm_operands_have_unit_stride() -> None:
    """ATen's CPU bmm copies, matrix by matrix, an operand none of whose matrices has a unit
    stride (an einsum's permuted weights): the native strategy copies it once, whole."""
    from torchcx.ops.linalg import _gemm_ready

    w = torch.randn(32, 32, 16, 16, dtype=torch.complex64).permute(2, 3, 0, 1).reshape(256, 32, 32)
    permuted = ComplexTensor.from_interleaved(w)
    ready = _gemm_ready(permuted)
    assert ready is not permuted and ready.is_contiguous()
    assert torch.equal(ready.to_interleaved(), w)
    for fine in (torch.randn(4, 8, 8, dtype=torch.complex64), torch.randn(4, 8, 8, dtype=torch.complex64).mT):
        z = ComplexTensor.from_interleaved(fine)
        assert _gemm_ready(z) is z
    x = torch.randn(8, 32, 16, 16, dtype=torch.complex64)
    with torchcx.config.patch(matmul_strategy="native"):
        got = torchcx.compile(lambda x, w: torch.einsum("bixy,ioxy->boxy", x, w))(
            x, w.reshape(16, 16, 32, 32).permute(2, 3, 0, 1)
        )
    torch.testing.assert_close(got, torch.einsum("bixy,ioxy->boxy", x, w.reshape(16, 16, 32, 32).permute(2, 3, 0, 1)))


def test_compiled_extern_with_conj_view_result() -> None:
    # lu_solve(adjoint=True, left=False) returns a conj view; the extern kernel's fake
    # implementation must resolve it as the kernel does (found by the all-samples OpInfo run).
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 3, dtype=torch.complex64, generator=g) + 3 * torch.eye(3)
    b = torch.randn(4, 3, dtype=torch.complex64, generator=g)
    lu, piv = torch.linalg.lu_factor(a)

    def solve(lu: torch.Tensor, piv: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.linalg.lu_solve(lu, piv, b, adjoint=True, left=False)

    torch._dynamo.reset()
    torch.testing.assert_close(torchcx.compile(solve)(lu, piv, b), solve(lu, piv, b))


# -- small contractions (Note [Small contractions in place]) -------------------------------

# (equation, small operand's shape, large operand's shape, small operand first)
SMALL_CONTRACTIONS = {
    "one_axis": ("gd,abcdef->abcgef", (2, 2), (2,) * 6, True),
    "two_adjacent_axes": ("ghbc,abcdef->aghdef", (2,) * 4, (2,) * 6, True),
    "two_separate_axes": ("ghbe,abcdef->agcdhf", (2,) * 4, (2,) * 6, True),
    "small_second": ("abcd,gb->agcd", (2,) * 2, (3, 2, 4, 5), False),
    "outer_product": ("g,abc->agbc", (3,), (2, 4, 5), True),
    "no_free_small_axis": ("b,abc->ac", (4,), (3, 4, 5), True),
    "three_by_three": ("ij,ajb->aib", (3, 3), (4, 3, 6), True),
    # free axes of the large operand kept together (d, e) or not (a, b) by the output
    "free_axes_reordered": ("gc,abcde->deagb", (2, 2), (2, 3, 2, 4, 5), True),
}


@pytest.mark.parametrize("name", list(SMALL_CONTRACTIONS))
def test_small_contraction_values_and_gradients(name: str) -> None:
    from torchcx._graph_passes import _small_contraction

    equation, small_shape, big_shape, small_first = SMALL_CONTRACTIONS[name]
    small, big = rand(*small_shape), rand(*big_shape, seed=1)
    operands = (small, big) if small_first else (big, small)
    assert _small_contraction(equation, operands) is not None  # the rewrite applies

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # the large operand computed in the graph: the rewrite applies at any stride (a graph
        # input read in short blocks keeps eager's decomposition: the test below)
        a, b = (a, b * 2) if small_first else (a * 2, b)
        return torch.einsum(equation, a, b) * (1 + 2j)

    torch._dynamo.reset()
    with _capture() as report:
        got = torchcx.compile(fn)(*operands)
    torch.testing.assert_close(got, fn(*operands))
    lowered = {op for g in report.graphs for op in g.lowered}
    assert not lowered & {"aten.bmm.default", "aten.mm.default"}, lowered  # no GEMM left

    eager_inputs = [t.clone().requires_grad_() for t in operands]
    compiled_inputs = [t.clone().requires_grad_() for t in operands]
    weight = rand(*got.shape, seed=2)
    (fn(*eager_inputs) * weight).real.sum().backward()
    with _capture() as report:
        (torchcx.compile(fn)(*compiled_inputs) * weight).real.sum().backward()
    for e, c in zip(eager_inputs, compiled_inputs):
        torch.testing.assert_close(c.grad, e.grad)
    # the gradients are contractions (_SmallContraction), not slices scattered into zeros
    lowered = {op for g in report.graphs for op in g.lowered}
    assert any("backward" in g.kind for g in report.graphs)
    assert not {op for op in lowered if "scatter" in op}, lowered


def test_small_contraction_sums_products_in_few_dims() -> None:
    # Note [Small contractions in place]: the state's free axes that the output keeps
    # together, in order, are one axis of the products: a two-qubit gate on a 12-qubit state
    # sums its products over 4 dims (two merged runs and the gate's two output axes; 12
    # before: Inductor's loop analysis costs about the square of a loop's dims per node, a
    # third of the quantum circuit's compile time). One complex product per summed index
    # (4), each computing the 4 output slices: 16 real products.
    from torchcx.bench.workloads.quantum import gate_subscripts

    equation = gate_subscripts(12, (5, 6))
    gate, state = rand(2, 2, 2, 2), rand(*(2,) * 12, seed=1)

    def fn(g: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.einsum(equation, g, s * 2)

    torch._dynamo.reset()
    with _capture() as report:
        got = torchcx.compile(fn)(gate, state)
    torch.testing.assert_close(got, fn(gate, state))
    # the products of the gate's broadcast columns and slices of the state
    products = [
        n
        for g in report.graphs
        for n in g.real_graph.graph.nodes
        if n.target is torch.ops.aten.mul.Tensor and len(n.all_input_nodes) == 2
    ]
    assert len(products) == 4 * 4 and {n.meta["val"].dim() for n in products} == {4}


@pytest.mark.parametrize("qubit", range(6))
def test_small_contraction_of_an_input_read_in_short_blocks(qubit: int) -> None:
    # Note [Small contractions in place]: a gate on a graph input whose summed axis has a
    # stride of 2 to 15 elements keeps eager's decomposition (a bmm); a stride of 1 or of 16
    # and more, or a state the graph computed, is rewritten.
    letters = "abcdef"
    out = letters.replace(letters[qubit], "g")
    equation = f"g{letters[qubit]},{letters}->{out}"
    gate, state = rand(2, 2), rand(*(2,) * 6, seed=1)  # strides 32, 16, 8, 4, 2, 1
    for computed in (False, True):

        def fn(g: torch.Tensor, s: torch.Tensor, computed: bool = computed) -> torch.Tensor:
            return torch.einsum(equation, g, s * 2 if computed else s)

        torch._dynamo.reset()
        with _capture() as report:
            got = torchcx.compile(fn)(gate, state)
        torch.testing.assert_close(got, fn(gate, state))
        lowered = {op for g in report.graphs for op in g.lowered}
        rewritten = computed or state.stride(qubit) == 1 or state.stride(qubit) >= 16
        assert ("aten.bmm.default" not in lowered) == rewritten, (qubit, computed, lowered)


NOT_SMALL_CONTRACTIONS = {
    "batch_letter": ("abc,acd->abd", (2, 2, 2), (2, 2, 8)),
    "diagonal": ("aa,ab->b", (2, 2), (2, 8)),
    "summed_out_of_one_operand": ("ab,cd->ac", (2, 2), (4, 8)),
    "ellipsis": ("ab,...b->...a", (2, 2), (3, 4, 2)),
    "size_one_broadcast": ("ab,cb->ca", (2, 1), (8, 2)),
    "both_small": ("ab,bc->ac", (2, 2), (2, 2)),
    "none_small": ("ab,bc->ac", (8, 8), (8, 8)),
}


@pytest.mark.parametrize("name", list(NOT_SMALL_CONTRACTIONS))
def test_other_einsums_keep_eager_decomposition(name: str) -> None:
    from torchcx._graph_passes import _small_contraction

    equation, shape_a, shape_b = NOT_SMALL_CONTRACTIONS[name]
    a, b = rand(*shape_a), rand(*shape_b, seed=1)
    assert _small_contraction(equation, (a, b)) is None
    got = torchcx.compile(lambda x, y: torch.einsum(equation, x, y))(a, b)
    torch.testing.assert_close(got, torch.einsum(equation, a, b))


def test_small_contraction_keeps_eager_errors() -> None:
    # einsum of a complex and a real operand is an error in eager; the rewrite does not apply
    from torchcx._graph_passes import _small_contraction

    gate, state = rand(2, 2), torch.randn(4, 2)
    assert _small_contraction("ab,cb->ca", (gate, state)) is None
    with pytest.raises(RuntimeError):
        torch.einsum("ab,cb->ca", gate, state)
    with pytest.raises(Exception, match="expected scalar type"):
        torchcx.compile(lambda g, s: torch.einsum("ab,cb->ca", g, s))(gate, state)
