"""The user-facing ComplexTensor API: construction, conversion, printing,
serialization, Python operators and errors.
"""

from __future__ import annotations

import copy
import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchcx
from torchcx import ComplexTensor

PART_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
REPORTED = {
    torch.float64: torch.complex128,
    torch.float32: torch.complex64,
    torch.float16: torch.complex32,
    torch.bfloat16: torch.complex32,
}


def _native(shape: tuple[int, ...] = (3, 4), dtype: torch.dtype = torch.complex64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g)).to(dtype)


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# -- construction and dtypes -------------------------------------------------------------------


@pytest.mark.parametrize("part", PART_DTYPES, ids=str)
def test_complex_construction_and_dtypes(part: torch.dtype) -> None:
    re, im = torch.tensor([1.0, -2.0], dtype=part), torch.tensor([0.5, 3.0], dtype=part)
    z = torchcx.complex(re, im)
    assert isinstance(z, ComplexTensor)
    assert z.dtype == REPORTED[part]
    assert z.component_dtype == part
    assert z.shape == (2,) and z.device == re.device
    assert z.re is re and z.im is im  # kept as they are, no copy
    assert z.tolist() == [complex(1, 0.5), complex(-2, 3)]
    assert z.element_size() == 2 * re.element_size()


def test_complex_broadcasts() -> None:
    z = torchcx.complex(torch.arange(3.0).reshape(3, 1), torch.tensor([10.0, 20.0]))
    assert z.shape == (3, 2)
    assert z[2, 1].item() == 2 + 20j


@pytest.mark.parametrize(
    ("re", "im"),
    [
        (torch.ones(2), torch.ones(2, dtype=torch.float64)),  # parts differ in dtype
        (torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64)),  # not floating
        (torch.ones(2), torch.ones(3)),  # not broadcastable
        (1.0, torch.ones(2)),  # not a tensor
    ],
)
def test_complex_rejects_bad_parts(re: Any, im: Any) -> None:
    with pytest.raises((TypeError, RuntimeError, ValueError)):
        torchcx.complex(re, im)


def test_dtype_helpers() -> None:
    assert torchcx.complex_dtype_of(torch.bfloat16) == torch.complex32
    assert torchcx.component_dtype_of(torch.complex128) == torch.float64
    with pytest.raises(TypeError):
        torchcx.component_dtype_of(torch.float32)


# -- interleaved memory --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.complex32], ids=str)
def test_from_interleaved_is_zero_copy(dtype: torch.dtype) -> None:
    t = _native(dtype=dtype)
    z = ComplexTensor.from_interleaved(t)
    assert z.dtype == dtype and z.shape == t.shape
    assert z.stride() == t.stride() and z.storage_offset() == t.storage_offset()
    assert _same_memory(z.re, t) and _same_memory(z.im, t)
    z[0, 0] = 1 + 2j  # writes through in both directions
    assert t[0, 0].item() == 1 + 2j
    t[1, 2] = -4j
    assert z[1, 2].item() == -4j


def test_from_interleaved_of_a_view_and_of_conj() -> None:
    t = _native((4, 6))
    view = t[1:, ::2].t()
    z = ComplexTensor.from_interleaved(view)
    assert (z.stride(), z.storage_offset()) == (view.stride(), view.storage_offset())
    torch.testing.assert_close(z.to_interleaved(), view)
    zc = ComplexTensor.from_interleaved(t.conj())
    torch.testing.assert_close(zc.to_interleaved(), t.conj().resolve_conj())
    zc[0, 0] = 3 + 1j  # the conjugate view stores the conjugate
    assert t[0, 0].item() == 3 - 1j
    t[0, 1] = 2 + 5j
    assert zc[0, 1].item() == 2 - 5j


def test_to_interleaved_round_trip_is_zero_copy() -> None:
    t = _native((4, 6))
    for native in (t, t[1:3], t.t(), t[:, 1::2]):
        back = ComplexTensor.from_interleaved(native).to_interleaved()
        assert _same_memory(back, native)
        assert (back.shape, back.stride(), back.storage_offset()) == (
            native.shape,
            native.stride(),
            native.storage_offset(),
        )


