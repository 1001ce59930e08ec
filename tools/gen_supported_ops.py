"""Generate docs/supported-ops.md from torchcx's op tables and the OpInfo conformance results.

    TORCHCX_CONFORMANCE_JSON=docs/conformance.json python -m pytest tests/test_opinfo_eager.py tests/test_opinfo_compile.py -n 2
    python tools/gen_supported_ops.py            # writes docs/supported-ops.md
    python tools/gen_supported_ops.py --check    # exits 1 if the page is out of date

The first command runs the conformance suites and records every per-op
result in docs/conformance.json (see tests/opinfo_harness.py); the second
reads the op tables (``torchcx.ops.table()``: each entry records its kind and
family; ``derived_variant`` says which in-place and out= overloads copy its result)
and that file. Nothing on the page is written by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch._ops import OpOverload, OpOverloadPacket

import torchcx
from torchcx.ops import OpEntry, entry_for, table
from torchcx.ops._registry import derived_variant

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "docs" / "conformance.json"
DEFAULT_PAGE = ROOT / "docs" / "supported-ops.md"
aten = torch.ops.aten

COMMAND = (
    "TORCHCX_CONFORMANCE_JSON=docs/conformance.json python -m pytest "
    "tests/test_opinfo_eager.py tests/test_opinfo_compile.py -n 2\n"
    "python tools/gen_supported_ops.py"
)

KINDS = {
    "formula": "a formula on the real and imaginary parts (the `unary`/`binary` decorators: elementwise)",
    "partwise": "f(re + i im) = f(re) + i f(im): the op applied to each part (views, movement, indexing, fills)",
    "extern": "PyTorch's native complex kernel on the interleaved data (LAPACK, ...), listed by torchcx.explain",
    "implementation": "a decomposition into real ops written for the op",
    "implementation + extern": "a decomposition that may call an extern kernel (chosen by size, dtype, device, config)",
    "refused": "eager PyTorch has no complex kernel for it: torchcx raises eager's error rather than compute one",
}


# -- the op tables ------------------------------------------------------------------------------


@dataclass
class Row:
    op: str  # aten.exp, aten.add.Tensor
    packet: str  # aten.exp
    family: str  # pointwise
    implementation: str  # exp_impl
    kind: str
    derived: list[str]


def _kind_label(entry: OpEntry) -> str:
    """The entry's kind as the page names it (a key of ``KINDS``)."""
    if entry.kind == "implementation" and entry.calls_extern:
        return "implementation + extern"
    return entry.kind


def _packet_name(key: OpOverload | OpOverloadPacket) -> str:
    """ "aten.flip" for aten.flip and aten.flip.default."""
    return str(key.overloadpacket if isinstance(key, OpOverload) else key)


def _derived_variants(key: OpOverload | OpOverloadPacket, entries: dict[Any, OpEntry]) -> list[str]:
    """The in-place and out= overloads of the entry's op that resolve to a copy of its result."""
    packet = key.overloadpacket if isinstance(key, OpOverload) else key
    name = packet.__name__
    inplace = getattr(aten, name + "_", None) if not name.endswith("_") else None
    derived = []
    for p in (packet, inplace):
        for overload in (getattr(p, o) for o in p.overloads()) if p is not None else ():
            if overload in entries or derived_variant(overload) is None:
                continue  # (entry_for would try PyTorch's decompositions: some overloads have no kernel)
            entry = entry_for(overload)  # (a packet's entry, if there is one, comes first)
            if entry.base is not None and entry.base.op is key:
                derived.append(str(overload).removeprefix("aten."))
    return sorted(derived)


def op_rows() -> list[Row]:
    entries = table()
    rows = [
        Row(
            op=str(key),
            packet=_packet_name(key),
            family=entry.family or "?",
            implementation=getattr(entry.impl, "__name__", repr(entry.impl)),
            kind=_kind_label(entry),
            derived=_derived_variants(key, entries),
        )
        for key, entry in entries.items()
    ]
    return sorted(rows, key=lambda r: (r.family, r.op))


# -- the conformance results --------------------------------------------------------------------

SUITES = (
    ("eager", "complex64", "eager c64"),
    ("eager", "complex128", "eager c128"),
    ("compiled", "complex64", "compiled c64"),
    ("compiled-real-only", "complex64", "real-only"),
    ("compiled-decomposed", "complex64", "no fallback"),
)


def load_results(path: Path) -> tuple[str, dict[str, dict[tuple[str, str], dict[str, Any]]]]:
    """(torch version, OpInfo id -> (suite, dtype) -> result)."""
    data = json.loads(path.read_text())
    by_op: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for r in data["results"]:
        by_op[r["op"]][(r["suite"], r["dtype"])] = r
    return data.get("torch", "?"), by_op


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return ""
    return {"pass": "pass", "fail": "**FAIL**", "xfail": "xfail", "skip": "skip"}[result["status"]]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- the page -----------------------------------------------------------------------------------


