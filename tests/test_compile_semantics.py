"""torchcx.compile keeps eager semantics exactly: values, input side effects, aliasing.

Every case runs eagerly and compiled on identical fresh inputs (check_compiled),
comparing outputs, the inputs afterwards, and which outputs share memory with
which inputs (with the same view metadata); it also checks that the graphs
Inductor lowered hold no complex value.
"""

from __future__ import annotations

import pytest
import torch

import torchcx
from compile_harness import check_compiled, record_inductor_graphs

torch.manual_seed(0)
C64, C128 = torch.complex64, torch.complex128


def cplx(*shape: int, dtype: torch.dtype = C64) -> torch.Tensor:
    """Random complex values, the same at every call (inputs are made twice: eager and compiled)."""
    g = torch.Generator().manual_seed(sum(shape) + 7 * len(shape))
    return torch.randn(*shape, dtype=dtype, generator=g)


def real(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape) + 11)
    return torch.randn(*shape, dtype=dtype, generator=g)


# -- pure functions, promotion, scalars ---------------------------------------------------------

PURE = {
    "elementwise_chain": (lambda x, y: x * y + torch.exp(1j * x.abs()), lambda: (cplx(64), cplx(64))),
    "norm_energy": (lambda x, y: ((x * y) * (x * y).conj()).real.sum(-1), lambda: (cplx(4, 16), cplx(4, 16))),
    "complex128": (lambda x: torch.sin(x) / (x + 2), lambda: (cplx(8, 8, dtype=C128),)),
    "python_scalars": (lambda x: (x * (1 + 2j) + 1j) / (2 - 1j) - 3, lambda: (cplx(10),)),
    "scalar_on_left": (lambda x: 2j * x - (1 - x) * 0.5, lambda: (cplx(10),)),
    "promote_c64_f64": (lambda x, r: x * r + r, lambda: (cplx(6), real(6, dtype=torch.float64))),
    "promote_int_tensor": (lambda x, n: n * x + n, lambda: (cplx(6), torch.arange(6))),
    "int_tensor_times_1j": (lambda n: n * 1j, lambda: (torch.arange(6),)),
    "real_to_complex_polar": (lambda r, t: torch.polar(r, t) * 2, lambda: (real(6).abs(), real(6) * 2)),
    "view_as_complex_of_real": (lambda r: torch.view_as_complex(r) * 1j, lambda: (real(5, 2),)),
    "complex_from_parts": (lambda a, b: torch.complex(a, b).exp(), lambda: (real(5), real(5) + 1)),
    "abs_angle_real_out": (lambda x: (x.abs() + x.angle(), x.real * x.imag), lambda: (cplx(7),)),
    "broadcasting": (lambda x, y: x[:, None] * y[None, :], lambda: (cplx(3), cplx(4))),
    "reduction_mean": (lambda x: x.mean(0) + x.sum(), lambda: (cplx(5, 3),)),
    "where_mask": (lambda x: torch.where(x.real > 0, x, x.conj()), lambda: (cplx(9),)),
    "cat_stack": (lambda x, y: torch.cat([x, y]).reshape(2, -1) * torch.stack([x, y]), lambda: (cplx(4), cplx(4))),
    "constants_in_graph": (lambda x: x * torch.tensor([1 + 1j, 2j, -1, 0.5j]), lambda: (cplx(4),)),
    "view_as_real_flatten": (lambda x: torch.view_as_real(x * 1j).flatten(-2), lambda: (cplx(2, 3),)),
    # Values Inductor can bound (x * 0, a sum over an empty dim) in the special-value blends
    # failed to compile: "not bool like VR[0, int_oo]" (Note [Masks are logical]); expm1 of
    # them failed in the scalar fallback of Note [Accurate expm1].
    "sin_of_zeros": (lambda x: torch.sin(x * 0), lambda: (cplx(8),)),
    "blends_of_bounded_values": (
        lambda x: (
            torch.cos(x * 0),
            torch.tanh(x * 0),
            torch.sinh(x * 0),
            torch.acos(x * 0),
            torch.pow(x * 0, x * 0 + 2),
            torch.expm1(x * 0),
        ),
        lambda: (cplx(8),),
    ),
    "sin_of_an_empty_sum": (lambda b: torch.sin(b.sum(dim=-2)), lambda: (cplx(0, 3),)),
    # Dynamo rewrites torch.addcdiv into a + (t1 / t2) * v; eager multiplies first, and where
    # t1 / t2 overflows the orders differ (Note [Dynamo's addcdiv]). The rewrite is undone;
    # the same chain written out keeps its own order (nan here, as eagerly).
    "addcdiv_of_an_overflowing_quotient": (
        lambda a, b: torch.addcdiv(a, a, b, value=2),
        lambda: (torch.full((4,), 1.5 - 0.5j), torch.full((4,), 1e-40j)),
    ),
    "div_mul_add_written_out": (
        lambda a, b: a + (a / b) * 2,
        lambda: (torch.full((4,), 1.5 - 0.5j), torch.full((4,), 1e-40j)),
    ),
    # found by the fuzzing campaign (run E, seed 13005): Inductor's cat drops a legacy empty 1-D
    # operand before promoting, so complex128 (0,) catted with complex64 came out complex64
    "cat_promotes_over_an_empty_operand": (
        lambda a, c: torch.cat([a, c], dim=-1)[torch.tensor([-1])].sum(),
        lambda: (cplx(0, dtype=C128), cplx(4, 1, 0)),
    ),
    "cat_of_mixed_precision": (lambda a, c: torch.cat([a, c]) * 2, lambda: (cplx(3, dtype=C128), cplx(2))),
}