def test_to_interleaved_of_planar_and_bfloat16() -> None:
    re, im = torch.randn(3), torch.randn(3)
    out = torchcx.complex(re, im).to_interleaved()
    assert out.dtype == torch.complex64 and not _same_memory(out, re)
    torch.testing.assert_close(out, torch.complex(re, im))
    b = torchcx.complex(re.bfloat16(), im.bfloat16())
    with pytest.raises(TypeError, match="bfloat16"):
        b.to_interleaved()
    torch.testing.assert_close(
        b.to_interleaved(torch.complex64), torch.complex(re.bfloat16().float(), im.bfloat16().float())
    )


# -- reading values --------------------------------------------------------------------------


def test_repr_reads_like_a_complex_tensor() -> None:
    t = torch.tensor([1 + 2j, -3.5j, 2.25], dtype=torch.complex64)
    assert repr(ComplexTensor.from_interleaved(t)) == repr(t).replace("tensor(", "ComplexTensor(")
    t2 = _native((3, 4), torch.complex128)
    z2 = ComplexTensor.from_interleaved(t2)

    def words(s: str) -> list[str]:
        return s.replace("ComplexTensor(", "tensor(").split()

    assert words(repr(z2)) == words(repr(t2))  # same values and dtype; only the line wrapping differs
    b = torchcx.complex(torch.ones(2, dtype=torch.bfloat16), torch.zeros(2, dtype=torch.bfloat16))
    assert repr(b) == "ComplexTensor([1.+0.j, 1.+0.j], component_dtype=torch.bfloat16)"
    assert "requires_grad=True" in repr(torchcx.complex(torch.ones(1), torch.ones(1)).requires_grad_())


@pytest.mark.parametrize("layout", ["interleaved", "planar"])
def test_real_and_imag_are_writable_views(layout: str) -> None:
    t = _native()
    z = (
        ComplexTensor.from_interleaved(t)
        if layout == "interleaved"
        else torchcx.complex(t.real.clone(), t.imag.clone())
    )
    torch.testing.assert_close(z.real, t.real)
    torch.testing.assert_close(z.imag, t.imag)
    z.real[0] = 100.0
    z.imag[:, 1] = -5.0
    assert (z.to_interleaved()[0].real == 100).all()
    assert (z.to_interleaved()[:, 1].imag == -5).all()
    if layout == "interleaved":
        assert (t[0].real == 100).all() and (t[:, 1].imag == -5).all()


def test_views_share_the_base_storage_and_replay() -> None:
    # Note [A view shares its base's storage]: AOTAutograd reads aliasing off the wrapper's
    # storage, as it does for native views; autograd's view replay (fake-tensor conversion of a
    # view) asks aten._has_same_storage_numel of the new base, then replays the view ops.
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.multiprocessing.reductions import StorageWeakRef

    z = torchcx.complex(torch.randn(3, 4), torch.randn(3, 4))
    for view in (z.T, z[1:], z.unbind(0)[1]):
        assert StorageWeakRef(view.untyped_storage()) == StorageWeakRef(z.untyped_storage())
        assert view._base is z
        replayed = view._view_func(z)
        assert isinstance(replayed, ComplexTensor) and replayed.re.data_ptr() == view.re.data_ptr()
    assert StorageWeakRef((z * 2).untyped_storage()) != StorageWeakRef(z.untyped_storage())
    # a conj view negates its imaginary part lazily, which no strided view of z reproduces: it
    # keeps a storage of its own (see _registry._LAZY_SIGN_VIEWS)
    assert StorageWeakRef(z.conj().untyped_storage()) != StorageWeakRef(z.untyped_storage())
    view = z[1:].T
    fake = FakeTensorMode().from_tensor(view)
    assert fake.shape == (4, 2) and isinstance(fake._base, ComplexTensor)


def test_item_tolist_numpy() -> None:
    t = _native()
    z = ComplexTensor.from_interleaved(t)
    item = z[1, 2].item()
    assert type(item) is complex and item == t[1, 2].item()
    assert z.tolist() == t.tolist()
    np.testing.assert_array_equal(z.numpy(), t.numpy())
    np.testing.assert_array_equal(np.asarray(z), t.numpy())
    b = z.with_component_dtype(torch.bfloat16)
    assert b.numpy().dtype == np.complex64


# -- conversions and copies --------------------------------------------------------------------


