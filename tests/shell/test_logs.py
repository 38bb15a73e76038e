"""Logs through structlog: JSON lines, the console view, level filtering, values of any kind."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
import structlog
from structlog.testing import capture_logs

from bridge.core.events import Log
from bridge.shell import logs


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[TextIO]:
    with open(tmp_path / "stderr", "w+") as file:
        yield file
    structlog.reset_defaults()


def lines(stream: TextIO) -> list[str]:
    stream.seek(0)
    return stream.read().splitlines()


def records(stream: TextIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines(stream)]


def test_json_lines_with_flat_fields(stream: TextIO) -> None:
    log = logs.configure("info", "json", stream)
    logs.emit(log, Log("info", "request.forwarded", {"method": "tools/list", "client_id": 1}))
    (record,) = records(stream)
    assert record["event"] == "request.forwarded"
    assert record["level"] == "info"
    assert record["method"] == "tools/list" and record["client_id"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", record["timestamp"])


def test_levels_below_the_threshold_are_dropped(stream: TextIO) -> None:
    log = logs.configure("warning", "json", stream)
    logs.emit(log, Log("debug", "noise", {}))
    logs.emit(log, Log("info", "noise", {}))
    log.info("noise")
    logs.emit(log, Log("error", "child.failed", {}))
    assert [record["event"] for record in records(stream)] == ["child.failed"]


def test_a_disabled_level_is_a_method_that_does_nothing(stream: TextIO) -> None:
    log = logs.configure("info", "json", stream)
    assert log.debug.__name__ == "_nop"  # structlog's filtering bound logger: one call
    assert log.info.__name__ != "_nop"


def test_console_format_and_reserved_field_names(stream: TextIO) -> None:
    log = logs.configure("debug", "console", stream)
    logs.emit(log, Log("debug", "odd.fields", {"event": "x", "level": 3}))
    (text,) = lines(stream)
    assert "debug" in text and "odd.fields" in text
    assert "event_=x" in text and "level_=3" in text


def test_auto_is_json_when_not_a_terminal(stream: TextIO) -> None:
    log = logs.configure("info", "auto", stream)
    logs.emit(log, Log("info", "bridge.stopped", {"code": 0}))
    assert records(stream)[0]["code"] == 0


@pytest.mark.parametrize("value", [2**64, 2**200, -(2**63) - 1, -(2**64), -(2**100)])
def test_integers_of_any_size_are_logged_exactly(stream: TextIO, value: int) -> None:
    log = logs.configure("info", "json", stream)
    logs.emit(log, Log("warning", "response.unmatched", {"id": value}))
    assert records(stream)[0]["id"] == value


def test_values_json_cannot_hold_are_written_as_their_repr(stream: TextIO) -> None:
    log = logs.configure("info", "json", stream)
    logs.emit(log, Log("info", "odd.value", {"value": {1, 2}, "raw": b"\xff"}))
    (record,) = records(stream)
    assert record["value"] == "{1, 2}"
    assert record["raw"] == "b'\\xff'"


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_a_value_that_cannot_be_rendered_costs_its_line_not_the_bridge(
        stream: TextIO, fmt: str) -> None:
    log = logs.configure("info", fmt, stream)
    logs.emit(log, Log("info", "odd.value", {"value": Unprintable()}))
    logs.emit(log, Log("info", "next.one", {}))
    text = "\n".join(lines(stream))
    assert "odd.value" in text and "next.one" in text


def test_a_closed_stream_does_not_raise(tmp_path: Path) -> None:
    with open(tmp_path / "stderr", "w") as stream:
        log = logs.configure("info", "json", stream)
    logs.emit(log, Log("error", "child.failed", {}))  # the fd is closed now
    structlog.reset_defaults()


def test_a_full_nonblocking_stderr_waits_briefly_then_drops(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    os.write(write_end, b"x" * 65536)  # the pipe is full; nobody reads it
    with os.fdopen(write_end, "w") as stream:
        log = logs.configure("info", "json", stream)
        logs.emit(log, Log("info", "lost.line", {}))  # returns (after a short wait)
    os.close(read_end)
    structlog.reset_defaults()


def test_tests_can_capture_what_the_bridge_logs() -> None:
    with capture_logs() as captured:
        logs.emit(logs.logger(), Log("info", "child.started", {"pid": 7}))
    assert captured == [{"event": "child.started", "pid": 7, "log_level": "info"}]
