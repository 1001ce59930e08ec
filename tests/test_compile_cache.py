"""A second process loads torchcx's graphs from AOTAutograd's cache instead of lowering them
(Note [torchcx graphs in AOTAutograd's cache], backend.py), and what it loads behaves as
eager: values, the input written in place, the returned view of it, a program on
ComplexTensors, the warning of an op run as its native kernel, a training step's gradients.

Each run is a new process (``compile_cache_child.py``) on this run's Inductor cache directory;
the programs carry a salt of this test's own, so no earlier run's entries are found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

CHILD = os.path.join(os.path.dirname(__file__), "compile_cache_child.py")
#: program -> (graphs torchcx lowers, cache entries): a forward and its backward are one entry;
#: "backward_inside" is also the graph after its graph break
PROGRAMS = {
    "inplace_view": (1, 1),
    "shared_view": (1, 1),
    "gradients": (2, 1),
    "backward_inside": (3, 2),
    "small_contraction": (1, 1),
    "planar_parts": (1, 1),
    "fallback": (1, 1),
}
GRAPHS = {program: graphs for program, (graphs, _) in PROGRAMS.items()}
ENTRIES = sum(entries for _, entries in PROGRAMS.values())


def run_child(tmp_path, name: str, salt: float, **env: str) -> dict:
    out = tmp_path / f"{name}.json"
    environ = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_AUTOGRAD_CACHE"} | env
    result = subprocess.run(
        [sys.executable, CHILD, str(out), repr(salt)], capture_output=True, text=True, env=environ, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def salt() -> float:
    return 1.0 + (time.time_ns() % 10**9) / 10**10  # in [1, 1.1): the programs stay well-conditioned


def all_ok(found: dict) -> None:
    failed = {
        f"{program}.{check}" for program, checks in found["results"].items() for check, ok in checks.items() if not ok
    }
    assert not failed, found


def test_a_new_process_loads_instead_of_lowering(tmp_path, salt):
    first = run_child(tmp_path, "first", salt)
    all_ok(first)
    assert first["aot_autograd"].get("autograd_cache_saved") == ENTRIES, first["aot_autograd"]
    assert first["lowered"] == GRAPHS

    second = run_child(tmp_path, "second", salt)
    all_ok(second)  # eager's values, gradients, aliasing; the fallback's warning given again
    assert second["aot_autograd"].get("autograd_cache_hit") == ENTRIES, second["aot_autograd"]
    assert "autograd_cache_miss" not in second["aot_autograd"]
    assert second["lowered"] == dict.fromkeys(GRAPHS, 0)

    # with AOTAutograd's cache off, every graph is lowered again (and nothing is loaded)
    off = run_child(tmp_path, "off", salt, TORCHINDUCTOR_AUTOGRAD_CACHE="0")
    all_ok(off)
    assert "autograd_cache_hit" not in off["aot_autograd"]
    assert off["lowered"] == GRAPHS
