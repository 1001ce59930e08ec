"""The subclass, the op tables and the compile boundary import one another in one direction only
(Note [The types do not import their ops]): tensor <- _layout <- ops <- _boundary <- backend."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from import_graph import circles, import_graph, layer  # noqa: E402

ORDER = ["tensor", "_layout", "ops", "_boundary", "backend"]


def test_no_import_circle():
    assert circles(import_graph()) == []


def test_layers_import_downwards_only():
    graph = import_graph()
    upward = [
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if layer(a) in ORDER and layer(b) in ORDER and ORDER.index(layer(b)) > ORDER.index(layer(a))
    ]
    assert upward == []


def test_the_graph_sees_deferred_imports(tmp_path):
    # an import inside a function is a dependency too: the check must see it
    pkg = tmp_path / "torchcx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    import import_graph as tool

    old = tool.SRC
    tool.SRC = tmp_path
    try:
        assert circles(tool.import_graph(pkg)) == [["torchcx.a", "torchcx.b"]]
    finally:
        tool.SRC = old
