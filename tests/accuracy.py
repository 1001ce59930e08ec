"""Judging a result that differs from eager's: against a complex128 reference, not a wider tolerance.

Note [Tolerances from error analysis]
-------------------------------------
torchcx and eager PyTorch evaluate the same function in float32 with different
roundings (another summation order, four real GEMMs instead of one complex
one, a decomposed formula instead of a C++ kernel). How far apart the two land
depends on the CPU (AMX against AVX-512 GEMMs, vectorized math libraries) and
on the conditioning of the sample, so a tolerance read off one machine's
difference is not a property of either. What is one is each result's distance
from the exact value, which a complex128 evaluation of the same inputs gives
to about 1e-16.

So a result is first compared with eager's under the tolerance in force
(torch.testing's, or one listed with its source in expectations.py). When that
fails, both are judged against the reference ``r`` computed in double
precision from the very same inputs, and torchcx's result ``a`` passes when,
elementwise,

    |a - r| <= 2 * max|e - r| + atol + rtol * |r|       (e: eager's result)

that is: within the usual tolerance of the *exact* value, once twice eager's
own largest error on this sample is allowed. Eager's error measures how
ill-conditioned the sample is, on the machine the test runs on; the factor 2
allows two float32 evaluations of the same conditioning to round in different
directions (each is bounded by it, so they differ by at most twice it), and
nothing more: an algorithm less accurate than eager's fails. Non-finite values
must sit where eager's do.

Where the conditioning is known in closed form, expectations.CONDITIONING gives
it and the bound comes from it instead, independent of eager's kernel: for
``z ** w = exp(w log z)``, an error of u in the exponent's parts is an error of
``u |w| (1 + |log z|)`` relative in the result, so

    |a - r| <= 8 u (1 + |w| (1 + |log z|)) |r| + atol

with u the unit roundoff of the parts and 8 the roundings on the way (log's
two parts, the complex product's, exp and the final product).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

#: Unit roundoff of each complex dtype's parts.
UNIT_ROUNDOFF = {
    torch.complex64: 2.0**-24,
    torch.complex128: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float64: 2.0**-53,
}

_WIDER = {torch.complex64: torch.complex128, torch.float32: torch.float64}


def widened(x: Any) -> Any:
    """Copies of the float32/complex64 tensors in ``x`` in float64/complex128 (the same values)."""

    def widen(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype in _WIDER:
            return t.detach().to(_WIDER[t.dtype])
        return t

    return tree_map(widen, x)


def can_widen(x: Any) -> bool:
    """Whether ``x`` holds a float32/complex64 tensor (a complex128 sample has no wider reference)."""
    return any(isinstance(t, torch.Tensor) and t.dtype in _WIDER for t in tree_flatten(x)[0])


def _default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    from opinfo_harness import default_tolerance

    return default_tolerance(dtype)


def assert_as_accurate(
    actual: Any,
    expected: Any,
    reference: Any,
    rtol: float | None,
    atol: float | None,
    scale: Any = None,
) -> None:
    """Every tensor of ``actual`` is as close to ``reference`` as Note [Tolerances from error analysis] asks.

    ``scale``, when given (tensors shaped as the outputs), replaces eager's error by the
    closed-form bound ``scale * |r|`` of expectations.CONDITIONING.
    """
    a_leaves, e_leaves, r_leaves = (tree_flatten(x)[0] for x in (actual, expected, reference))
    s_leaves = tree_flatten(scale)[0] if scale is not None else [None] * len(a_leaves)
    if not (len(a_leaves) == len(e_leaves) == len(r_leaves) == len(s_leaves)):
        raise AssertionError(f"structure differs: {len(a_leaves)} results, {len(e_leaves)} eager, {len(r_leaves)} ref")
    for k, (a, e, r, s) in enumerate(zip(a_leaves, e_leaves, r_leaves, s_leaves)):
        if not isinstance(e, torch.Tensor) or not (e.is_floating_point() or e.is_complex()):
            # only values are judged against the reference: anything else must equal eager's
            from opinfo_harness import assert_same

            assert_same([a], [e], 0.0, 0.0)
            continue
        if not isinstance(a, torch.Tensor) or a.dtype != e.dtype or a.shape != e.shape:
            raise AssertionError(f"output {k}: metadata differs from eager's")
        default_rtol, default_atol = _default_tolerance(e.dtype)
        rt = default_rtol if rtol is None else rtol
        at = default_atol if atol is None else atol
        a, e, r = (t.detach().to(torch.complex128 if t.is_complex() else torch.float64) for t in (a, e, r))
        finite = torch.isfinite(e)
        if not torch.equal(finite, torch.isfinite(a)) or not torch.equal(
            torch.nan_to_num(a[~finite], nan=0.0), torch.nan_to_num(e[~finite], nan=0.0)
        ):
            raise AssertionError(f"output {k}: non-finite values differ from eager's")
        a, e, r = a[finite], e[finite], r[finite]
        if a.numel() == 0:
            continue
        error = (a - r).abs()
        if s is not None:
            allowed = s.to(torch.float64).broadcast_to(finite.shape)[finite] * r.abs() + at
            allowed = torch.where(allowed.isnan(), at, allowed)  # 0 * inf where the result is 0
            what = "the closed-form conditioning bound"
        else:
            eager_error = (e - r).abs().max()
            allowed = 2 * eager_error + at + rt * r.abs()
            what = f"2 x eager's error ({eager_error.item():.3g}) + atol {at:g} + rtol {rt:g} x |exact|"
        bad = error > allowed
        if bad.any():
            i = int((error - allowed).argmax())
            raise AssertionError(
                f"output {k}: {int(bad.sum())} / {error.numel()} elements further from the complex128 result "
                f"than {what}: error {error[i].item():.3g}, allowed {allowed[i].item():.3g} "
                f"(eager's error there {(e[i] - r[i]).abs().item():.3g}, |exact| {r[i].abs().item():.3g})"
            )


def check_against_reference(
    compare: Callable[[], None],
    actual: Any,
    expected: Any,
    reference: Callable[[], Any],
    rtol: float | None,
    atol: float | None,
    scale: Callable[[Any], Any] | None = None,
) -> None:
    """``compare()`` (actual against eager); where it fails, Note [Tolerances from error analysis].

    ``reference()`` computes the double-precision result; if it cannot (an op without a
    complex128 kernel), the first failure stands. ``scale(ref)`` gives the closed-form bound.
    """
    try:
        compare()
        return
    except AssertionError as first:
        try:
            ref = reference()
        except Exception:  # noqa: BLE001  (no reference: the comparison with eager is all there is)
            raise first from None
        try:
            assert_as_accurate(actual, expected, ref, rtol, atol, None if scale is None else scale(ref))
        except AssertionError as second:
            raise AssertionError(f"{first} | against complex128: {second}") from None
