"""The op table's entries: what each records, how an overload resolves, and the page made from them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

import torchcx
from torchcx.ops import OpEntry, entry_for, register, resolve, table
from torchcx.ops._registry import EXTERN_OPS, TABLE_KINDS

aten = torch.ops.aten
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("op", "kind", "family"),
    [
        (aten.exp.default, "formula", "pointwise"),  # @unary
        (aten.eq.Tensor, "formula", "comparison"),  # @binary(to_real=True)
        (aten.flip.default, "partwise", "indexing"),  # partwise(...) in indexing.py
        (aten.trace.default, "partwise", "linalg"),
        (aten.sum.dim_IntList, "implementation", "reductions"),  # @register
        (aten.linalg_eig.default, "extern", "linalg"),  # register_extern(...) in linalg.py
        (aten.xlogy.Tensor, "refused", "pointwise"),
        (aten.exp_.default, "inplace_variant", "pointwise"),
        (aten.exp.out, "out_variant", "pointwise"),
        (aten.matmul.default, "decomposition", None),
    ],
)
def test_entry_records_kind_and_family(op: torch._ops.OpOverload, kind: str, family: str | None) -> None:
    entry = entry_for(op)
    assert (entry.kind, entry.family) == (kind, family)
    assert resolve(op) is entry.impl
    assert entry.in_table == (kind in TABLE_KINDS)


def test_variant_names_its_base() -> None:
    base = entry_for(aten.mul.Tensor)
    for variant in (aten.mul_.Tensor, aten.mul.out):
        assert entry_for(variant).base is base


def test_missing_op_is_an_entry_that_raises() -> None:
    # No table entry, no variant, no PyTorch decomposition: the entry says so and its
    # implementation raises, naming the op (Note [How an op is resolved], step 4).
    entry = entry_for(aten.nextafter.default)
    assert (entry.kind, entry.family, entry.base) == ("missing", None, None)
    with pytest.raises(NotImplementedError, match=r"no complex decomposition for aten\.nextafter\.default"):
        entry.impl(torchcx.ComplexTensor(torch.ones(2), torch.ones(2)), torch.ones(2))


def test_extern_ops_are_the_extern_entries() -> None:
    # torchcx.export refuses these in a real-only graph: exactly the "extern" entries' ops.
    externs = {e.op.overloadpacket for e in table().values() if e.kind == "extern"}
    assert externs == EXTERN_OPS
    assert all(e.calls_extern for e in table().values() if e.kind == "extern")


def test_every_entry_is_typed() -> None:
    for key, entry in table().items():
        assert isinstance(entry, OpEntry) and entry.op is key
        assert entry.kind in TABLE_KINDS and entry.family and not entry.family.startswith("_")


def test_registering_twice_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        register(aten.exp)(lambda x: x)


def test_supported_ops_page_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/supported-ops.md is generated from the entries (and docs/conformance.json).
    spec = importlib.util.spec_from_file_location("gen_supported_ops", ROOT / "tools" / "gen_supported_ops.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, tool)  # (its dataclass looks its module up)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0, "run python tools/gen_supported_ops.py"


def test_explain_names_each_ops_entry():
    # explain reads the registry: each lowered op with its entry's family and kind
    def fn(x, w):
        return (torch.fft.fft(x) * w).abs(), torch.linalg.eigvals(w)

    x, w = (torch.randn(4, 4, dtype=torch.complex64) for _ in range(2))
    report = torchcx.explain(fn, x, w)
    (graph,) = report.graphs
    assert graph.how["aten.abs.default"] == "pointwise: formula on the parts"
    assert graph.how["aten.linalg_eig.default"] == "linalg: extern kernel"
    assert graph.how["aten._fft_c2c.default"].endswith("may call an extern kernel")
    assert "(pointwise: formula on the parts)" in str(report)