def render(rows: list[Row], torch_version: str, results: dict[str, dict[tuple[str, str], dict[str, Any]]]) -> str:
    out: list[str] = []
    w = out.append
    w("# Supported ops")
    w("")
    w("<!-- GENERATED by tools/gen_supported_ops.py: do not edit by hand. -->")
    w("")
    w("This page is generated from torchcx's op tables and the OpInfo conformance results")
    w(f"(`docs/conformance.json`, PyTorch {torch_version}). To regenerate it:")
    w("")
    w("```bash")
    w(COMMAND)
    w("```")
    w("")
    kinds = Counter(r.kind for r in rows)
    derived = sum(len(r.derived) for r in rows)
    w("## Summary")
    w("")
    w(
        f"The op tables hold **{len(rows)} entries** (an entry is one aten overload, or every overload of an op), "
        f"and torchcx derives **{derived} in-place and `out=` variants** from them."
    )
    w("")
    w("| kind | entries | meaning |")
    w("| --- | ---: | --- |")
    for kind, meaning in KINDS.items():
        w(f"| {kind} | {kinds.get(kind, 0)} | {meaning} |")
    w("")
    w(
        "An aten op that is not in the tables is not necessarily unsupported: torchcx then uses PyTorch's own "
        "decomposition of it into simpler ops (Note [How an op is resolved] in `src/torchcx/ops/_registry.py`). "
        "What users call is measured by the OpInfo conformance suites below: every `torch` function whose OpInfo "
        "supports complex dtypes on CPU, run on PyTorch's sample inputs and compared with eager PyTorch."
    )
    w("")
    if results:
        w("| suite | what it checks | pass | xfail | skip | fail | total |")
        w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        meaning = {
            "eager c64": "ComplexTensor in eager mode, complex64, every sample",
            "eager c128": "ComplexTensor in eager mode, complex128, every sample",
            "compiled c64": "`torchcx.compile`, complex64, first sample (all with TORCHCX_OPINFO_FULL=1)",
            "real-only": "the graphs Inductor lowered held no complex value (of ops that pass)",
            "no fallback": "no op ran as an eager fallback (of ops that pass)",
        }
        for suite, dtype, label in SUITES:
            statuses = Counter(r[(suite, dtype)]["status"] for r in results.values() if (suite, dtype) in r)
            total = sum(statuses.values())
            if total:
                w(
                    f"| {label} | {meaning[label]} | {statuses['pass']} | {statuses['xfail']} | {statuses['skip']} | "
                    f"{statuses['fail']} | {total} |"
                )
        w("")
        w(
            "*xfail* and *skip* are listed with their reason in `tests/expectations.py`; "
            "*FAIL* is a failure nobody has explained yet."
        )
        w("")

    w("## Op tables")
    w("")
    w(
        "One section per family module in `src/torchcx/ops/`. *Derived* lists the in-place and `out=` overloads "
        "computed by running the entry and copying its result (step 2 of Note [How an op is resolved])."
    )
    for family in sorted({r.family for r in rows}):
        family_rows = [r for r in rows if r.family == family]
        w("")
        w(f"### `{family}.py` ({len(family_rows)} entries)")
        w("")
        w("| aten op | implementation | kind | derived in-place / out= |")
        w("| --- | --- | --- | --- |")
        for r in family_rows:
            derived_text = ", ".join(f"`{d}`" for d in r.derived)
            w(f"| `{r.op}` | `{r.implementation}` | {r.kind} | {derived_text} |")

    if results:
        w("")
        w("## OpInfo conformance, per op")
        w("")
        w(
            "Each row is one OpInfo (a `torch` function, or a variant of one). Empty: the suite does not run that "
            "op at that dtype (e.g. an op without complex128 support on CPU)."
        )
        w("")
        labels = [label for _, _, label in SUITES]
        w("| OpInfo | family | " + " | ".join(labels) + " |")
        w("| --- | --- | " + " | ".join("---" for _ in labels) + " |")
        for op_id in sorted(results):
            by_suite = results[op_id]
            fam = next(iter(by_suite.values()))["family"]
            cells = [_cell(by_suite.get((suite, dtype))) for suite, dtype, _ in SUITES]
            w(f"| `{op_id}` | {fam} | " + " | ".join(cells) + " |")
        notes = [
            (op_id, label, r)
            for op_id in sorted(results)
            for suite, dtype, label in SUITES
            if (r := results[op_id].get((suite, dtype))) is not None and r["status"] != "pass"
        ]
        w("")
        w("### Why an op does not pass")
        w("")
        if not notes:
            w("Every op passes every suite.")
        else:
            w("| OpInfo | suite | status | detail |")
            w("| --- | --- | --- | --- |")
            for op_id, label, r in notes:
                w(f"| `{op_id}` | {label} | {r['status']} | {_escape(r['detail'])[:300]} |")
    w("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=DEFAULT_JSON, help="the conformance JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_PAGE)
    parser.add_argument("--check", action="store_true", help="fail if the page on disk is not what would be written")
    args = parser.parse_args(argv)
    torch_version, results = load_results(args.results) if args.results.exists() else (torch.__version__, {})
    if not results:
        print(f"note: no conformance results at {args.results}; the page lists the op tables only", file=sys.stderr)
    page = render(op_rows(), torch_version, results)
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != page:
            print(f"{args.out} is out of date: run python tools/gen_supported_ops.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(page)
    print(f"wrote {args.out} ({len(page.splitlines())} lines, torchcx {torchcx.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
