"""Eager semantics of mutation and aliasing: in-place ops through views.

Every case runs the same view and in-place op on a native complex tensor and
on a ComplexTensor over a copy of its memory, then compares the *whole base*:
an in-place op through a view must change exactly the memory it changes
natively. Two layouts: ``interleaved`` (``from_interleaved``, so the native
copy must see every write) and ``planar`` (separate re/im buffers). Where
PyTorch raises, torchcx must raise too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchcx
from torchcx import ComplexTensor

LAYOUTS = ("interleaved", "planar")


def _make(layout: str, base: torch.Tensor) -> tuple[ComplexTensor, torch.Tensor | None]:
    """(ComplexTensor with ``base``'s values, the native memory it writes through to or None)."""
    if layout == "interleaved":
        memory = base.clone()
        return ComplexTensor.from_interleaved(memory), memory
    return torchcx.complex(base.real.clone(), base.imag.clone()), None


def _values(x: Any) -> Any:
    if isinstance(x, ComplexTensor):
        return x.to_interleaved()
    if isinstance(x, torchcx.RealView):
        return x.materialize()
    return x


def _base(seed: int = 0, shape: tuple[int, ...] = (4, 6)) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g))


def _check(
    layout: str, view: Callable[[torch.Tensor], Any], op: Callable[[Any], Any], shape: tuple[int, ...] = (4, 6)
) -> None:
    """Run ``op(view(x))`` natively and through torchcx; compare results, errors and the whole base."""
    native = _base(shape=shape)
    z, memory = _make(layout, native)
    # aliases of the whole bases, unaffected by metadata changes (t_) of the tensors themselves
    native_base, z_base = native[...], z[...]
    native_error = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = op(view(native))
    except Exception as e:  # noqa: BLE001  (any error: torchcx must raise one too)
        native_error = e
    if native_error is not None:
        with pytest.raises(Exception), warnings.catch_warnings():  # noqa: B017, PT011
            warnings.simplefilter("ignore")
            op(view(z))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = view(z)
        actual = op(v)
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(_values(actual), expected)
    torch.testing.assert_close(_values(z_base), native_base, msg=lambda m: f"base differs after the op: {m}")
    if memory is not None:
        torch.testing.assert_close(memory, native_base, msg=lambda m: f"write did not reach the native memory: {m}")


# -- views of a complex tensor, and in-place ops on them -------------------------------------

VIEWS: dict[str, Callable[[torch.Tensor], Any]] = {
    "identity": lambda x: x,
    "slice": lambda x: x[1:3],
    "slice_step": lambda x: x[:, ::2],
    "select": lambda x: x[1],
    "narrow": lambda x: x.narrow(1, 2, 3),
    "transpose": lambda x: x.transpose(0, 1),
    "t": lambda x: x.t(),
    "permute": lambda x: x.view(2, 2, 6).permute(2, 0, 1),
    "view": lambda x: x.view(2, 12),
    "reshape": lambda x: x.reshape(24),
    "flatten": lambda x: x.flatten(),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:1].squeeze(0),
    "expand": lambda x: x[:1].expand(3, 6),
    "diagonal": lambda x: x.diagonal(),
    "diagonal_offset": lambda x: x.diagonal(1),
    "unbind": lambda x: x.unbind(0)[2],
    "split": lambda x: x.split(2, 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[1],
    "as_strided": lambda x: x.as_strided((2, 3), (6, 2), 1),
    "unfold": lambda x: x.unfold(1, 2, 2),
    "movedim": lambda x: x.movedim(0, 1),
    "conj": lambda x: x.conj(),
    "conj_of_slice": lambda x: x[1:].conj()[:, 1:4],
    "chained": lambda x: x[1:].t()[::2],
    "element": lambda x: x[1, 2],
    "split_with_sizes": lambda x: x.split([1, 3], 0)[1],
    "detach": lambda x: x.detach(),
    "alias_of_view": lambda x: x[1:3].view(12)[2:],
}


def _other(v: torch.Tensor) -> torch.Tensor:
    """A complex operand of ``v``'s shape, the same for native and torchcx runs."""
    return _base(1, tuple(v.shape)) if v.dim() else torch.tensor(0.5 - 2j)


