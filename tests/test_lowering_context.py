"""Note [Traced or computed]: ops know they are traced from an explicit context, not from their operands' types."""

import torch

import torchcx
from torchcx import _lowering
from torchcx.ops import _registry


def _spy(monkeypatch, seen):
    """Record ``tracing()`` at every ComplexTensor op (the types' dispatch hook, tensor.install_ops)."""
    import torchcx.tensor as tensor_module

    dispatch = tensor_module._dispatch

    def spy(func, args, kwargs):
        seen.append((str(func), _lowering.tracing()))
        return dispatch(func, args, kwargs)

    monkeypatch.setattr(tensor_module, "_dispatch", spy)


def test_eager_ops_compute(monkeypatch):
    seen = []
    _spy(monkeypatch, seen)
    z = torchcx.ComplexTensor(torch.randn(3), torch.randn(3))
    (z * z).exp()
    assert seen and not any(traced for _, traced in seen)


def test_a_stock_tracer_traces_planar_programs(monkeypatch):
    # planar ComplexTensors under a stock backend: torchcx's ops run inside Dynamo's and
    # AOTAutograd's traces, which the fake/proxy modes on the dispatch stack say
    seen = []
    _spy(monkeypatch, seen)
    z = torchcx.ComplexTensor(torch.randn(3), torch.randn(3))
    torch._dynamo.reset()
    out = torch.compile(lambda a: (a * a).exp(), backend="aot_eager")(z)
    traced = [t for _, t in seen]
    assert True in traced
    expected = (z * z).exp()
    torch.testing.assert_close(out.re, expected.re)
    torch.testing.assert_close(out.im, expected.im)


def test_the_retrace_is_a_lowering(monkeypatch):
    inside = []
    entry_for = _registry.entry_for

    def spy(func):
        inside.append((_lowering.current() is not None, _lowering.tracing()))
        return entry_for(func)

    monkeypatch.setattr("torchcx._boundary.retrace.entry_for", spy)
    torch._dynamo.reset()
    x = torch.randn(4, dtype=torch.complex64)
    torchcx.compile(lambda a: a.exp() * 2)(x)
    assert inside and all(a and b for a, b in inside)
    assert _lowering.current() is None  # and it ends with the retrace


def test_constants_are_computed_during_a_lowering():
    with _lowering.lowering():
        assert _lowering.tracing()
        with _lowering.computing():
            assert _lowering.current() is None


def test_meta_tensors_hold_no_values():
    assert _lowering.without_values(torch.empty(2, device="meta"))
    assert not _lowering.without_values(torch.empty(2))


def test_the_packed_form_memo_leaves_no_trace_on_tensors():
    from torchcx import _layout

    t = torch.randn(4, dtype=torch.complex64)
    words = _layout.to_real(t)
    eager = _layout.unpack_remembering(words, torch.complex64)
    assert _layout.remembered(eager) is None  # outside a lowering there is nothing to remember
    with _lowering.lowering():
        inside = _layout.unpack_remembering(words, torch.complex64)
        assert _layout.remembered(inside)[0] is words
        assert _layout.remembered(torchcx.ComplexTensor(inside.re, inside.im))[0] is words  # the very parts
    assert _layout.remembered(inside) is None
    assert not any(name.startswith("_packed") for name in vars(inside))
