"""Fixtures for the end-to-end tests: the two SDK interpreters and the peer runners.

Must not start peers itself: tests say which client, scenario and server command they run.
Every test under tests/e2e/ is marked `e2e` (deselect with `-m "not e2e"`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# The helpers sit beside this file; make them importable in every pytest import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import venvs


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: drives real processes over real pipes")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def legacy_python() -> venvs.SdkPython:
    """Interpreter with mcp==1.30.0; `.peer("legacy_server")` is a server command."""
    return venvs.sdk_python("legacy")


@pytest.fixture(scope="session")
def modern_python() -> venvs.SdkPython:
    """Interpreter with mcp==2.3.0; `.peer("modern_server")` is a server command."""
    return venvs.sdk_python("modern")


@pytest.fixture(scope="session")
def published_server() -> Callable[[str], list[str]]:
    """`published_server(name)` -> the command of a pinned published server (venvs.PUBLISHED),
    installed on first use."""
    return venvs.published_server


@pytest.fixture(scope="session")
def run_client() -> Callable[..., dict]:
    """`run_client(python, scenario, server_cmd, timeout=120, env=None)` -> the client's JSON
    report (`env` adds to the environment)."""
    return venvs.run_client


@pytest.fixture(scope="session")
def bridge_command() -> Callable[..., list[str]]:
    """`bridge_command(server_cmd, *options)` -> the bridge command in front of a server."""
    return venvs.bridge_command
