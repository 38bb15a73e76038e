"""Logs: JSON lines on the given stream, console view on request, level filtering."""

from __future__ import annotations

import io
import json
import re

from bridge.core.events import Log
from bridge.shell.logs import LogSink


def test_json_lines_with_flat_fields() -> None:
    out = io.StringIO()
    LogSink("info", "json", out)(
        Log("info", "request.forwarded", {"method": "tools/list", "client_id": 1}))
    record = json.loads(out.getvalue())
    assert record["event"] == "request.forwarded"
    assert record["level"] == "info"
    assert record["method"] == "tools/list" and record["client_id"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", record["timestamp"])


def test_levels_below_the_threshold_are_dropped() -> None:
    out = io.StringIO()
    sink = LogSink("warning", "json", out)
    sink(Log("debug", "noise", {}))
    sink(Log("info", "noise", {}))
    sink(Log("error", "child.failed", {}))
    assert [json.loads(line)["event"] for line in out.getvalue().splitlines()] == [
        "child.failed"]


def test_console_format_and_reserved_field_names() -> None:
    out = io.StringIO()
    LogSink("debug", "console", out)(Log("debug", "odd.fields", {"event": "x", "level": 3}))
    text = out.getvalue()
    assert "[debug" in text and "odd.fields" in text
    assert "event_=x" in text and "level_=3" in text


def test_auto_is_json_when_not_a_terminal() -> None:
    out = io.StringIO()
    LogSink("info", "auto", out)(Log("info", "bridge.stopped", {"code": 0}))
    assert json.loads(out.getvalue())["code"] == 0


def test_values_json_cannot_hold_are_written_as_their_repr() -> None:
    out = io.StringIO()
    LogSink("info", "json", out)(Log("info", "odd.value", {"value": {1, 2}}))
    assert json.loads(out.getvalue())["value"] == "{1, 2}"


def test_a_closed_stream_does_not_raise() -> None:
    out = io.StringIO()
    out.close()
    LogSink("info", "json", out)(Log("error", "child.failed", {}))
