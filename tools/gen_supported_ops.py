"""Generate docs/supported-ops.md from torchcx's op tables and the OpInfo conformance results.

    TORCHCX_CONFORMANCE_JSON=docs/conformance.json python -m pytest tests/test_opinfo_eager.py tests/test_opinfo_compile.py -n 2
    python tools/gen_supported_ops.py            # writes docs/supported-ops.md
    python tools/gen_supported_ops.py --check    # exits 1 if the page is out of date

The first command runs the conformance suites and records every per-op
result in docs/conformance.json (see tests/opinfo_harness.py); the second
reads the op tables (``torchcx.ops.registered_ops()``) and that file. Nothing
on the page is written by hand.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch._ops import OpOverload, OpOverloadPacket

import torchcx
from torchcx.ops import _common, extern
from torchcx.ops._registry import EXTERN_OPS, registered_ops, resolve

ROOT = Path(__file__).resolve().parent.parent
OPS_DIR = ROOT / "src" / "torchcx" / "ops"
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


def _code_of(fn: Callable[..., Any]) -> Any:
    return getattr(fn, "__code__", None)


# Implementations made by a factory share its inner function's code object.
_PARTWISE_CODE = _code_of(_common.make_partwise(aten.flip.default))
_EXTERN_CODE = _code_of(extern._make_extern(aten.linalg_eig.default))


_OP_NAME = re.compile(r"^(?:torch\.ops\.)?(aten|prims)\.(\w+)")


def _registrations_in_sources() -> dict[str, str]:
    """Op name ("aten.flip") -> family module, for ops registered through partwise(...)/register_extern(...) calls.

    Those implementations are made in _common/extern, so their ``__module__``
    does not tell which family registered them: read it from the call sites.
    """
    found: dict[str, str] = {}
    for path in sorted(OPS_DIR.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        tree = ast.parse(path.read_text())
        constants = {
            t.id: node.value
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name) and node.value is not None
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("partwise", "register_extern"):
                continue
            for arg in node.args:
                value = (
                    constants.get(arg.value.id)
                    if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name)
                    else arg
                )
                for sub in ast.walk(value) if value is not None else ():
                    # aten.flip, aten.flip.default, torch.ops.prims.rev
                    match = isinstance(sub, ast.Attribute) and _OP_NAME.match(ast.unparse(sub))
                    if match:
                        found.setdefault(f"{match[1]}.{match[2]}", path.stem)
    return found


def _packet_name(key: OpOverload | OpOverloadPacket) -> str:
    """ "aten.flip" for aten.flip and aten.flip.default."""
    return str(key.overloadpacket if isinstance(key, OpOverload) else key)


def _derived_variants(key: OpOverload | OpOverloadPacket, table: dict[Any, Any]) -> list[str]:
    """In-place and out= overloads not in the table that resolve() derives from this entry."""
    packet = key.overloadpacket if isinstance(key, OpOverload) else key
    name = packet.__name__
    candidates: list[OpOverload] = []
    inplace = getattr(aten, name + "_", None) if not name.endswith("_") else None
    for p in (packet, inplace):
        if p is None:
            continue
        candidates += [getattr(p, o) for o in p.overloads()]
    derived = []
    for overload in candidates:
        if overload in table or overload is key:
            continue
        if isinstance(key, OpOverload):
            # only the variants of this very overload (mul_.Tensor, mul.out for mul.Tensor)
            from torchcx.ops._registry import _functional_overload

            if _functional_overload(overload) is not key:
                continue
        impl = resolve(overload)
        code = _code_of(impl)
        if code is not None and code.co_name in ("inplace", "out_variant") and impl.__module__.endswith("_registry"):
            derived.append(str(overload).removeprefix("aten."))
    return sorted(derived)


def op_rows() -> list[Row]:
    table = registered_ops()
    by_source = _registrations_in_sources()
    rows = []
    for key, impl in table.items():
        packet = _packet_name(key)
        code = _code_of(impl)
        if code is _PARTWISE_CODE:
            kind, family = "partwise", by_source.get(packet, "?")
        elif code is _EXTERN_CODE:
            kind, family = "extern", by_source.get(packet, "?")
        else:
            formula = getattr(impl, "__wrapped__", None)
            fn = formula if formula is not None else impl
            family = fn.__module__.rsplit(".", 1)[-1]
            if formula is not None:
                kind = "formula"
            elif getattr(code, "co_qualname", "").startswith("_refuse_complex"):
                kind = "refused"
            elif (key.overloadpacket if isinstance(key, OpOverload) else key) in EXTERN_OPS:
                kind = "implementation + extern"
            else:
                kind = "implementation"
        rows.append(
            Row(
                op=str(key),
                packet=packet,
                family=family,
                implementation=getattr(impl, "__name__", repr(impl)),
                kind=kind,
                derived=_derived_variants(key, table),
            )
        )
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
