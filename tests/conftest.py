"""Test configuration: xdist scheduling and compile threads, the coverage summary of the OpInfo conformance suites, and their JSON results."""

from __future__ import annotations

import glob
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):  # noqa: ANN001, ANN201
    """AOTAutograd's cache off in the test processes (below), and under pytest-xdist one
    compile thread per worker.

    Each worker already has a core: Inductor's parallel compilation would only add a
    process pool per worker and split a graph's kernels into more libraries, each a g++
    run of its own (Note [Kernels built together]). TORCHINDUCTOR_COMPILE_THREADS, if
    set, wins.
    """
    # Tests are independent: with AOTAutograd's cache on, a program one test compiled would be
    # loaded by the next that compiles it, and a test that changes torchcx's tables (a
    # monkeypatched registry) would run what another compiled. tests/test_compile_cache.py
    # turns it on in the processes it starts. TORCHCX_TEST_AOT_CACHE=1 leaves it as it is (to
    # run tests as users compile, backward graphs lowered with the forward; expect failures
    # of tests that count lowerings or monkeypatch torchcx once another test saved the program).
    import torch._functorch.config

    if os.environ.get("TORCHCX_TEST_AOT_CACHE") != "1":
        torch._functorch.config.enable_autograd_cache = False
    if os.environ.get("PYTEST_XDIST_WORKER") and "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        inductor_config = sys.modules.get("torch._inductor.config")
        if inductor_config is not None:
            inductor_config.compile_threads = 1


#: Modules whose tests all go to one xdist worker: a module-scoped fixture that costs minutes
#: runs once per worker that gets one of the module's tests. test_distributed.py's spawns two
#: processes that train every scenario: 67 s and 120 s of setup in the two workers of one run
#: (2026-12-04, slow host), where one worker needs it once.
ONE_WORKER_MODULES = ("tests/test_distributed.py",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):  # noqa: ANN001, ANN201
    """``-n N``'s load scheduling, but a group's tests (``<id>@<group>``: the OpInfo ops
    compiled together, Note [Ops compiled together] in together.py, and the numerics
    families) all go to one worker, which compiles the group once; and so do the tests of
    each of ``ONE_WORKER_MODULES``."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    from together import GROUP_IN_ID

    class SharedCompilations(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if module in ONE_WORKER_MODULES:
                return module
            group = GROUP_IN_ID.search(nodeid)
            return group.group(1) if group else nodeid

    return SharedCompilations(config, log)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ANN001, ANN201
    from opinfo_harness import COVERAGE, coverage_report

    if COVERAGE:
        terminalreporter.section("torchcx OpInfo coverage")
        terminalreporter.write_line(coverage_report())


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001, ANN201
    """With TORCHCX_CONFORMANCE_JSON=path, write the OpInfo results to ``path``.

    Under pytest-xdist each worker writes its own part (``path.gw0`` ...) and
    the controller, which finishes last, merges them into ``path``. Results
    already in ``path`` for other suites, ops or dtypes are kept.
    """
    path = os.environ.get("TORCHCX_CONFORMANCE_JSON")  # opinfo_harness.CONFORMANCE_JSON_ENV
    if not path:
        return  # (and no import of the OpInfo harness, which needs torch's test-only dependencies)
    from opinfo_harness import RESULTS, write_results

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is not None:
        if RESULTS:
            write_results(f"{path}.{worker}")
        return
    for part in sorted(glob.glob(f"{glob.escape(path)}.gw*")):
        with open(part) as f:
            RESULTS.extend(json.load(f)["results"])
        os.remove(part)
    if RESULTS:
        write_results(path, merge=True)
