"""Hooks for the core's tests: the fuzz run's figures in the terminal summary."""

from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    fuzz = sys.modules.get("tests.core.test_fuzz")
    if fuzz is not None:
        fuzz.report(terminalreporter)
