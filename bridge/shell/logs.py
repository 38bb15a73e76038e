"""Logging: structured events on stderr, JSON lines (or a console view on a TTY), level-filtered.

Must not write to stdout (the protocol's) and must not cost anything below the chosen level:
a filtered event returns after one dict lookup, before any field is formatted. Written here
rather than with structlog because importing structlog (and the asyncio it pulls in) cost
46 ms of every start, half the startup budget (issue 6), for two renderers this small.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the CLI imports this module before anything heavy: keep it light
    from bridge.core.events import Log

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
LOG_FORMATS = ("auto", "json", "console")
# Keys every record has; a core field by that name is renamed instead of clobbering them.
_RESERVED = frozenset({"event", "level", "timestamp"})


def _timestamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def _fields(action: Log) -> dict[str, Any]:
    fields = action.fields
    if _RESERVED.isdisjoint(fields):
        return fields
    return {(f"{k}_" if k in _RESERVED else k): v for k, v in fields.items()}


def render_json(action: Log) -> str:
    record = {"event": action.event, **_fields(action), "level": action.level,
              "timestamp": _timestamp()}
    import orjson  # here, not at the top: this module is imported before the server starts

    return orjson.dumps(record, default=repr).decode() + "\n"


def render_console(action: Log) -> str:
    pairs = " ".join(f"{k}={v}" for k, v in _fields(action).items())
    return f"{_timestamp()} [{action.level:<8}] {action.event:<24} {pairs}".rstrip() + "\n"


class LogSink:
    """Writes Log actions (the core's and the shell's own) at `level` or above to `stream`."""

    def __init__(self, level: str = "debug", fmt: str = "auto",
                 stream: TextIO | None = None) -> None:
        self._min = LEVELS[level]
        self._out = sys.stderr if stream is None else stream
        console = fmt == "console" or (fmt == "auto" and self._out.isatty())
        self._render = render_console if console else render_json
        # The driver and the supervisor's threads log concurrently; a text stream is not
        # thread-safe, and a record must never be split by another.
        self._lock = threading.Lock()

    def __call__(self, action: Log) -> None:
        if LEVELS.get(action.level, 20) < self._min:
            return
        line = self._render(action)
        try:
            with self._lock:
                self._out.write(line)
                self._out.flush()
        except (OSError, ValueError):
            pass  # stderr is gone: nothing left to tell, and the protocol must go on
