"""Smoke test of the runnable applications in examples/: each runs at its ``--small`` size.

Every example checks its own mathematics or physics (against analytic
solutions, the phantom, the FFT, ...) and exits non-zero when a check fails;
here it runs in-process (one import of torch for all), and the graphs it
compiles must be real-only with no eager fallback. No timing is asserted.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from torchcx.explain import _capture

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ["rope_attention", "fno_darcy", "nls_soliton", "mri_sense", "quantum_qft", "complex_net"]
#: Examples not run here, with the reason: distributed_fno launches two processes with
#: torchrun (about a minute at --small on two cores); tests/test_distributed.py tests the
#: same engines and checks.
NOT_RUN_HERE = {"distributed_fno": "two processes under torchrun; see tests/test_distributed.py"}
#: Figures an example writes to ``--out`` (when matplotlib is installed).
FIGURES = {"nls_soliton": ["nls_soliton.png"], "mri_sense": ["mri_sense.png"]}


def load(name: str) -> ModuleType:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # for the examples' shared _util
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_example_is_listed() -> None:
    assert sorted([*NAMES, *NOT_RUN_HERE]) == sorted(p.stem for p in EXAMPLES.glob("[!_]*.py"))


@pytest.mark.parametrize("name", NAMES)
def test_example(name: str, tmp_path: Path) -> None:
    torch._dynamo.reset()
    with _capture() as report:
        figures = load(name).main(["--small", "--out", str(tmp_path)])  # raises SystemExit if a check fails
    assert figures, "an example returns its figures"
    assert report.graphs, "the example compiles something with torchcx"
    for graph in report.graphs:
        assert graph.real_only, f"{graph.kind} graph holds complex values: {graph.complex_nodes_after[:5]}"
        assert not graph.fallbacks, f"eager fallbacks: {graph.fallbacks}"
    if importlib.util.find_spec("matplotlib") is not None:
        for figure in FIGURES.get(name, []):
            assert (tmp_path / figure).stat().st_size > 0
