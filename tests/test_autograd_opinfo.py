"""OpInfo gradient parity: backward through torchcx gives eager's complex gradients.

For every OpInfo op that supports autograd with complex64 on CPU, each sample
(``requires_grad=True``) is differentiated three ways with the same random
cotangents: natively (eager PyTorch on complex tensors, the reference),
through ComplexTensor in eager mode, and through ``torchcx.compile``. The
outputs and the gradients of every input that requires grad (complex and
real) must match. Cotangents are complex for complex outputs, so this checks
torch's convention (for a real loss L of z, ``z.grad = dL/d(re) + i dL/d(im)``)
and the vector-Jacobian product with complex ``grad_outputs``.

The compiled test also checks that the backward graphs Inductor lowers are
real-only (the post-grad hook of ``compile_harness``), as the forward ones.

Gradients are compared only where the forward matches (an op whose forward is
a known failure in ``expectations.py`` is skipped with that reason), so the
coverage summary reads "gradient parity among the ops that pass forward".
Tolerances and known failures are data in ``expectations.py`` (suites
``autograd-eager`` and ``autograd-compiled``; gradient tolerances in
``AUTOGRAD_TOLERANCE``).

CI runs every sample in eager mode and the first sample of every op compiled
(one forward and one backward compilation each). The full compiled set:

    TORCHCX_OPINFO_FULL=1 python -m pytest tests/test_autograd_opinfo.py -k compiled -p no:xdist
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
import torch
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._pytree import tree_flatten, tree_unflatten

import torchcx
from accuracy import check_against_reference, widened
from compile_harness import record_inductor_graphs
from expectations import lookup, lookup_autograd
from opinfo_harness import Outcome, assert_same, complex_ops, conditioning_bound, op_id, record, to_native
from together import ALONE_HINT, Groups, attributable, split
from torchcx import ComplexTensor
from torchcx.explain import _capture

FULL = os.environ.get("TORCHCX_OPINFO_FULL") == "1"
DTYPE = torch.complex64
NARROWER = {torch.complex128: torch.complex64, torch.float64: torch.float32}
OPS = [op for op in complex_ops() if op.supports_autograd and DTYPE in op.supported_backward_dtypes("cpu")]


class Sample:
    """One OpInfo sample as a function of the tensors in it that require grad."""

    def __init__(self, op: OpInfo, sample: SampleInput) -> None:
        self.op = op
        self.sample = sample
        self.leaves, self.spec = tree_flatten((sample.input, sample.args, sample.kwargs))
        self.diff = [i for i, x in enumerate(self.leaves) if isinstance(x, torch.Tensor) and x.requires_grad]

    def fresh_leaves(self, convert: Callable[[torch.Tensor], torch.Tensor]) -> tuple[list[Any], list[torch.Tensor]]:
        """A private copy of every tensor in the sample (through ``convert``); the differentiable ones."""
        leaves = [convert(x.detach().clone()) if isinstance(x, torch.Tensor) else x for x in self.leaves]
        for i in self.diff:
            leaves[i].requires_grad_()
        return leaves, [leaves[i] for i in self.diff]

    def arguments(self, leaves: list[Any], tensors: Sequence[torch.Tensor]) -> tuple[Any, Any, Any]:
        """(input, args, kwargs) of the sample: ``leaves`` with the differentiable ones replaced by ``tensors``."""
        filled = list(leaves)
        for i, t in zip(self.diff, tensors):
            filled[i] = t
        return tree_unflatten(filled, self.spec)

    def function(self, leaves: list[Any], variant: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """The op (or ``variant`` of it) on ``leaves`` with the differentiable ones replaced by its arguments.

        As PyTorch's own gradient tests: through the op's ``gradcheck_wrapper``
        (e.g. symmetrising the input of eigh) and the sample's
        ``output_process_fn_grad`` (e.g. dropping the sign ambiguity of svd).
        """
        op, sample = self.op, self.sample
        variant = op.get_op() if variant is None else variant

        def fn(*tensors: torch.Tensor) -> Any:
            inp, args, kwargs = self.arguments(leaves, tensors)
            return sample.output_process_fn_grad(op.gradcheck_wrapper(variant, inp, *args, **kwargs))

        return fn


#: The seed of sample i's cotangents is FIRST_SEED + i.
FIRST_SEED = 1000


def differentiable(outputs: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(outputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]


def cotangents(outputs: Sequence[torch.Tensor], seed: int) -> list[torch.Tensor]:
    """Random cotangents of the outputs' dtypes and shapes (complex for complex outputs), reproducibly."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(t.shape, dtype=t.dtype, generator=g) for t in outputs]


