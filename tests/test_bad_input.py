"""Bad input gets a clear error naming the op, the dtypes or devices and what to do instead,
never a wrong value (docs/limitations.md, "Bad input: what you get", lists the same cases).

Each case is data: how to provoke it, the exception type expected, and a regex its message
must match. Eager cases run on ComplexTensor; compiled ones through ``torchcx.compile`` with
complex64 inputs (or ComplexTensors where the case is about their parts).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import Tensor

import torchcx
from torchcx import ComplexTensor


def z(part: torch.dtype = torch.float32, shape: tuple[int, ...] = (3,), device: str = "cpu") -> ComplexTensor:
    n = 1
    for s in shape:
        n *= s
    re = torch.arange(n, dtype=part, device=device).reshape(shape)
    return torchcx.complex(re, torch.ones(shape, dtype=part, device=device))


def c64(*shape: int, device: str = "cpu") -> Tensor:
    shape = shape or (3,)
    return torch.full(shape, 1 + 2j, dtype=torch.complex64, device=device)


def quantized() -> Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's deprecation of quantized tensors)
        return torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8)


def nested(dtype: torch.dtype = torch.complex64) -> Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (nested tensors are a prototype)
        return torch.nested.nested_tensor([torch.ones(2, dtype=dtype), torch.ones(3, dtype=dtype)])


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[], Any]
    error: type[BaseException]
    message: str  # a regex searched in str(error)


NO_ORDER = r"complex numbers have no order"
ONE_DEVICE = r"expected all tensors on one device, got cpu, meta .*move them to one device"

EAGER = [
    # -- constructing a ComplexTensor
    Case(
        "integer parts",
        lambda: torchcx.complex(torch.arange(3), torch.arange(3)),
        TypeError,
        r"complex parts must be one of .*got torch\.int64",
    ),
    Case(
        "integer parts (ComplexTensor)",
        lambda: ComplexTensor(torch.arange(3), torch.arange(3)),
        TypeError,
        r"complex parts must be one of .*got torch\.int64",
    ),
    Case(
        "integer tensor to as_complex_tensor",
        lambda: torchcx.as_complex_tensor(torch.arange(3)),
        TypeError,
        r"complex parts must be one of .*got torch\.int64",
    ),
    Case(
        "float8 parts",
        lambda: torchcx.complex(*[torch.ones(3, dtype=torch.float8_e4m3fn)] * 2),
        TypeError,
        r"complex parts must be one of .*got torch\.float8_e4m3fn",
    ),
    Case(
        "float16 re, bfloat16 im",
        lambda: torchcx.complex(torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.bfloat16)),
        TypeError,
        r"torchcx\.complex: re and im differ in dtype: torch\.float16 and torch\.bfloat16",
    ),
    Case(
        "re on cpu, im on meta",
        lambda: torchcx.complex(torch.ones(3), torch.ones(3, device="meta")),
        ValueError,
        r"torchcx\.complex: re and im are on different devices: cpu and meta",
    ),
    Case(
        "re and im shapes that do not broadcast",
        lambda: torchcx.complex(torch.ones(4), torch.ones(3)),
        RuntimeError,
        r"torchcx\.complex: the shapes of re \[4\] and im \[3\] do not broadcast",
    ),
    Case(
        "quantized tensor to as_complex_tensor",
        lambda: torchcx.as_complex_tensor(quantized()),
        TypeError,
        r"torchcx\.as_complex_tensor: got a quantized tensor of dtype torch\.quint8.*dequantize",
    ),
    Case(
        "sparse complex64 to from_interleaved",
        lambda: ComplexTensor.from_interleaved(c64().to_sparse()),
        TypeError,
        r"torchcx\.from_interleaved: got a sparse \(torch\.sparse_coo\) tensor of dtype torch\.complex64.*to_dense",
    ),
    Case(
        "sparse parts",
        lambda: torchcx.complex(torch.ones(3).to_sparse(), torch.ones(3).to_sparse()),
        TypeError,
        r"torchcx\.complex: got a sparse \(torch\.sparse_coo\) tensor.*to_dense",
    ),
    Case(
        "nested complex64 to as_complex_tensor",
        lambda: torchcx.as_complex_tensor(nested()),
        TypeError,
        r"torchcx\.as_complex_tensor: got a nested tensor of dtype torch\.complex64.*unbind",
    ),
    Case(
        "nested parts",
        lambda: torchcx.complex(nested(torch.float32), nested(torch.float32)),
        TypeError,
        r"torchcx\.complex: got a nested tensor of dtype torch\.float32",
    ),
    Case(
        "to_sparse",
        lambda: z().to_sparse(),
        NotImplementedError,
        r"sparse layouts are not supported for ComplexTensor.*to_interleaved",
    ),
    Case(
        "bfloat16 parts to_interleaved()",
        lambda: z(torch.bfloat16).to_interleaved(),
        TypeError,
        r"no complex dtype with bfloat16 parts; call to_interleaved\(torch\.complex64\)",
    ),
    # -- ops on operands that do not go together
    Case("cpu + meta", lambda: z() + z(device="meta"), RuntimeError, r"aten\.add\.Tensor " + ONE_DEVICE),
    Case(
        "real meta tensor * cpu",
        lambda: z() * torch.ones(3, device="meta"),
        RuntimeError,
        r"aten\.mul\.Tensor " + ONE_DEVICE,
    ),
    # torch's CPU mm reads the meta tensor's missing data: eager gives garbage here
    Case(
        "cpu @ meta",
        lambda: z(shape=(2, 2)) @ z(shape=(2, 2), device="meta"),
        RuntimeError,
        r"aten\.mm\.default " + ONE_DEVICE,
    ),
    Case(
        "cpu indexed by a meta index",
        lambda: z()[torch.tensor([0], device="meta")],
        RuntimeError,
        r"aten\.index\.Tensor " + ONE_DEVICE,
    ),
    Case(
        "quantized * ComplexTensor",
        lambda: quantized() * z(),
        NotImplementedError,
        r"aten\.mul\.Tensor got a quantized tensor \(Tensor\[torch\.quint8\]\[3\] on cpu.*dequantize\(\)",
    ),
    Case(
        "ComplexTensor + sparse complex64",
        lambda: z() + c64().to_sparse(),
        NotImplementedError,
        r"aten\.add\.Tensor got a sparse \(torch\.sparse_coo\) tensor.*to_dense\(\)",
    ),
    Case(
        "ComplexTensor + nested",
        lambda: z() + nested(torch.float32),
        NotImplementedError,
        r"aten\.add\.Tensor got a nested tensor.*unbind\(\)",
    ),
    Case(
        "bfloat16 parts @ float16 parts",
        lambda: z(torch.bfloat16, (1, 3)) @ z(torch.float16, (3, 1)),
        RuntimeError,
        r"mm: expected all tensors to have the same dtype, but got complex with bfloat16 parts, complex32 "
        r"\(torchcx: in aten\.mm\.default",
    ),
    Case(
        "ComplexTensor + float8",
        lambda: z() + torch.ones(3, dtype=torch.float8_e4m3fn),
        RuntimeError,
        r"Promotion for Float8 Types is not supported.*\(torchcx: in aten\.add\.Tensor with arguments "
        r"\(ComplexTensor\[torch\.float32\]\[3\] on cpu, Tensor\[torch\.float8_e4m3fn\]",
    ),
    # -- ops eager refuses for complex dtypes
    Case("<", lambda: z() < z(), NotImplementedError, r"aten\.lt\.Tensor .*" + NO_ORDER),
    Case("> 1 (bfloat16 parts)", lambda: z(torch.bfloat16) > 1, NotImplementedError, r"aten\.gt\.Scalar .*" + NO_ORDER),
    Case("sort", lambda: torch.sort(z(torch.bfloat16)), NotImplementedError, r"aten\.sort\..*bfloat16.*" + NO_ORDER),
    Case("max", lambda: z().max(), NotImplementedError, r"aten\.max\.default.*" + NO_ORDER),
    Case("clamp", lambda: z().clamp(0, 1), NotImplementedError, r"aten\.clamp\.default.*" + NO_ORDER),
    Case(
        "floor",
        lambda: torch.floor(z()),
        NotImplementedError,
        r"no complex decomposition for aten\.floor\.default with arguments \(ComplexTensor\[torch\.float32\]\[3\]\)"
        r".*native tensor",
    ),
    Case(
        "floor_divide",
        lambda: z() // z(),
        RuntimeError,
        r"rounding_mode='floor' is not supported for complex inputs \(torchcx: in aten\.div\.Tensor_mode",
    ),
    Case(
        "xlogy",
        lambda: torch.xlogy(z(), z()),
        NotImplementedError,
        r"\"xlogy_cpu\" not implemented for 'ComplexFloat' \(torchcx: in aten\.xlogy\.Tensor",
    ),
]


@pytest.mark.parametrize("case", EAGER, ids=lambda c: c.name)
def test_eager_bad_input(case: Case) -> None:
    with pytest.raises(case.error, match=case.message):
        case.run()


def test_float16_with_bfloat16_parts_promotes_as_torch_does() -> None:
    # Not an error: torch promotes float16 with bfloat16 to float32, and so do the parts.
    a, b = z(torch.float16), z(torch.bfloat16)
    out = a * b
    assert out.component_dtype == torch.float32
    torch.testing.assert_close(
        out.to_interleaved(), a.to_interleaved(torch.complex64) * b.to_interleaved(torch.complex64)
    )


def test_copy_between_devices_is_allowed() -> None:
    # The one op that takes two devices by design (the device check must not refuse it).
    target = z(device="meta")
    target.copy_(z())
    assert target.device.type == "meta"


# -- compiled -------------------------------------------------------------------------------

# shared compiled functions (each case resets Dynamo, so none hits the recompile limit)
mul_add = torchcx.compile(lambda a, b: a * b + 1)
mm_twice = torchcx.compile(lambda a, b: (a @ b) * 2)
double = torchcx.compile(lambda a: a * 2)
less = torchcx.compile(lambda a, b: a < b)
floored = torchcx.compile(lambda a: torch.floor(a) + 1)
sorted_ = torchcx.compile(lambda a: torch.sort(a * 2).values)
strict_less = torchcx.compile(lambda a, b: (a * 2) < b, strict=True)
take = torchcx.compile(lambda a, i: a[i] * 2)

COMPILED = [
    Case("quantized * complex64", lambda: mul_add(quantized(), c64()), RuntimeError, r"promoteTypes with quantized"),
    Case("complex64 cpu * meta", lambda: mul_add(c64(), c64(device="meta")), RuntimeError, r"cpu and meta"),
    # eager torch returns garbage for this one (its CPU mm reads the meta tensor)
    Case("complex64 cpu @ meta", lambda: mm_twice(c64(2, 2), c64(2, 2, device="meta")), RuntimeError, r"cpu and meta"),
    Case(
        "complex64 cpu indexed by a meta index",
        lambda: take(c64(), torch.tensor([0], device="meta")),
        RuntimeError,
        r"aten\.index\.Tensor " + ONE_DEVICE,
    ),
    Case(
        "ComplexTensor cpu * meta",
        lambda: mul_add(z(), z(device="meta")),
        RuntimeError,
        r"aten\.mul\.Tensor " + ONE_DEVICE,
    ),
    Case(
        "ComplexTensor * quantized",
        lambda: mul_add(z(), quantized()),
        NotImplementedError,
        r"aten\.mul\.Tensor got a quantized tensor",
    ),
    Case(
        "complex64 + float8",
        lambda: mul_add(c64(), torch.ones(3, dtype=torch.float8_e4m3fn)),
        RuntimeError,
        r"float8_e4m3fn",
    ),
    Case(
        "bfloat16 parts @ float16 parts",
        lambda: mm_twice(z(torch.bfloat16, (1, 3)), z(torch.float16, (3, 1))),
        RuntimeError,
        r"mm: expected all tensors to have the same dtype, but got complex with bfloat16 parts",
    ),
    Case("<", lambda: less(c64(), c64()), NotImplementedError, r"\"lt_cpu\" not implemented for 'ComplexFloat'"),
    Case(
        "< (strict)", lambda: strict_less(c64(), c64()), RuntimeError, r"torchcx \(strict\): cannot decompose aten\.lt"
    ),
    Case("< (float16 parts)", lambda: less(z(torch.float16), z(torch.float16)), NotImplementedError, NO_ORDER),
    Case("floor", lambda: floored(c64()), NotImplementedError, r"floor is not supported for complex inputs"),
    Case("sort (bfloat16 parts)", lambda: sorted_(z(torch.bfloat16)), NotImplementedError, r"aten\.sort.*" + NO_ORDER),
]


@pytest.fixture
def fresh_dynamo() -> Any:
    torch._dynamo.reset()
    with warnings.catch_warnings():
        # (the one warning per op that a fallback to the native kernel gives, and torch's own)
        warnings.simplefilter("ignore")
        yield
    torch._dynamo.reset()


@pytest.mark.parametrize("case", COMPILED, ids=lambda c: c.name)
def test_compiled_bad_input(case: Case, fresh_dynamo: Any) -> None:
    with pytest.raises(case.error, match=case.message):
        case.run()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: c64().to_sparse(), id="sparse coo"),
        pytest.param(lambda: c64(2, 2).to_sparse_csr(), id="sparse csr"),
        pytest.param(nested, id="nested"),
    ],
)
def test_compiled_sparse_and_nested_run_as_eager(make: Callable[[], Tensor], fresh_dynamo: Any) -> None:
    # Dynamo keeps sparse and nested tensors out of the graph: the function runs eagerly.
    x = make()
    expected, got = x * 2, double(x)
    assert got.layout == expected.layout and got.is_nested == expected.is_nested
    if x.is_nested:
        for g, e in zip(got.unbind(), expected.unbind()):
            torch.testing.assert_close(g, e)
    else:
        torch.testing.assert_close(got.to_dense(), expected.to_dense())


@pytest.mark.parametrize(
    "make", [lambda: c64(device="meta"), lambda: z(torch.bfloat16, device="meta")], ids=["complex64", "bfloat16 parts"]
)
def test_compiled_on_meta_gives_meta(make: Callable[[], Tensor], fresh_dynamo: Any) -> None:
    # Inductor replaces a meta output by an empty_strided node without metadata; torchcx
    # used to fail with a bare AssertionError on it.
    a = make()
    got, expected = mul_add(a, a), a * a + 1
    assert type(got) is type(expected)
    assert (got.device, got.shape, got.dtype) == (expected.device, expected.shape, expected.dtype)
    if isinstance(expected, ComplexTensor):
        assert got.component_dtype == expected.component_dtype
