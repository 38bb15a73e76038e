"""A request target: its path, and the log's way of writing it (no query value ever)."""

from __future__ import annotations

import pytest

from bridge.streamable.target import logged, path_of


@pytest.mark.parametrize(("target", "written"), [
    ("/mcp", "/mcp"),
    ("/mcp?access_token=abc", "/mcp?access_token=…"),
    ("/mcp?a=1&b=&c", "/mcp?a=…&b=…&…"),
    ("/mcp?TOKEN", "/mcp?…"),
    ("/mcp?=x", "/mcp?…"),
    ("/mcp?", "/mcp?…"),
])
def test_the_log_keeps_the_path_and_the_names_of_a_query_never_its_values(
        target: str, written: str) -> None:
    assert logged(target) == written


def test_the_path_is_the_target_without_its_query() -> None:
    assert path_of("/mcp?access_token=abc") == "/mcp"
    assert path_of("/mcp") == "/mcp"
