"""The import graph of torchcx's modules, and its circles.

Every import counts, the ones inside functions too (a deferred import is still a
dependency, only a hidden one). An edge goes to the module named, not to the packages
above it. ``python tools/import_graph.py`` prints the edges between the layers the
compile side is built from and every circle (strongly connected set of modules);
tests/test_import_graph.py asserts there is none between the subclass, the op tables
and the compile boundary.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path = SRC / "torchcx") -> dict[str, set[str]]:
    """module -> the torchcx modules it imports (anywhere in its body)."""
    files = {module_name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: Iterable[str] = ()
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from pkg import mod`` imports the submodule; ``from mod import name`` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    """The layer a module belongs to: ``torchcx.ops.linalg`` -> ``ops``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "torchcx"


def main() -> None:
    graph = import_graph()
    layers = ("tensor", "_lowering", "_layout", "ops", "_boundary", "backend", "export", "explain")
    print("edges between layers (importer -> imported):")
    edges = sorted({(layer(a), layer(b)) for a, bs in graph.items() for b in bs if layer(a) != layer(b)})
    for a, b in edges:
        if a in layers and b in layers:
            print(f"  {a} -> {b}")
    found = circles(graph)
    print(f"circles: {len(found)}")
    for component in found:
        print("  " + ", ".join(component))


if __name__ == "__main__":
    main()
