"""Logs: JSON lines on the given stream, console view on request, level filtering."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
import structlog

from bridge.core.events import Log
from bridge.shell.logs import LogSink, configure_logging


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def test_json_lines_with_flat_fields() -> None:
    out = io.StringIO()
    configure_logging("info", "json", out)
    LogSink()(Log("info", "request.forwarded", {"method": "tools/list", "client_id": 1}))
    record = json.loads(out.getvalue())
    assert record["event"] == "request.forwarded"
    assert record["level"] == "info"
    assert record["method"] == "tools/list" and record["client_id"] == 1
    assert "timestamp" in record


def test_levels_below_the_threshold_are_dropped() -> None:
    out = io.StringIO()
    configure_logging("warning", "json", out)
    sink = LogSink("warning")
    sink(Log("debug", "noise", {}))
    sink(Log("info", "noise", {}))
    sink(Log("error", "child.failed", {}))
    assert [json.loads(line)["event"] for line in out.getvalue().splitlines()] == [
        "child.failed"]


def test_console_format_and_reserved_field_names() -> None:
    out = io.StringIO()
    configure_logging("debug", "console", out)
    LogSink()(Log("debug", "odd.fields", {"event": "x", "level": 3}))
    text = out.getvalue()
    assert "odd.fields" in text and "event_=x" in text and "level_=3" in text


def test_auto_is_json_when_not_a_terminal() -> None:
    out = io.StringIO()
    configure_logging("info", "auto", out)
    LogSink()(Log("info", "bridge.stopped", {"code": 0}))
    assert json.loads(out.getvalue())["code"] == 0