def test_to_dtype_and_device() -> None:
    t = _native()
    z = ComplexTensor.from_interleaved(t)
    assert z.to("cpu") is z and z.to(torch.complex64) is z  # nothing to do: the tensor itself, as torch
    w = z.to(torch.complex128)
    assert isinstance(w, ComplexTensor) and w.component_dtype == torch.float64
    torch.testing.assert_close(w.to_interleaved(), t.to(torch.complex128))
    h = z.to(torch.complex32)
    assert h.component_dtype == torch.float16
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = z.to(torch.float64)
    assert type(r) is torch.Tensor and r.dtype == torch.float64
    torch.testing.assert_close(r, t.real.double())
    m = z.to("meta")
    assert isinstance(m, ComplexTensor) and m.device.type == "meta" and m.shape == z.shape
    b = z.with_component_dtype(torch.bfloat16)
    assert b.component_dtype == torch.bfloat16 and b.dtype == torch.complex32
    torch.testing.assert_close(b.to(torch.complex64).to_interleaved(), t, rtol=1e-2, atol=1e-2)


def test_clone_detach_contiguous() -> None:
    t = _native((3, 4))
    z = ComplexTensor.from_interleaved(t)
    c = z.clone()
    assert not _same_memory(c.re, t) and not _same_memory(c.re, c.im)
    c.mul_(2)
    torch.testing.assert_close(z.to_interleaved(), t)  # the original is untouched
    ct = z.t().clone()
    assert ct.stride() == t.t().clone().stride()  # the native clone's layout
    d = z.detach()
    assert _same_memory(d.re, t)
    assert z.contiguous() is z  # already contiguous: the tensor itself, as torch
    cc = z.t().contiguous()
    assert cc.is_contiguous() and cc.re.is_contiguous() and cc.im.is_contiguous()
    assert not _same_memory(cc.re, t) and not _same_memory(cc.re, cc.im)  # independent planar buffers
    torch.testing.assert_close(cc.to_interleaved(), t.t())


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("part", PART_DTYPES, ids=str)
def test_save_load_round_trip(part: torch.dtype, weights_only: bool) -> None:
    planar = torchcx.complex(torch.randn(2, 3).to(part), torch.randn(2, 3).to(part))
    interleaved = ComplexTensor.from_interleaved(_native((2, 3)))
    buf = io.BytesIO()
    torch.save({"planar": planar, "interleaved": interleaved, "view": interleaved[:, 1:]}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=weights_only)
    for key, original in (("planar", planar), ("interleaved", interleaved), ("view", interleaved[:, 1:])):
        out = loaded[key]
        assert isinstance(out, ComplexTensor) and out.component_dtype == original.component_dtype
        assert torch.equal(out.re, original.re) and torch.equal(out.im, original.im)
    # the interleaved parts still share one buffer, and the view still aliases it
    assert loaded["interleaved"].stride() == interleaved.stride()
    loaded["interleaved"][0, 2] = 7j
    assert loaded["view"][0, 1].item() == 7j


def test_deepcopy() -> None:
    z = ComplexTensor.from_interleaved(_native())
    w = copy.deepcopy(z)
    assert isinstance(w, ComplexTensor) and w.tolist() == z.tolist()
    w.zero_()
    assert z.abs().sum() > 0


# -- operators, functions and methods ----------------------------------------------------------

OPERATORS: dict[str, Callable[[Any], Any]] = {
    "2*z": lambda z: 2 * z,
    "z*2.5": lambda z: z * 2.5,
    "z/1j": lambda z: z / 1j,
    "1j/z": lambda z: 1j / z,
    "1-z": lambda z: 1 - z,
    "z-1": lambda z: z - 1,
    "z+(1+2j)": lambda z: z + (1 + 2j),
    "(1+2j)*z": lambda z: (1 + 2j) * z,
    "z**2": lambda z: z**2,
    "-z": lambda z: -z,
    "z*z": lambda z: z * z,
    "z@z.mT": lambda z: z @ z.mT,
    "z==z": lambda z: z == z,
    "abs(z)": lambda z: abs(z),
}


@pytest.mark.parametrize("expr", list(OPERATORS))
def test_python_operators(expr: str) -> None:
    t = _native()
    expected = OPERATORS[expr](t)
    actual = OPERATORS[expr](ComplexTensor.from_interleaved(t.clone()))
    if isinstance(actual, ComplexTensor):
        actual = actual.to_interleaved()
    torch.testing.assert_close(actual, expected)


FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "torch.exp": torch.exp,
    "Tensor.exp": lambda z: z.exp(),
    "torch.sum(dim)": lambda z: torch.sum(z, 0),
    "Tensor.sum": lambda z: z.sum(),
    "Tensor.mean": lambda z: z.mean(dim=1, keepdim=True),
    "torch.prod": lambda z: torch.prod(z, 1),
    "Tensor.cumsum": lambda z: z.cumsum(1),
    "torch.cumprod": lambda z: torch.cumprod(z, 0),
    "torch.var": lambda z: torch.var(z, 1),
    "torch.std_mean": lambda z: torch.std_mean(z, 0),
    "torch.logsumexp": lambda z: torch.logsumexp(z, 1),
    "torch.linalg.vector_norm": lambda z: torch.linalg.vector_norm(z, dim=1),
    "torch.cat": lambda z: torch.cat([z, z * 2], 1),
    "torch.stack": lambda z: torch.stack([z, z.flip(0)]),
    "torch.where": lambda z: torch.where(z.real > 0, z, 1j),
    "Tensor.masked_fill": lambda z: z.masked_fill(z.imag > 0, 2 - 2j),
    "indexing": lambda z: z[[0, 2], 1:],
    "Tensor.flip": lambda z: z.flip(1),
    "torch.roll": lambda z: torch.roll(z, 1, 0),
    "Tensor.tril": lambda z: z.tril(),
    "torch.nn.functional.pad": lambda z: torch.nn.functional.pad(z, (1, 2), value=2.0),
    "Tensor.reshape": lambda z: z.reshape(2, 6),
    "Tensor.T": lambda z: z.T,
    "Tensor.mH": lambda z: z.mH,
    "torch.conj": torch.conj,
    "torch.angle": torch.angle,
    "torch.zeros_like": torch.zeros_like,
    "Tensor.new_full": lambda z: z.new_full((2,), 1 + 1j),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_torch_functions_and_methods(name: str) -> None:
    t = _native()
    expected = FUNCTIONS[name](t)
    actual = FUNCTIONS[name](ComplexTensor.from_interleaved(t.clone()))

    def native(x: Any) -> Any:
        return x.to_interleaved() if isinstance(x, ComplexTensor) else x

    if isinstance(expected, tuple):
        for a, e in zip(actual, expected):
            torch.testing.assert_close(native(a), e)
    else:
        assert isinstance(actual, ComplexTensor) == expected.is_complex()
        torch.testing.assert_close(native(actual), expected.resolve_conj())


def test_low_precision_reductions_accumulate_in_float32() -> None:
    # 4096 terms of ~1: summed in bfloat16 this would stall at 256 (spacing 2), not reach ~4096
    n = 4096
    z = torchcx.complex(torch.ones(n, dtype=torch.bfloat16), torch.full((n,), 0.5, dtype=torch.bfloat16))
    s = z.sum()
    assert s.component_dtype == torch.bfloat16
    assert s.item() == complex(4096, 2048)
    m = z.mean()
    assert m.item() == complex(1, 0.5)
    base = torch.full((64,), 1.01, dtype=torch.float16)
    p = torchcx.complex(base, torch.zeros_like(base)).prod()
    assert p.component_dtype == torch.float16
    exact = base[0].item() ** 64
    assert abs(p.item().real - exact) <= 1e-3 * exact  # one rounding to float16 (0.5e-3), not 63


# -- errors ------------------------------------------------------------------------------------


@torch.library.custom_op("torchcx_test::opaque", mutates_args=())
def _opaque(x: torch.Tensor) -> torch.Tensor:
    """An op torchcx cannot know: no table entry, no decomposition."""
    return x.clone()


def test_op_without_decomposition_raises_naming_it() -> None:
    z = ComplexTensor.from_interleaved(_native((2, 3)))
    with pytest.raises(NotImplementedError) as info:
        torch.ops.torchcx_test.opaque(z)
    message = str(info.value)
    assert "torchcx_test.opaque.default" in message
    assert "ComplexTensor[torch.float32][2, 3]" in message


def test_interleaved_only_view_raises_clearly_on_planar() -> None:
    z = torchcx.complex(torch.randn(3), torch.randn(3))
    with pytest.raises(NotImplementedError, match="interleaved"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z.view(torch.float32)