def as_complex_tensor(t: torch.Tensor) -> torch.Tensor:
    return ComplexTensor.from_interleaved(t) if t.is_complex() else t


def native(fn: Callable[..., Any], tensors: list[torch.Tensor], seed: int) -> tuple[Any, Any]:
    outputs = fn(*tensors)
    outs = differentiable(outputs)
    grads = torch.autograd.grad(outs, tensors, cotangents(outs, seed), allow_unused=True)
    return outputs, grads


def through_complex_tensor(sample: Sample, seed: int) -> tuple[Any, Any]:
    leaves, tensors = sample.fresh_leaves(as_complex_tensor)
    # ComplexMode routes to torchcx also the ops that make complex values from
    # real ones (factories, real tensors with complex scalars), as in the
    # forward conformance test. Backward runs outside it, as a user's would:
    # autograd's formulas reach torchcx through the ComplexTensors alone.
    with torchcx.ops.ComplexMode():
        outputs = sample.function(leaves)(*tensors)
    outs = differentiable(outputs)
    cots = [as_complex_tensor(c) for c in cotangents(outs, seed)]
    grads = torch.autograd.grad(outs, tensors, cots, allow_unused=True)
    return outputs, grads


def reference_gradients(sample: Sample, seed: int) -> tuple[Any, list[torch.Tensor | None]]:
    """Outputs and gradients of the sample in complex128/float64: the same values, widened, and the
    same cotangents (drawn for the complex64 outputs, then widened)."""
    leaves, tensors = sample.fresh_leaves(widened)
    outputs = sample.function(leaves)(*tensors)
    outs = differentiable(outputs)
    narrow = [o.detach().to(NARROWER.get(o.dtype, o.dtype)) for o in outs]
    grads = torch.autograd.grad(outs, tensors, widened(cotangents(narrow, seed)), allow_unused=True)
    return outputs, list(grads)


def _item(make: Callable[[], Sequence[Any]], i: int) -> Any:
    return make()[i]


def python_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a Python function (Dynamo compiles Python frames; many ops are builtins), same name."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


class Compiled:
    """Differentiates samples through torchcx.compile, remembering what reached Inductor."""

    def __init__(self) -> None:
        self.complex_nodes: list[str] = []
        self.kinds: set[str] = set()
        self.fallbacks: set[str] = set()

    def __call__(self, sample: Sample, seed: int) -> tuple[Any, Any]:
        leaves, tensors = sample.fresh_leaves(lambda t: t)
        torch._dynamo.reset()
        # The op itself is compiled; the test's wrapper and output processing run
        # around it eagerly (Dynamo cannot trace some of them, e.g. the masked
        # ops' wrapper, which passes the op function to torch.masked._output_mask).
        # The backward graph is compiled at the first backward call: record it too.
        with record_inductor_graphs() as recorder, _capture() as report:
            outputs = sample.function(leaves, torchcx.compile(python_function(sample.op.get_op())))(*tensors)
            outs = differentiable(outputs)
            grads = torch.autograd.grad(outs, tensors, cotangents(outs, seed), allow_unused=True)
        self.complex_nodes += recorder.complex_nodes
        for graph in report.graphs:
            self.kinds.add(graph.kind)
            self.fallbacks.update(graph.fallbacks)
        return outputs, grads


class GradientOutcome(Outcome):
    """``Outcome``, and whether the first failure was already the forward's (outputs differ)."""

    def __init__(self) -> None:
        super().__init__()
        self.forward_failure: str | None = None


