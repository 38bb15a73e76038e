"""Logging: structlog events on stderr, JSON lines (or a console view on a TTY), level-filtered.

Must not write to stdout (the protocol's) and must not cost much below the chosen level: the
filtering logger returns before any processor runs.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import orjson
import structlog

from bridge.core.events import Log

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
LOG_FORMATS = ("auto", "json", "console")
# Names structlog's event dict uses itself; a core field by that name must not clobber them.
_RESERVED = frozenset({"event", "level", "timestamp"})


def _dumps(event: Any, **_: Any) -> str:
    return orjson.dumps(event, default=repr).decode()


def configure_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Send every structlog event at `level` or above to `stream` (stderr) in `fmt`."""
    out = sys.stderr if stream is None else stream
    console = fmt == "console" or (fmt == "auto" and out.isatty())
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=out.isatty())
        if console
        else structlog.processors.JSONRenderer(serializer=_dumps)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )


class LogSink:
    """Emits Log actions (the core's and the shell's own) through structlog."""

    def __init__(self, level: str = "debug") -> None:
        self._logger: Any = structlog.get_logger("mcp-rosetta")
        self._min = LEVELS[level]

    def __call__(self, action: Log) -> None:
        level = LEVELS.get(action.level, 20)
        if level < self._min:
            return  # before any dict is touched: a filtered event costs one lookup
        fields = action.fields
        if not _RESERVED.isdisjoint(fields):
            fields = {(f"{k}_" if k in _RESERVED else k): v for k, v in fields.items()}
        self._logger.log(level, action.event, **fields)
