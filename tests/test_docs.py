"""The Python examples in README.md, docs/*.md and torchcx's docstrings run, so the docs cannot rot.

Each file's ```python blocks run in order in one namespace (a later block may
use what an earlier one made), with torchcx's config restored after the file;
blocks written as an interactive session (``>>>``) run as doctests, so their
printed output is checked too. A block that is an excerpt rather than a program
(``adding-an-op.md`` shows registrations as they appear inside ``torchcx.ops``)
is fenced ```python fragment and skipped. A block that needs an optional
package is fenced ```python requires=PACKAGE and skipped (with the rest of its
file) when that package is not installed. Output blocks are ```text.
Docstring examples (``>>>``) run as doctests of their module.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import torchcx

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SRC = Path(torchcx.__file__).resolve().parent
#: torchcx's modules with docstring examples.
MODULES = sorted(
    ".".join(("torchcx", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")
    for path in SRC.rglob("*.py")
    if ">>>" in path.read_text()
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: A fenced block: info string (language and words after it), then the code.
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line, code) of each runnable Python block of ``path``."""
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        info = match.group(1).split()
        if info[:1] == ["python"] and "fragment" not in info[1:]:
            blocks.append((text.count("\n", 0, match.start(2)) + 1, match.group(2)))
    return blocks


def required_packages(path: Path) -> list[str]:
    """The packages named by ``requires=`` on ``path``'s Python blocks."""
    return [
        word.removeprefix("requires=")
        for match in FENCE.finditer(path.read_text())
        for word in match.group(1).split()[1:]
        if word.startswith("requires=")
    ]


def _run_doctest(code: str, namespace: dict[str, Any], name: str, line: int) -> None:
    test = doctest.DocTestParser().get_doctest(code, namespace, name, name, line)
    output: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(test, out=output.append, clear_globs=False)
    assert result.failed == 0, "".join(output)


@pytest.mark.parametrize("path", [p for p in FILES if python_blocks(p)], ids=lambda p: p.name)
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for package in required_packages(path):
        pytest.importorskip(package)
    monkeypatch.chdir(tmp_path)  # an example may write files
    config = torchcx.config
    settings = {name: getattr(config, name) for name in config._DEFAULTS}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with config.patch(**settings):  # restores whatever an example sets
        for line, code in python_blocks(path):
            name = f"{path.name}:{line}"
            if code.lstrip().startswith(">>>"):
                _run_doctest(code, namespace, name, line)
            else:
                exec(compile(code, name, "exec"), namespace)


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=FLAGS)
    output: list[str] = []
    tests = finder.find(importlib.import_module(module))
    for test in tests:
        runner.run(test, out=output.append)
    assert sum(len(t.examples) for t in tests) > 0, f"{module}: no examples found"
    assert runner.failures == 0, "".join(output)