@pytest.mark.parametrize("name", list(PURE))
def test_pure(name):
    fn, make = PURE[name]
    check_compiled(fn, make)


# -- in-place ops on inputs ----------------------------------------------------------------------


def _mul_(x):
    x.mul_(2 + 1j)


def _add_slice(x, y):
    x[1:].add_(y[:-1])


def _transpose_inplace(x):
    x.T.mul_(1j)


def _real_inplace(x):
    x.real.mul_(3)


def _imag_zero(x):
    x.imag.zero_()


def _view_as_real_inplace(x):
    torch.view_as_real(x)[..., 0].add_(1)


def _view_as_complex_of_real_input(r):
    torch.view_as_complex(r).mul_(1j)


def _setitem(x, y):
    x[0] = y[1] * 2
    x[:, 1] = 1j


def _copy_into(x, y):
    x.copy_(y.conj())


def _conj_inplace(x):
    x.conj_physical_()


def _inplace_and_return_computed(x):
    x.add_(1)
    return x.abs()


def _rsqrt_of_nan_constants(a):
    # Inductor folds 0 / 0 of the zeroed input to nan constants, and its index propagation
    # could not take max(|re|, |im|) of them (Note [Nan constants in index propagation];
    # found by the fuzzer, seed 5002).
    v0 = a.unsqueeze(0)
    a.zero_()
    return torch.rsqrt((v0 / v0).conj())


def _zeroed_plus(x, c):
    # found by the fuzzing campaign (seed 4012): Inductor's joint-graph passes fold c + x to x
    # once c is zeroed, and the graph returned the input x for eager's fresh tensor
    c.zero_()
    v = c + x
    return v, v


