"""Log lines before structlog: held in order, then rendered as any other line, with their time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
import structlog

from bridge.core.events import Log
from bridge.shell import early_log, logs
from bridge.shell.early_log import EarlyLog

AT = 1_000_000_000.25  # 2001-09-09T01:46:40.250000Z


@pytest.fixture
def stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TextIO]:
    monkeypatch.setattr(early_log.time, "time", lambda: AT)
    with open(tmp_path / "stderr", "w+") as file:
        yield file
    structlog.reset_defaults()


def text(stream: TextIO) -> str:
    stream.seek(0)
    return stream.read()


def records(stream: TextIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text(stream).splitlines()]


def test_lines_wait_for_load_then_come_in_order_with_their_own_time(stream: TextIO) -> None:
    early = EarlyLog("info", "json", stream)
    log = early.logger()
    log.info("bridge.started", version="1")
    logs.emit(log, Log("warning", "child.failed", {"reason": "gone", "level": 3}))
    assert text(stream) == ""
    early.load()
    assert records(stream) == [
        {"version": "1", "event": "bridge.started", "level": "info",
         "timestamp": "2001-09-09T01:46:40.250000Z"},
        {"reason": "gone", "level_": 3, "event": "child.failed", "level": "warning",
         "timestamp": "2001-09-09T01:46:40.250000Z"},
    ]
    # The keys in the order of a line logged after load (which has structlog's own time).
    assert list(records(stream)[0]) == ["version", "event", "level", "timestamp"]
    log.info("bridge.stopped", code=0)
    later = records(stream)[-1]
    assert list(later) == ["code", "event", "level", "timestamp"]
    assert later["timestamp"] != "2001-09-09T01:46:40.250000Z"


def test_below_the_level_nothing_is_held(stream: TextIO) -> None:
    early = EarlyLog("warning", "json", stream)
    log = early.logger()
    assert log.debug.__name__ == log.info.__name__ == "_nop"
    log.info("noise")
    log.log(20, "noise")
    log.error("child.failed")
    assert len(early.held) == 1
    early.load()
    assert [r["event"] for r in records(stream)] == ["child.failed"]


def test_bound_context_is_kept_and_loggers_become_structlogs(stream: TextIO) -> None:
    early = EarlyLog("info", "json", stream)
    log = early.logger()
    child = log.bind(gen=2)
    child.info("server.stderr", line="hello", gen=3)  # a field overrides the context
    child.info("server.stderr", line="again")
    early.load()
    early.load()  # the second time: nothing again
    assert [(r["gen"], r["line"]) for r in records(stream)] == [(3, "hello"), (2, "again")]
    child.info("server.stderr", line="after")  # structlog's own method now, same context
    assert records(stream)[-1]["gen"] == 2
    assert child.info.__self__._context == {"gen": 2}
    assert early.logger({"session": 1}).info.__self__._context == {"session": 1}


def test_the_console_view_shows_the_time_it_was_logged(stream: TextIO) -> None:
    early = EarlyLog("info", "console", stream)
    early.logger().info("bridge.started")
    early.load()
    shown = text(stream)
    assert "2001-09-09T01:46:40.250000Z" in shown and "bridge.started" in shown
