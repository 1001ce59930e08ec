"""Test configuration: the coverage summary of the OpInfo conformance suites, and their JSON results."""

from __future__ import annotations

import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


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