INPLACE = {
    "fresh_result_folded_to_an_input": (
        _zeroed_plus,
        lambda: (cplx(2, dtype=C128), torch.tensor(0.3 - 0.7j, dtype=C128).conj()),
    ),
    "fresh_result_folded_to_an_input_c64": (_zeroed_plus, lambda: (cplx(3), cplx(3))),
    "rsqrt_of_nan_constants": (_rsqrt_of_nan_constants, lambda: (torch.view_as_complex(real(2)),)),
    "mul_": (_mul_, lambda: (cplx(3, 4),)),
    "add_through_slice": (_add_slice, lambda: (cplx(5), cplx(5))),
    "through_transpose": (_transpose_inplace, lambda: (cplx(3, 4),)),
    "through_real": (_real_inplace, lambda: (cplx(3, 4),)),
    "through_imag": (_imag_zero, lambda: (cplx(6),)),
    "through_view_as_real": (_view_as_real_inplace, lambda: (cplx(2, 3),)),
    "view_as_complex_of_real_input": (_view_as_complex_of_real_input, lambda: (real(4, 2),)),
    "setitem": (_setitem, lambda: (cplx(3, 3), cplx(3, 3))),
    "copy_": (_copy_into, lambda: (cplx(4), cplx(4))),
    "conj_physical_": (_conj_inplace, lambda: (cplx(4),)),
    "mutate_and_return": (_inplace_and_return_computed, lambda: (cplx(4),)),
    "complex128_mutation": (_mul_, lambda: (cplx(3, 4, dtype=C128),)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_input_mutation(name):
    fn, make = INPLACE[name]
    check_compiled(fn, make)


# -- outputs that are inputs or views of inputs ------------------------------------------------------

ALIASES = {
    "identity": lambda x: x,
    "transpose": lambda x: x.T,
    "slice": lambda x: x[1:],
    "view_as_real": lambda x: torch.view_as_real(x),
    "real_and_imag": lambda x: (x.real, x.imag),
    "reshape_view": lambda x: x.reshape(-1),
    "unbind": lambda x: x.unbind(0),
    "view_and_compute": lambda x: (x[0], x * 2),
    "conj_view": lambda x: x.conj(),
}


@pytest.mark.parametrize("name", list(ALIASES))
def test_output_aliases_input(name):
    check_compiled(ALIASES[name], lambda: (cplx(3, 4),), expect_graph=name == "view_and_compute")


def test_output_alias_and_mutation():
    def fn(x):
        x.mul_(2)
        return x[1:], x.real

    check_compiled(fn, lambda: (cplx(3, 4),))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_view_of_a_mutated_input_is_not_computed(dtype):
    # The returned view is a view of the input after the update: replayed on the input at
    # run time, never computed and packed into a buffer of its own (one kernel, no output).
    def fn(x, phase, y):
        x.mul_(phase)
        x.add_(y)
        return x[:, ::2]

    check_compiled(fn, lambda: (cplx(4, 6, dtype=dtype), cplx(6, dtype=dtype), cplx(4, 6, dtype=dtype)))
    report = torchcx.explain(fn, cplx(4, 6, dtype=dtype), cplx(6, dtype=dtype), cplx(4, 6, dtype=dtype))
    graphs = [g.real_graph for g in report.graphs if g.real_graph is not None]
    assert len(graphs) == 1
    output = next(n for n in graphs[0].graph.nodes if n.op == "output")
    assert output.args[0] in ((), []), output.args


def _runtimes_of(fn, *args, **compile_kwargs):
    """The BoundaryRuntimes a torchcx-compiled ``fn`` calls on ``args`` (twice), and its result."""
    from torchcx._boundary.runtime import BoundaryRuntime

    runtimes, call = [], BoundaryRuntime.__call__

    def spy(self, *a):
        runtimes.append(self)
        return call(self, *a)

    torch._dynamo.reset()
    compiled = torchcx.compile(fn, **compile_kwargs)
    BoundaryRuntime.__call__ = spy
    try:
        compiled(*args)
        out = compiled(*args)
    finally:
        BoundaryRuntime.__call__ = call
    return runtimes, out


def test_views_of_inputs_are_left_to_aotautograd():
    # Note [Views AOTAutograd regenerates]: AOTAutograd replays x[:, ::2] on x itself; the
    # run time returns a placeholder of its shape instead of replaying it first.
    def fn(x, phase, y):
        x.mul_(phase)
        x.add_(y)
        return x[:, ::2], x

    def expected_of(x, phase, y):
        out = fn(x, phase, y)
        assert out[0]._base is x and out[1] is x
        return out

    check_compiled(fn, lambda: (cplx(4, 6), cplx(6), cplx(4, 6)))  # values, aliasing, strides as eager
    x, phase, y = cplx(4, 6), cplx(6), cplx(4, 6)
    x_eager = x.clone()
    runtimes, (view, same) = _runtimes_of(fn, x, phase, y)
    expected_of(x_eager, phase, y)
    expected = expected_of(x_eager, phase, y)
    assert runtimes and all(r._replay is None and r._placeholders for r in runtimes)
    assert view._base is x and same is x
    torch.testing.assert_close(view, expected[0])
    assert view.stride() == expected[0].stride() and view.storage_offset() == expected[0].storage_offset()
    # Symbolic shapes, and an input that requires grad (a training graph), keep the replay.
    for kwargs, args in (
        ({"dynamic": True}, (cplx(4, 6), cplx(6), cplx(4, 6))),
        ({}, (cplx(4, 6), cplx(6).requires_grad_(), cplx(4, 6))),
    ):
        runtimes, _ = _runtimes_of(lambda x, p, y: fn(x, p * 1, y), *args, **kwargs)
        assert runtimes and all(r._replay is not None and not r._placeholders for r in runtimes), kwargs


# -- outputs that are views of other outputs or of intermediates (Note [Outputs that alias each other])

OUTPUT_ALIASES = {
    "slice": lambda a: (lambda t: (t, t[1:]))(torch.exp(a)),
    "real": lambda a: (lambda t: (t, t.real))(torch.exp(a)),
    "imag": lambda a: (lambda t: (t, t.imag))(torch.exp(a)),
    "conj": lambda a: (lambda t: (t, t.conj()))(torch.exp(a)),
    "view_as_real": lambda a: (lambda t: (t, torch.view_as_real(t)))(torch.exp(a)),
    "two_views_of_an_intermediate": lambda a: (lambda t: (t[0], t[1:].real))(a * 2),
    "views_of_two_intermediates": lambda a: (lambda t, u: (t[0], t[1], u.T, u.imag))(a + 1, a.exp()),
    # found by the differential fuzzer: an in-place result is its target, so eager returns one tensor twice
    "in_place_result_and_its_target": lambda a: (lambda v0: (v0.add_(a), v0))(-a),
}


@pytest.mark.parametrize("name", list(OUTPUT_ALIASES))
def test_output_aliases_output(name):
    check_compiled(OUTPUT_ALIASES[name], lambda: (cplx(3, 4),))


# found by the differential fuzzer: the source of a copy into an input is a tensor of its own in
# eager, though the input holds the same values afterwards (Note [Written inputs returned])
WRITTEN_INPUTS = {
    "copy_source": lambda a: (lambda v0: (a.copy_(v0), v0))(-a),
    "copy_source_view": lambda a: (lambda v0: (a.copy_(v0), v0[1:]))(-a),
    "copy_source_alone": lambda a: (lambda v0: (a.copy_(v0), v0)[1:])(-a),
    "mutated_input_and_its_view": lambda a: (a.mul_(2j), a[1:], a.T),
}


@pytest.mark.parametrize("name", list(WRITTEN_INPUTS))
def test_written_input_and_other_outputs(name):
    check_compiled(WRITTEN_INPUTS[name], lambda: (cplx(3, 4),))


@pytest.mark.parametrize("unsqueeze", [-1, -2, 0])
def test_unsqueeze_of_view_as_real_of_an_intermediate(unsqueeze):
    # found by the differential fuzzer: einsum unsqueezes its operands after their last dim;
    # on the retrace's RealView that position was taken as a dim of the parts (out of range)
    def fn(b):
        v = torch.view_as_real(b * 2)
        return v.unsqueeze(unsqueeze) * 3, torch.einsum("...ij,...kj->...ik", v, v)

    check_compiled(fn, lambda: (cplx(3),))


@pytest.mark.parametrize("dtype", [C64, C128])
def test_gradient_of_a_transposed_input(dtype):
    # found by the differential fuzzer: a complex128 output saved for backward (exp's) was
    # packed contiguously while AOTAutograd traced the backward with eager's transposed
    # strides; it now keeps the parts' layout, and a replayed saved output reports its strides
    def make():
        g = torch.Generator().manual_seed(1)
        return (torch.randn(4, 2, dtype=dtype, generator=g).mT.requires_grad_(),)

    (x,), (y,) = make(), make()
    torch._dynamo.reset()
    expected, actual = torch.exp(x), torchcx.compile(torch.exp)(y)
    assert actual.stride() == expected.stride()
    (gx,) = torch.autograd.grad(expected.abs().sum(), x)
    (gy,) = torch.autograd.grad(actual.abs().sum(), y)
    torch.testing.assert_close(gy, gx)


def test_gradient_through_sgn_of_an_angle():
    # found by the fuzzing campaign (seed 5007): the backward of sgn creates autograd's zero
    # gradient (aten._efficientzerotensor) of the complex input; run natively it was a
    # ZeroTensor without storage, and the boundary failed reading its data pointer
    def fn(c):
        return torch.sgn(torch.angle(c))

    x, y = (torch.tensor(0.5 - 1j).requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = fn(x), torchcx.compile(fn)(y)
    torch.testing.assert_close(actual, expected)
    (gx,) = torch.autograd.grad(expected.sum(), x)
    (gy,) = torch.autograd.grad(actual.sum(), y)
    torch.testing.assert_close(gy, gx)


def test_gradient_through_a_slice_of_a_conj_fft():
    # found by the fuzzing campaign (seed 6004): ifft of real data is a conj view; the tangent of
    # a strided slice of it arrives without the conj bit, and the boundary's conj-resolving copy
    # was contiguous where the backward graph asserts the slice's strides
    def fn(b):
        return torch.fft.ifft(b, dim=1, n=3)[::2]

    x, y = (torch.arange(4.0).reshape(4, 1, 1).requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = fn(x), torchcx.compile(fn)(y)
    torch.testing.assert_close(actual, expected)
    (gx,) = torch.autograd.grad(expected.abs().sum(), x)
    (gy,) = torch.autograd.grad(actual.abs().sum(), y)
    torch.testing.assert_close(gy, gx)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_gradient_with_a_returned_view_of_an_input_saved_for_backward(dtype):
    # found by fuzzing run F (seed 14008): the input b is returned (as a view) and saved for the
    # backward; the saved tensor was the returned view's object and the gradient came out wrong
    def fn(b):
        v3 = (b * b).conj().exp_()
        return b.transpose(-1, 0), v3, torch.rsqrt(v3)

    x, y = (torch.tensor(0.3 - 0.7j, dtype=dtype).requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = fn(x), torchcx.compile(fn)(y)
    torch.testing.assert_close(actual, expected)
    (gx,) = torch.autograd.grad(sum((o.abs() ** 2).sum() for o in expected), x)
    (gy,) = torch.autograd.grad(sum((o.abs() ** 2).sum() for o in actual), y)
    torch.testing.assert_close(gy, gx)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_gradient_of_imag_of_a_conj_input_through_a_matmul(dtype):
    # found by fuzzing run H (seed 19005): a.imag of a conj view is a real tensor with a
    # negation bit, saved for the backward as it is; the backward's kernel read its memory and
    # the gradient came out negated
    def fn(a):
        v0 = a.imag
        return (v0 @ v0.mT,)

    g = torch.Generator().manual_seed(4352)
    base = torch.randn(1, 1, 4, dtype=dtype, generator=g)
    x, y = (base.conj().requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = fn(x), torchcx.compile(fn)(y)
    torch.testing.assert_close(actual, expected)
    (gx,) = torch.autograd.grad(expected[0].sum(), x)
    (gy,) = torch.autograd.grad(actual[0].sum(), y)
    torch.testing.assert_close(gy, gx)


def test_written_real_input_with_a_negation_bit():
    # x = z.conj().imag is a real view with a negation bit; the boundary gives the graph its
    # values (test above), so a graph that writes x must copy them back through the bit
    def fn(x, y):
        x.mul_(2)
        return (x + y,)

    g = torch.Generator().manual_seed(4353)
    base = torch.randn(3, 4, dtype=C64, generator=g)
    y = torch.randn(3, 4, dtype=C64, generator=g)
    ze, zc = base.clone(), base.clone()
    xe, xc = ze.conj().imag, zc.conj().imag
    assert xc.is_neg()
    torch._dynamo.reset()
    expected, actual = fn(xe, y), torchcx.compile(fn)(xc, y)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(xc, xe)
    torch.testing.assert_close(zc, ze)


def test_gradient_with_an_in_place_result_returned_twice():
    # found by fuzzing run G (seed 16000): with output 1 a repeat of output 0, the views replayed
    # at run time were matched to the wrong outputs, and the tensor saved for exp's backward
    # (conj of its result) was given the result itself: a wrong gradient, right values
    def fn(c):
        v0 = c.masked_fill(c.abs() > 1, 0.5 - 1.5j)
        v1 = v0.exp_()
        return v1, v0, v0

    x, y = (torch.tensor([0.3 - 0.7j, 1.5 + 1j]).requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = fn(x), torchcx.compile(fn)(y)
    torch.testing.assert_close(actual, expected)
    assert actual[0] is actual[1] is actual[2]
    (gx,) = torch.autograd.grad(sum((o.abs() ** 2).sum() for o in expected), x)
    (gy,) = torch.autograd.grad(sum((o.abs() ** 2).sum() for o in actual), y)
    torch.testing.assert_close(gy, gx)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_inplace_on_a_result_that_requires_grad(dtype):
    # found by the fuzzing campaign (seed 7002): a complex128 result (float pairs, viewed as
    # complex) was an autograd view of the kernel's real buffer, and autograd refused in-place
    # ops on it, where eager's result is a plain tensor
    x, y = (torch.tensor([0.5 - 1j, 2 + 0.25j], dtype=dtype).requires_grad_() for _ in range(2))
    torch._dynamo.reset()
    expected, actual = x * 2, torchcx.compile(lambda a: a * 2)(y)
    expected.mul_(1j)
    actual.mul_(1j)
    torch.testing.assert_close(actual, expected)
    (gx,) = torch.autograd.grad(expected.abs().sum(), x)
    (gy,) = torch.autograd.grad(actual.abs().sum(), y)
    torch.testing.assert_close(gy, gx)


def test_view_of_an_output_sees_a_later_mutation():
    # eager's t2 views t1, so the add after the graph break shows in it
    def fn(a):
        t1 = a * 2
        t2 = t1[0]
        torch._dynamo.graph_break()
        t1.add_(1)
        return (t2,)

    check_compiled(fn, lambda: (cplx(3, 4),))


# -- copying complex values into real or integer tensors (torch keeps the real part, with a warning)


def _copy_into_real_part(x, y):
    x.real.copy_(y)
    return (x,)


def _assign_into_real_part(x, y):
    x.real[:] = y
    return (x,)


def _copy_into_integer(b, y):
    b.copy_(y)
    return (y + y,)


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize(
    "fn, make",
    [
        (_copy_into_real_part, lambda: (cplx(3, 4), cplx(4))),
        (_assign_into_real_part, lambda: (cplx(3, 4), cplx(4))),
        (_copy_into_integer, lambda: (torch.zeros(3, 4, dtype=torch.int64), 5 * cplx(3, 4).to(torch.complex128))),
    ],
    ids=["copy_", "setitem", "integer"],
)
def test_copy_complex_into_real(fn, make):
    check_compiled(fn, make)


# -- out= arguments -----------------------------------------------------------------------------------


def test_out_argument():
    def fn(x, y, out):
        torch.mul(x, y, out=out)
        return out

    check_compiled(fn, lambda: (cplx(5), cplx(5), torch.empty(5, dtype=C64)))


def test_out_argument_unary():
    def fn(x, out):
        torch.exp(x, out=out)

    check_compiled(fn, lambda: (cplx(5), torch.empty(5, dtype=C64)))


# -- modules with complex buffers and parameters --------------------------------------------------------


class Accumulator(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(4, dtype=C64))
        self.weight = torch.nn.Parameter(cplx(4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.state.mul_(0.5).add_(x * self.weight)
        return self.state.abs()


def test_module_buffer_mutation():
    torch._dynamo.reset()
    eager, compiled_module = Accumulator(), Accumulator()
    compiled_module.load_state_dict(eager.state_dict())
    compiled = torchcx.compile(compiled_module)
    with record_inductor_graphs() as recorder:
        for _ in range(3):
            x = cplx(4)
            torch.testing.assert_close(compiled(x), eager(x))
    torch.testing.assert_close(compiled_module.state, eager.state)
    assert recorder.graphs > 0 and not recorder.complex_nodes


# -- inputs sharing memory, non-contiguous inputs, storage offsets, conj views -------------------------------


def _overlapping():
    base = cplx(8)
    return base[:5], base[3:]


def test_arguments_sharing_memory():
    def fn(a, b):
        a.mul_(2)
        return a + b

    check_compiled(fn, _overlapping)


def test_arguments_sharing_memory_read_only():
    check_compiled(lambda a, b: a * b.conj(), _overlapping)


@pytest.mark.parametrize(
    "make",
    [
        lambda: (cplx(8, 6)[::2, 1:],),
        lambda: (cplx(6, 8).T,),
        lambda: (cplx(20)[3:17],),
        lambda: (cplx(4, 5).expand(3, 4, 5),),
        lambda: (cplx(2, 5, dtype=C128)[:, 1::2],),
    ],
    ids=["strided", "transposed", "offset", "expanded", "complex128_strided"],
)
def test_noncontiguous_inputs(make):
    check_compiled(lambda x: (x * 1j + x.abs()).sum(-1), make)


def test_noncontiguous_input_mutation():
    def fn(x):
        x.add_(1j)

    check_compiled(fn, lambda: (cplx(6, 8)[::2, 1:],))


def test_conj_input():
    check_compiled(lambda x: x * 2 + x.imag, lambda: (cplx(5).conj(),))


def test_conj_input_mutation():
    def fn(x):
        x.mul_(1j)

    check_compiled(fn, lambda: (cplx(5).conj(),))


def test_conj_and_resolve_inside():
    check_compiled(lambda x: (x.conj() * x).real + x.conj().resolve_conj().imag, lambda: (cplx(6),))


def test_neg_view_inside():
    check_compiled(lambda x: torch.conj_physical(x) + x.conj().imag, lambda: (cplx(6),))


# -- ComplexTensor inputs and outputs, any part dtype ------------------------------------------------------------


@pytest.mark.parametrize("part", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_complex_tensor_in_and_out(part):
    def make():
        g = torch.Generator().manual_seed(3)
        return (torchcx.complex(torch.randn(16, generator=g).to(part), torch.randn(16, generator=g).to(part)),)

    tol = {torch.float16: 2e-3, torch.bfloat16: 2e-2}.get(part)
    # (no real-to-complex promotion inside: 1j * z.abs() would make a native chalf in eager)
    check_compiled(lambda z: z * z.conj() + torch.exp(z * 1j), make, rtol=tol, atol=tol)


@pytest.mark.parametrize("part", [torch.float32, torch.bfloat16])
def test_parts_of_a_planar_input_are_views_of_its_parts(part):
    # found by the differential fuzzer: Dynamo rebuilt z.real outside the graph and compiled
    # the dispatch it ran as a frame of its own (Note [Dispatch is not a Dynamo frame])
    def make():
        g = torch.Generator().manual_seed(5)
        return (torchcx.complex(torch.randn(3, 4, generator=g).to(part), torch.randn(3, 4, generator=g).to(part)),)

    check_compiled(lambda z: (z.real, z.imag), make, expect_graph=False)
    check_compiled(lambda z: (z.real, z * 2), make)


def _planar_transposed(part: torch.dtype) -> tuple[torchcx.ComplexTensor]:
    # the fuzzing campaign's input (run E, seed 12003): parts that are .mT views
    g = torch.Generator().manual_seed(124)
    re, im = (torch.randn(4, 1, 2, generator=g).to(part).mT for _ in range(2))
    return (torchcx.complex(re, im),)


# found by the fuzzing campaign (run E, seed 12003): a view of a ComplexTensor input that the
# program had written came back as a fresh tensor (Note [A view shares its base's storage])
VIEWS_OF_WRITTEN_COMPLEX_TENSORS = {
    "transpose_after_add_": lambda a: (a.add_(a), a.transpose(0, 1))[1:],
    "add_on_an_identity_transpose": lambda a: (a.transpose(0, -3).add_(a),),
    "campaign_program": lambda a: (lambda v0, v1, v2: (v2.add_(v2), v1.add_(v1)))(
        a.conj().mul_(2j), torch.fft.fft(a, dim=-1, norm="ortho"), a.transpose(0, -3)
    ),
}


@pytest.mark.parametrize("part", [torch.float32, torch.float16])
@pytest.mark.parametrize("name", list(VIEWS_OF_WRITTEN_COMPLEX_TENSORS))
def test_views_of_a_written_complex_tensor_input(name, part):
    tol = 2e-2 if part == torch.float16 else None
    check_compiled(VIEWS_OF_WRITTEN_COMPLEX_TENSORS[name], lambda: _planar_transposed(part), rtol=tol, atol=tol)


@pytest.mark.parametrize("part", [torch.float32, torch.float16])
def test_written_conj_view_of_a_complex_tensor_returned(part):
    # found by fuzzing run H (seed 19004): once views shared their base's storage, AOTAutograd
    # regenerated this output from the input and lost the conjugate's sign (values, not only
    # aliasing, which differs as documented in tests/fuzz_programs.py EXCLUSIONS)
    def make():
        g = torch.Generator().manual_seed(117)
        return torchcx.complex(torch.randn(2, 4, 4, generator=g).to(part), torch.randn(2, 4, 4, generator=g).to(part))

    a, b = make(), make()
    torch._dynamo.reset()
    expected, actual = a.conj().mul_(0.25), torchcx.compile(lambda z: z.conj().mul_(0.25))(b)
    torch.testing.assert_close(actual.to_interleaved(torch.complex64), expected.to_interleaved(torch.complex64))
    torch.testing.assert_close(b.to_interleaved(torch.complex64), a.to_interleaved(torch.complex64))


def test_in_place_result_returned_twice_with_a_complex_tensor_operand():
    # found by the fuzzing campaign (run E, seed 13015): v3.mul_(a) is v3, so eager returns one
    # tensor twice; the graph returns one node twice, through a view_as_complex of real parts
    def make():
        g = torch.Generator().manual_seed(7055)
        a = torchcx.complex(
            torch.randn((), generator=g).to(torch.float16), torch.randn((), generator=g).to(torch.float16)
        )
        return a, torch.randn((4, 2, 1), dtype=C64, generator=g)[::2]

    check_compiled(lambda a, b: (lambda v3: (v3.mul_(a), v3))(torch.exp(b)), make, rtol=2e-2, atol=2e-2)


def test_complex_tensor_mixed_with_native():
    def make():
        return (torchcx.ComplexTensor.from_interleaved(cplx(6)).contiguous(), cplx(6))

    check_compiled(lambda z, x: z * x + 1, make)


def test_chalf_in_and_out():
    def make():
        return (cplx(8).to(torch.complex32),)

    # eager chalf lacks most CPU kernels: compare against a complex64 reference.
    torch._dynamo.reset()
    x = make()[0]
    out = torchcx.compile(lambda z: z * z + z)(x)
    assert out.dtype == torch.complex32
    ref = (x.to(C64) * x.to(C64) + x.to(C64)).to(torch.complex32)
    torch.testing.assert_close(out.to(C64), ref.to(C64), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "fn",
    [lambda x, y: torch.sgn(x), lambda x, y: torch.lerp(x, y, 0.3)],
    ids=["sgn", "lerp"],
)
def test_real_only_graph_of_a_replaced_decomposition(fn):
    # Found by the differential fuzzer (tests/test_fuzz.py): a graph with no complex
    # value goes to Inductor as it is, and ops whose complex decomposition torchcx
    # replaces (sgn, lerp) were left undecomposed there: Inductor raised "both a
    # fallback and a decomp for same op".
    check_compiled(fn, lambda: (real(5, dtype=torch.float64), real(5, dtype=torch.float64) + 1), real_only=False)


def test_imag_of_a_conj_input_across_a_graph_break():
    # found by fuzzing run I (seed 21017): after the break (boolean-mask indexing), the second
    # graph holds no complex value and its input b.imag is a real tensor with a negation bit;
    # Inductor read its memory, not the bit, and sigmoid(b.imag) came out as sigmoid(-b.imag)
    def fn(b):
        v2 = b.imag
        v4 = v2[v2.abs() > 1]
        v5 = torch.sigmoid(v2)
        return (v5, v4)

    g = torch.Generator().manual_seed(9747)
    b = torch.randn(3, 1, dtype=C64, generator=g).conj()
    torch._dynamo.reset()
    expected, actual = fn(b), torchcx.compile(fn)(b)
    torch.testing.assert_close(actual, expected)


def test_written_real_input_with_a_negation_bit_in_a_real_only_graph():
    # as test_written_real_input_with_a_negation_bit, through a graph with no complex value
    def fn(x):
        x.mul_(2)
        return (torch.sigmoid(x),)

    base = torch.randn(3, 4, dtype=C64, generator=torch.Generator().manual_seed(4354))
    ze, zc = base.clone(), base.clone()
    xe, xc = ze.conj().imag, zc.conj().imag
    torch._dynamo.reset()
    expected, actual = fn(xe), torchcx.compile(fn)(xc)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(xc, xe)
    torch.testing.assert_close(zc, ze)


@pytest.mark.parametrize(
    "fn",
    [
        lambda c: (torch.fft.rfft(torch.view_as_real(c), dim=-1, n=1),),  # run J, seed 22010
        lambda c: (torch.fft.ifft(torch.view_as_real(c), dim=-1, n=1),),  # run J, seed 22020
        lambda c: (torch.view_as_real(c)[..., :1] * 2,),
        lambda c: (torch.view_as_real(c).narrow(-1, 1, 1) * 2,),
    ],
    ids=["rfft_n1", "ifft_n1", "slice", "narrow"],
)
@pytest.mark.parametrize("shape", [(), (3,)], ids=["0d", "1d"])
def test_slice_of_the_pair_dim_of_view_as_real(fn, shape):
    # found by fuzzing run J: an FFT truncated to n=1 along view_as_real's pair dim slices that
    # dim, and the slice was applied to the parts (which have no such dim): "slice() cannot be
    # applied to a 0-dim tensor", or an IndexError (seed 23014)
    c = torch.randn(shape, dtype=C64, generator=torch.Generator().manual_seed(22010))
    torch._dynamo.reset()
    torch.testing.assert_close(torchcx.compile(fn)(c), fn(c))
