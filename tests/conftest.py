"""Test configuration: the coverage summary of the OpInfo conformance suites."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ANN001, ANN201
    from opinfo_harness import COVERAGE, coverage_report

    if COVERAGE:
        terminalreporter.section("torchcx OpInfo coverage")
        terminalreporter.write_line(coverage_report())