COMPLEX_OPS: dict[str, Callable[[Any], Any]] = {
    "add_scalar": lambda v: v.add_(1 + 2j),
    "add_tensor": lambda v: v.add_(_other(v), alpha=2),
    "sub_real": lambda v: v.sub_(0.25),
    "mul_scalar": lambda v: v.mul_(2j),
    "mul_tensor": lambda v: v.mul_(_other(v)),
    "div_scalar": lambda v: v.div_(2 - 1j),
    "neg": lambda v: v.neg_(),
    "exp": lambda v: v.exp_(),
    "zero": lambda v: v.zero_(),
    "fill": lambda v: v.fill_(3 - 1j),
    "copy": lambda v: v.copy_(_other(v)),
    "copy_real": lambda v: v.copy_(_other(v).real),
    "setitem_scalar": lambda v: v.__setitem__(0, 7 + 7j),
    "setitem_slice": lambda v: v.__setitem__(slice(0, 1), -1j),
    "setitem_mask": lambda v: v.__setitem__(v.real > 0, 5j),
    "masked_fill": lambda v: v.masked_fill_(v.imag < 0, 1 - 1j),
    "index_fill": lambda v: v.index_fill_(0, torch.tensor([0]), 2j),
    "index_add": lambda v: v.index_add_(0, torch.tensor([0, 0]), _other(v)[:2] if v.dim() else _other(v)),
    "scatter": lambda v: v.scatter_(0, torch.zeros_like(v, dtype=torch.long), _other(v)),
    "index_put_accumulate": lambda v: v.index_put_((torch.tensor([0, 0]),), torch.tensor(1 + 1j), accumulate=True),
    "index_copy": lambda v: v.index_copy_(0, torch.tensor([0]), _other(v)[:1] if v.dim() else _other(v)),
    "masked_scatter": lambda v: v.masked_scatter_(v.real > 0, _other(v)),
    "put": lambda v: v.put_(torch.tensor([0, 1]), torch.tensor([1j, -1j]), accumulate=True),
    "add_self": lambda v: v.add_(v),
    "mul_conj_self": lambda v: v.mul_(v.conj()),
    "copy_flipped_self": lambda v: v.copy_(v.flip(0)),
    "cumsum": lambda v: v.cumsum_(0),
    "twice": lambda v: v.mul_(1j).add_(1),
    "t_then_mul": lambda v: v.t_().mul_(3j) if v.dim() <= 2 else v.mul_(3j),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", list(COMPLEX_OPS))
@pytest.mark.parametrize("view", list(VIEWS))
def test_inplace_through_view(view: str, op: str, layout: str) -> None:
    _check(layout, VIEWS[view], COMPLEX_OPS[op])


# -- real views of a complex tensor: .real, .imag, view_as_real ------------------------------

REAL_VIEWS: dict[str, Callable[[torch.Tensor], Any]] = {
    "real": lambda x: x.real,
    "imag": lambda x: x.imag,
    "real_of_slice": lambda x: x[1:, ::2].real,
    "imag_of_transpose": lambda x: x.t().imag,
    "view_as_real": lambda x: torch.view_as_real(x),
    "view_as_real_select_re": lambda x: torch.view_as_real(x)[..., 0],
    "view_as_real_select_im": lambda x: torch.view_as_real(x).select(-1, 1),
    "view_as_real_slice": lambda x: torch.view_as_real(x)[1:3],
    "view_as_real_of_select": lambda x: torch.view_as_real(x[2]),
}

REAL_OPS: dict[str, Callable[[Any], Any]] = {
    "add": lambda v: v.add_(1.5),
    "mul": lambda v: v.mul_(-2.0),
    "zero": lambda v: v.zero_(),
    "fill": lambda v: v.fill_(7.0),
    "copy": lambda v: v.copy_(torch.arange(v.numel(), dtype=v.dtype).reshape(v.shape)),
    "clamp": lambda v: v.clamp_(-0.5, 0.5),
    "setitem": lambda v: v.__setitem__(0, 9.0),
    "complex_value": lambda v: v.add_(1j),  # PyTorch refuses: complex into a real tensor
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", list(REAL_OPS))
@pytest.mark.parametrize("view", list(REAL_VIEWS))
def test_inplace_through_real_view(view: str, op: str, layout: str) -> None:
    _check(layout, REAL_VIEWS[view], REAL_OPS[op])


# -- sequences of writes through several views of one base ------------------------------------


def _several_views(x: torch.Tensor) -> torch.Tensor:
    a, b, r = x[0], x.t(), x.real
    a.mul_(2j)
    b[1].add_(1 - 1j)
    r[2:].zero_()
    x.diagonal().copy_(torch.tensor([1j, 2j, 3j, 4j]))
    x.imag[:, -1].fill_(-4.0)
    return x


def _view_of_view_of_real(x: torch.Tensor) -> torch.Tensor:
    y = torch.view_as_real(x[1:])
    y[:, :, 1].mul_(-1)  # conjugate rows 1.. in place
    torch.view_as_complex(y)[0].add_(10)
    return x


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sequence", [_several_views, _view_of_view_of_real])
def test_sequence_of_writes(sequence: Callable[[torch.Tensor], torch.Tensor], layout: str) -> None:
    _check(layout, lambda x: x, sequence)


# -- in-place ops return their input, views alias ----------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace_returns_self(layout: str) -> None:
    z, _ = _make(layout, _base())
    v = z[1:]
    assert v.mul_(2) is v
    assert z.add_(1j) is z
    assert z.t_() is z


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_alias(layout: str) -> None:
    z, _ = _make(layout, _base())
    v = z.t()[1]
    w = z.view(24)
    z[:, 1] = 5 + 6j
    assert v.tolist() == [5 + 6j] * 4
    assert w[1::6].tolist() == [5 + 6j] * 4


def test_results_of_ops_do_not_alias_inputs() -> None:
    z, _ = _make("planar", _base())
    outs = [z.clone(), z + 0, z.sum(0), z.flip(0), z.cumprod(1), z.prod(1), z[:, :1].prod(1), torch.cat([z])]
    for out in outs:
        for part in (out.re, out.im):
            for inp in (z.re, z.im):
                assert part.untyped_storage().data_ptr() != inp.untyped_storage().data_ptr()


def test_from_interleaved_writes_through_both_ways() -> None:
    t = _base()
    z = ComplexTensor.from_interleaved(t)
    z[0, 0] = 1 + 2j
    assert t[0, 0].item() == 1 + 2j
    t[1, 1] = -3j
    assert z[1, 1].item() == -3j
    zc = ComplexTensor.from_interleaved(t.conj())
    zc[2, 2] = 1 + 1j  # a write through the conjugate view stores the conjugate
    assert t[2, 2].item() == 1 - 1j


@pytest.mark.parametrize("layout", LAYOUTS)
def test_metadata_mutation_ops(layout: str) -> None:
    native = _base()
    z, memory = _make(layout, native)
    native_base, z_base = native[...], z[...]
    steps = [
        ("t_", ()),
        ("unsqueeze_", (0,)),
        ("transpose_", (0, 2)),
        ("squeeze_", ()),
        ("swapdims_", (0, 1)),
        ("as_strided_", ((3, 2), (1, 4), 2)),
    ]
    for name, args in steps:
        getattr(native, name)(*args)
        assert getattr(z, name)(*args) is z
        assert (z.shape, z.stride(), z.storage_offset()) == (native.shape, native.stride(), native.storage_offset())
        torch.testing.assert_close(z.to_interleaved(), native)
    z.mul_(2j)
    native.mul_(2j)
    torch.testing.assert_close(z_base.to_interleaved(), native_base)
    if memory is not None:
        torch.testing.assert_close(memory, native_base)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_resize(layout: str) -> None:
    native = _base()
    z, _ = _make(layout, native)
    z.resize_(3, 8)
    native.resize_(3, 8)
    assert z.shape == native.shape
    torch.testing.assert_close(z.to_interleaved(), native)
    z.resize_(30)  # grows: the first 24 elements keep their values
    assert z.shape == (30,)
    torch.testing.assert_close(z.to_interleaved()[:24], native.reshape(24))
