"""The judge of Note [Tolerances from error analysis] (tests/accuracy.py) rejects what it must."""

from __future__ import annotations

import pytest
import torch

from accuracy import UNIT_ROUNDOFF, assert_as_accurate, check_against_reference
from expectations import CONDITIONING


def _sample() -> tuple[torch.Tensor, torch.Tensor]:
    exact = torch.randn(64, dtype=torch.complex128, generator=torch.Generator().manual_seed(0)) * 1e3
    eager = exact + 1e-3 * torch.randn(64, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    return exact, eager.to(torch.complex64)


def test_as_accurate_as_eager_passes() -> None:
    exact, eager = _sample()
    assert_as_accurate(exact.to(torch.complex64), eager, exact, None, None)
    assert_as_accurate(eager.conj().conj(), eager, exact, None, None)


def test_less_accurate_than_eager_fails() -> None:
    exact, eager = _sample()
    eager_error = (eager.to(torch.complex128) - exact).abs().max()
    worse = (exact + 3 * eager_error + 1e-5 + 1.3e-6 * exact.abs()).to(torch.complex64)
    with pytest.raises(AssertionError, match="further from the complex128 result"):
        assert_as_accurate(worse, eager, exact, None, None)


@pytest.mark.parametrize("bad", ["nan", "dtype", "shape"])
def test_non_values_must_match_eager(bad: str) -> None:
    exact, eager = _sample()
    actual = eager.clone()
    if bad == "nan":
        actual[3] = complex("nan")
    elif bad == "dtype":
        actual = actual.to(torch.complex128)
    else:
        actual = actual[1:]
    with pytest.raises(AssertionError):
        assert_as_accurate(actual, eager, exact, None, None)


def test_no_reference_keeps_the_first_failure() -> None:
    def compare() -> None:
        raise AssertionError("differs from eager")

    def reference() -> None:
        raise ValueError("no complex128 kernel")

    with pytest.raises(AssertionError, match="differs from eager"):
        check_against_reference(compare, None, None, reference, None, None)


def test_pow_conditioning_bound() -> None:
    # z ** w with |w log z| ~ 17: the closed-form bound admits a result off by a few u |w log z|
    # relative and rejects one off by 100 times that, whatever eager's error.
    z = torch.tensor([7.0577 + 1.3725j], dtype=torch.complex128)
    w = torch.tensor(5.8045 + 6.5018j, dtype=torch.complex128)
    exact = z**w
    kappa = CONDITIONING["pow"][0](z, (w,), {})
    scale = 8 * UNIT_ROUNDOFF[torch.complex64] * kappa
    close = exact * (1 + 2 * UNIT_ROUNDOFF[torch.complex64] * kappa)
    far = exact * (1 + 100 * 8 * UNIT_ROUNDOFF[torch.complex64] * kappa)
    eager = exact.to(torch.complex64)
    assert_as_accurate(close.to(torch.complex64), eager, exact, None, None, scale)
    with pytest.raises(AssertionError, match="conditioning bound"):
        assert_as_accurate(far.to(torch.complex64), eager, exact, None, None, scale)