def compare_gradients(
    op: OpInfo,
    run: Callable[[Sample, int], tuple[Any, Any]],
    *,
    rtol: float | None,
    atol: float | None,
    max_samples: int | None,
    samples: Iterable[SampleInput] | None = None,
) -> GradientOutcome:
    """Differentiate every sample (the op's, or ``samples``) natively and with ``run``, and
    compare outputs and gradients.

    A sample whose native forward or backward raises must raise through torchcx too.
    """
    outcome = GradientOutcome()
    if samples is None:
        samples = (s for s in op.sample_inputs("cpu", DTYPE, requires_grad=True) if Sample(op, s).diff)
    for i, raw in enumerate(samples):
        if max_samples is not None and i >= max_samples:
            break
        sample = Sample(op, raw)
        seed = FIRST_SEED + i
        leaves, tensors = sample.fresh_leaves(lambda t: t)
        try:
            expected, expected_grads = native(sample.function(leaves), tensors, seed)
            expected_error = None
        except Exception as e:  # noqa: BLE001  (any native error must be matched by one of ours)
            expected_error = e
        outcome.samples += 1
        where = f"sample {i}"
        try:
            actual, grads = run(sample, seed)
        except Exception as e:  # noqa: BLE001
            if expected_error is None:
                outcome.failure = f"{where}: {_describe_error(e)}"
                return outcome
            continue
        if expected_error is not None:
            outcome.failure = f"{where}: eager raised {_describe_error(expected_error)} but torchcx did not"
            return outcome
        # Note [Tolerances from error analysis]: where eager and torchcx differ, both are
        # judged against the same sample differentiated in complex128 (computed once, lazily).
        reference = functools.cache(functools.partial(reference_gradients, sample, seed))
        try:
            check_against_reference(
                functools.partial(assert_same, to_native(actual), expected, rtol, atol),
                to_native(actual),
                expected,
                functools.partial(_item, reference, 0),
                rtol,
                atol,
                conditioning_bound(op_id(op), DTYPE, (raw.input, raw.args, raw.kwargs)),
            )
        except AssertionError as e:
            outcome.forward_failure = outcome.failure = f"{where}, forward: {_first_line(e, 3)}"
            return outcome
        try:
            requires = [t.requires_grad for t in tree_flatten(actual)[0] if isinstance(t, torch.Tensor)]
            expected_requires = [t.requires_grad for t in tree_flatten(expected)[0] if isinstance(t, torch.Tensor)]
            assert requires == expected_requires, f"outputs requiring grad: {requires}, eager {expected_requires}"
            check_against_reference(
                functools.partial(assert_same, to_native(list(grads)), list(expected_grads), rtol, atol),
                to_native(list(grads)),
                list(expected_grads),
                functools.partial(_item, reference, 1),
                rtol,
                atol,
            )
        except AssertionError as e:
            outcome.failure = f"{where}, gradients: {_first_line(e, 3)}"
            return outcome
    return outcome


def _describe_error(e: BaseException) -> str:
    # Dynamo wraps a backend's error; the message worth reading is the cause's.
    while isinstance(e, torch._dynamo.exc.BackendCompilerFailed) and e.__cause__ is not None:
        e = e.__cause__
    return f"{type(e).__name__}: {_first_line(e)}"


def _first_line(e: BaseException, n: int = 1) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return " | ".join(lines[:n])[:400]


def check(
    op: OpInfo,
    suite: str,
    forward_suite: str,
    run: Callable[[Sample, int], Any],
    max_samples: int | None,
    samples: Iterable[SampleInput] | None = None,
) -> None:
    forward = lookup(forward_suite, op_id(op), DTYPE)
    if forward.skip or forward.xfail or forward.metadata_only:
        reason = forward.skip or forward.xfail or "its results are not values"
        record(f"{suite}-forward-fails", op, DTYPE, False, reason)
        pytest.skip(f"forward: {reason}")
    exp = lookup_autograd(suite, op_id(op), DTYPE)
    if exp.skip:
        record(suite, op, DTYPE, False, f"skipped: {exp.skip}")
        pytest.skip(exp.skip)
    outcome = compare_gradients(op, run, rtol=exp.rtol, atol=exp.atol, max_samples=max_samples, samples=samples)
    if samples is not None and outcome.failure is not None:
        outcome.failure += f" (compiled with its group: {ALONE_HINT})"
    passed = outcome.failure is None
    if outcome.forward_failure is not None:
        record(f"{suite}-forward-fails", op, DTYPE, False, outcome.forward_failure)
    else:
        record(suite, op, DTYPE, passed, outcome.failure or "")
    if exp.xfail:
        if passed:
            pytest.fail(f"{op_id(op)} passes now: remove it from XFAIL ({exp.xfail})")
        pytest.xfail(exp.xfail)
    assert passed, outcome.failure


