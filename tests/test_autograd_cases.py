"""Complex autograd cases users report broken upstream, three ways.

Each case is differentiated natively (eager PyTorch on complex tensors, the
reference), through ComplexTensor in eager mode and through ``torchcx.compile``;
gradients of every input (complex and real) must match, and every graph
Inductor lowered, backward included, must be real-only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.checkpoint import checkpoint

import torchcx
from accuracy import check_against_reference, widened
from compile_harness import record_inductor_graphs
from opinfo_harness import to_native
from torchcx import ComplexTensor
from torchcx.explain import _capture

CFLOAT = torch.complex64


def cplx(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=CFLOAT, generator=torch.Generator().manual_seed(seed + sum(shape)))


def real(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 7 * sum(shape)))


def leaves(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.detach().clone().requires_grad_() for t in tensors]


def differentiate(
    fn: Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    grad_outputs: Sequence[torch.Tensor] | None,
    use_backward: bool = False,
) -> tuple[Any, list[torch.Tensor | None]]:
    """``fn``'s outputs and the gradients of ``inputs``, by ``autograd.grad`` or by ``backward()``."""
    outputs = fn(*inputs)
    outs = [t for t in tree_flatten(outputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if use_backward:
        torch.autograd.backward(outs, grad_outputs)
        return outputs, [t.grad for t in inputs]
    return outputs, list(torch.autograd.grad(outs, inputs, grad_outputs, allow_unused=True))


def as_complex_tensor(t: Any) -> Any:
    if isinstance(t, torch.Tensor) and t.is_complex() and not isinstance(t, ComplexTensor):
        return ComplexTensor.from_interleaved(t)
    return t


def assert_close_to_eager(actual: Any, expected: Any, reference: Callable[[], Any]) -> None:
    check_against_reference(
        functools.partial(torch.testing.assert_close, actual, expected), actual, expected, reference, None, None
    )


def check_gradients(
    fn: Callable[..., Any],
    inputs: Sequence[torch.Tensor],
    grad_outputs: Sequence[torch.Tensor] | None = None,
    *,
    use_backward: bool = False,
) -> None:
    """Outputs and input gradients of ``fn``: native eager == ComplexTensor eager == torchcx.compile."""
    expected, expected_grads = differentiate(fn, leaves(*inputs), grad_outputs, use_backward)

    def in_complex_mode(*args: Any) -> Any:
        # real-input ops with complex results (polar, complex) go to torchcx too;
        # the backward runs outside the mode, as a user's would
        with torchcx.ops.ComplexMode():
            return fn(*args)

    cx_inputs = [as_complex_tensor(t).requires_grad_() for t in leaves(*inputs)]
    cx_grad_outputs = tree_map(as_complex_tensor, grad_outputs)
    cx_outputs, cx_grads = differentiate(in_complex_mode, cx_inputs, cx_grad_outputs, use_backward)
    # Note [Tolerances from error analysis]: where torchcx and eager differ by more than the
    # default tolerance, both are judged against the same function differentiated in complex128.
    reference = functools.cache(
        lambda: differentiate(fn, leaves(*widened(inputs)), widened(grad_outputs), use_backward)
    )
    assert_close_to_eager(to_native(cx_outputs), expected, lambda: reference()[0])
    assert_close_to_eager(to_native(cx_grads), expected_grads, lambda: reference()[1])

    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, _capture() as report:
        actual, grads = differentiate(torchcx.compile(fn), leaves(*inputs), grad_outputs, use_backward)
    assert_close_to_eager(actual, expected, lambda: reference()[0])
    assert_close_to_eager(grads, expected_grads, lambda: reference()[1])
    assert "backward" in {g.kind for g in report.graphs}, "no backward graph was compiled"
    assert recorder.graphs > 0 and not recorder.complex_nodes, recorder.complex_nodes


# -- real leaves, complex intermediates ----------------------------------------------------------


def test_polar_of_real_leaves():
    def fn(r, theta, w):
        z = torch.polar(r, theta)
        return ((z * w).sum(-1) - 1j).abs().sum()

    check_gradients(fn, [real(4, 5).abs(), real(4, 5, seed=1), cplx(4, 5)])


def test_complex_from_real_parts():
    def fn(a, b):
        z = torch.complex(a, b)
        return (z.exp() * z.conj()).angle().sum()

    check_gradients(fn, [real(6), real(6, seed=1)])


# -- complex -> real losses ----------------------------------------------------------------------

REAL_LOSSES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "abs": lambda y: y.abs().sum(),
    "angle": lambda y: y.angle().sum(),
    "real": lambda y: y.real.sum(),
    "imag": lambda y: y.imag.sum(),
    "abs_squared": lambda y: (y.abs() ** 2).mean(),
    "mul_conj_real": lambda y: (y * y.conj()).real.sum(),
    "view_as_real": lambda y: torch.view_as_real(y).pow(2).sum(),
}


@pytest.mark.parametrize("loss", REAL_LOSSES)
def test_complex_to_real_loss(loss):
    def fn(z, w):
        return REAL_LOSSES[loss](torch.tanh(z @ w))

    check_gradients(fn, [cplx(3, 4), cplx(4, 2)])


# -- autograd API ------------------------------------------------------------------------------------


def test_grad_with_complex_grad_outputs():
    def fn(z, x):
        return torch.sin(z) * x, (z * z).sum()

    check_gradients(fn, [cplx(5), real(5)], [cplx(5, seed=3), torch.tensor(0.5 - 2j)])


def test_retain_graph():
    """Two backward passes through one graph accumulate the same gradient twice."""

    def fn(z):
        return (torch.exp(z) * z.conj()).abs().sum()

    torch._dynamo.reset()
    runs = {
        "native": (fn, lambda t: t),
        "ComplexTensor": (fn, ComplexTensor.from_interleaved),
        "compiled": (torchcx.compile(fn), lambda t: t),
    }
    firsts = {}
    for name, (f, wrap) in runs.items():
        z = wrap(cplx(4)).requires_grad_()
        loss = f(z)
        loss.backward(retain_graph=True)
        first = to_native(z.grad.clone())
        loss.backward()
        torch.testing.assert_close(to_native(z.grad), 2 * first, msg=lambda m, name=name: f"{name}: {m}")
        firsts[name] = first
    torch.testing.assert_close(firsts["ComplexTensor"], firsts["native"])
    torch.testing.assert_close(firsts["compiled"], firsts["native"])


def test_double_backward_complex_tensor():
    """Hessian-vector product of a real loss of z: eager ComplexTensor equals native."""
    v = cplx(4, seed=5)

    def hvp(z: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        loss = (torch.sin(z) * z.conj()).abs().pow(2).sum()
        (g,) = torch.autograd.grad(loss, z, create_graph=True)
        (h,) = torch.autograd.grad(g, z, v)
        return h

    (z,) = leaves(cplx(4))
    expected = hvp(z, v)
    cz = ComplexTensor.from_interleaved(cplx(4)).requires_grad_()
    actual = hvp(cz, ComplexTensor.from_interleaved(v.clone()))
    torch.testing.assert_close(actual.to_interleaved(), expected)


def test_double_backward_compiled_as_torch_compile():
    """AOTAutograd compiles no double backward: torchcx.compile fails as torch.compile does.

    (Its backward is not differentiable; PyTorch raises when it is differentiated.)
    """

    def fn(z):
        return (torch.sin(z) * z.conj()).abs().pow(2).sum()

    errors = []
    for compiler in (torch.compile, torchcx.compile):
        torch._dynamo.reset()
        (z,) = leaves(cplx(4))
        (g,) = torch.autograd.grad(compiler(fn)(z), z, create_graph=True)
        with pytest.raises(RuntimeError) as error:
            torch.autograd.grad(g.abs().sum(), z)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


# -- conj inside linear layers, Python complex scalars, checkpointing -------------------------------


def test_conj_inside_linear():
    def fn(x, w, b):
        return F.linear(x.conj(), w.conj(), b).abs().sum() + F.linear(x, w.conj().T.conj().T).real.sum()

    check_gradients(fn, [cplx(6, 4), cplx(3, 4), cplx(3)])


def test_conj_inside_conv():
    def fn(x, w):
        return (F.conv2d(x.conj(), w) + F.conv1d(x[:, :, 0], w[..., 0].conj(), padding=1).unsqueeze(-1).sum()).abs()

    check_gradients(fn, [cplx(2, 3, 6, 5), cplx(4, 3, 3, 3)], [cplx(2, 4, 4, 3, seed=2).real.abs()])


def test_python_complex_scalars():
    def fn(z, x):
        y = (z * (1 + 2j) - 3j) / (0.5 - 1j) + x * 1j
        return (y ** (0.5 + 0.25j)).sum() * (2 - 1j)

    check_gradients(fn, [cplx(5) + 3, real(5)], [torch.tensor(1 - 1j)])


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non_reentrant", "reentrant"])
def test_activation_checkpointing(use_reentrant):
    def block(z, w):
        h = torch.tanh(z @ w)
        return h * h.conj().exp()

    def fn(z, w1, w2):
        h = checkpoint(block, z, w1, use_reentrant=use_reentrant)
        h = checkpoint(block, h, w2, use_reentrant=use_reentrant)
        return (h.abs() ** 2).mean()

    # reentrant checkpointing works with backward() only, not autograd.grad
    inputs = [cplx(4, 6), cplx(6, 6, seed=1) / 3, cplx(6, 6, seed=2) / 3]
    check_gradients(fn, inputs, use_backward=use_reentrant)


def test_view_in_backward_of_a_saved_activation_laid_out_channels_last():
    # Inductor lays the conv -> gelu activations out channels-last (layout optimization) and
    # AOTAutograd restrides the backward's saved inputs to match: the gradient reaching the
    # backward of reshape then cannot be viewed back, as the traced graph does (an FNO layer:
    # examples/fno_darcy.py failed so with truncated spectra)
    def fn(x, w, c):
        b, ch, h, wd = x.shape
        spectral = torch.fft.ifft(torch.fft.fft(x.reshape(b * ch, h, wd)) * c).real.reshape(b, ch, h, wd)
        return F.gelu(spectral + F.conv2d(x, w)).square().sum()

    check_gradients(fn, [real(2, 4, 8, 8), real(4, 4, 1, 1), cplx(8, 8)])
