"""OpInfo conformance, eager: every complex-supporting op on ComplexTensor inputs.

Each sample of PyTorch's OpInfo database runs natively and on ComplexTensor
inputs (with every complex op routed through torchcx's tables) and the results
are compared with torch.testing's tolerances, or wider ones listed with a
reason in expectations.py. The run prints a coverage summary per op family.
"""

from __future__ import annotations

import pytest

from expectations import lookup
from opinfo_harness import COMPLEX_DTYPES, complex_ops, op_id, record, run_eager, run_samples

OPS = complex_ops()


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("op", OPS, ids=op_id)
def test_opinfo_eager(op, dtype):
    if dtype not in op.supported_dtypes("cpu"):
        pytest.skip(f"{op_id(op)} does not support {dtype} on CPU")
    exp = lookup("eager", op_id(op), dtype)
    if exp.skip:
        record("eager", op, dtype, False, f"skipped: {exp.skip}")
        pytest.skip(exp.skip)
    outcome = run_samples(op, dtype, run_eager, rtol=exp.rtol, atol=exp.atol, metadata_only=exp.metadata_only)
    passed = outcome.failure is None
    record("eager", op, dtype, passed, outcome.failure or "")
    if exp.xfail:
        if passed:
            pytest.fail(f"{op_id(op)} passes now: remove it from XFAIL ({exp.xfail})")
        pytest.xfail(exp.xfail)
    assert passed, outcome.failure