@pytest.mark.parametrize("op", OPS, ids=op_id)
def test_gradients_eager(op):
    check(op, "autograd-eager", "eager", through_complex_tensor, None)


def compile_gradients_together(ops: list[OpInfo]) -> dict[str, tuple[SampleInput, Any, Any]]:
    """The first differentiable samples of ``ops`` through one torchcx-compiled function, and
    one backward: op id -> (sample, outputs, gradients), each from the op's own copy of its
    sample and cotangents (as ``Compiled`` gives them). An op whose sample raises natively
    is left out."""
    members = []
    for op in ops:
        raw = next((s for s in op.sample_inputs("cpu", DTYPE, requires_grad=True) if Sample(op, s).diff), None)
        if raw is None:
            continue
        sample = Sample(op, raw)
        leaves, tensors = sample.fresh_leaves(lambda t: t)
        try:
            native(sample.function(leaves), tensors, FIRST_SEED)
        except Exception:  # noqa: BLE001  (it must raise compiled too: compiled alone)
            continue
        members.append((sample, *sample.fresh_leaves(lambda t: t)))
    counts = [len(tensors) for _, _, tensors in members]

    def every_op(*tensors: torch.Tensor) -> tuple[Any, ...]:
        outs = []
        for (sample, leaves, _), piece in zip(members, split(tensors, counts)):
            inp, args, kwargs = sample.arguments(leaves, piece)
            outs.append(sample.op.get_op()(inp, *args, **kwargs))
        return tuple(outs)

    flat = [t for _, _, tensors in members for t in tensors]
    torch._dynamo.reset()
    with record_inductor_graphs() as recorder, _capture() as report:
        raw_outputs = torchcx.compile(every_op)(*flat)
        outputs = [sample.sample.output_process_fn_grad(out) for (sample, _, _), out in zip(members, raw_outputs)]
        outs = [differentiable(out) for out in outputs]
        cots = [c for o in outs for c in cotangents(o, FIRST_SEED)]  # (each op's, as for its sample 0)
        grads = torch.autograd.grad([o for os_ in outs for o in os_], flat, cots, allow_unused=True)
    attributable(recorder, report, backward=True, kernels=False)  # (no kernel names recorded)
    return {
        op_id(sample.op): (sample.sample, out, g)
        for (sample, _, _), out, g in zip(members, outputs, split(grads, counts))
    }


def groupable(op: OpInfo) -> bool:
    """Ops whose compiled-gradient test may share its compilation (Note [Ops compiled together]):
    those with PyTorch's default ``gradcheck_wrapper`` (the test compiles the op only, the
    wrapper running eagerly around it; grouped, there is none to run), and not skipped or
    expected to fail, forward or with gradients."""
    default_wrapper = OpInfo.__dataclass_fields__["gradcheck_wrapper"].default
    forward = lookup("compiled", op_id(op), DTYPE)
    exp = lookup_autograd("autograd-compiled", op_id(op), DTYPE)
    return (
        not FULL
        and op.gradcheck_wrapper is default_wrapper
        and not (forward.skip or forward.xfail or forward.metadata_only or exp.skip or exp.xfail)
    )


GROUPS = Groups(
    "autograd-compiled", OPS, groupable, compile_gradients_together, alone_families=(), alone_ops=frozenset()
)


@pytest.mark.parametrize("op", GROUPS.params(OPS))
def test_gradients_compiled(op):
    together = GROUPS.result(op)
    if together is not None:  # (the group's graphs were real-only and decomposed, forward and backward)
        sample, outputs, grads = together
        check(op, "autograd-compiled", "compiled", lambda *_: (outputs, grads), 1, samples=[sample])
        record("autograd-compiled-real-only", op, DTYPE, True)
        return
    runner = Compiled()
    check(op, "autograd-compiled", "compiled", runner, None if FULL else 1)
    if "forward" in runner.kinds:
        assert "backward" in runner.kinds, f"a forward graph but no backward graph was compiled: {runner.kinds}"
    record(
        "autograd-compiled-real-only",
        op,
        DTYPE,
        not runner.complex_nodes,
        f"complex in Inductor: {runner.complex_nodes[:3]}",
    )
    assert not runner.complex_nodes, f"complex values reached Inductor: {runner.complex_nodes[:5]}"
