"""The stdio bridge's logs before structlog is imported: each line kept, in order, with its time.

Must not render, drop or reorder a line: it only holds them until `load`, which configures
structlog (bridge/shell/logs.py), hands it every held line with the time it was logged, and
turns every logger given out so far into structlog's own (the same methods, no extra call).

Why: importing structlog costs tens of milliseconds (its package imports all of its modules:
asyncio for structlog.stdlib and its native loggers, rich for its console view when rich is
installed) that the first answer does not need, and a client starts the bridge for every
server of every session. stdio_main.py imports structlog on the session's thread at its
first idle moment after the client's first answer (at most 5 s later), then calls `load`.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, TextIO

from bridge.shell import logs
from bridge.shell.settings import LEVELS

_METHODS = (*LEVELS, "log", "bind")
"""What the bridge calls on a logger: one method per level, `log(level, event)`, `bind`."""


def _nop(*_: Any, **__: Any) -> None:
    """A level below the threshold: one call that does nothing (as structlog's)."""


class EarlyLogger:
    """A logger whose lines wait in its EarlyLog; after `EarlyLog.load`, structlog's methods."""

    def __init__(self, early: EarlyLog, context: dict[str, Any]) -> None:
        self._early = early
        self.context = context
        for name, number in LEVELS.items():
            setattr(self, name, _nop if number < early.threshold else partial(self.log, number))

    def log(self, level: int, event: str, **fields: Any) -> None:
        if level >= self._early.threshold:
            self._early.held.append((self.context, level, event, fields, time.time()))

    def bind(self, **context: Any) -> Any:
        return self._early.logger({**self.context, **context})

    def become(self, real: Any) -> None:
        """From now on, be `real` (a structlog bound logger with this logger's context)."""
        for name in _METHODS:
            setattr(self, name, getattr(real, name))


Held = tuple[dict[str, Any], int, str, dict[str, Any], float]
"""A line not yet rendered: the logger's context, level, event, fields, when (time.time())."""


class EarlyLog:
    """The loggers handed out before structlog, and their lines."""

    def __init__(self, level: str, fmt: str, stream: TextIO | None = None) -> None:
        self._level, self._fmt, self._stream = level, fmt, stream
        self.threshold = LEVELS[level]
        self.held: list[Held] = []
        self._loggers: list[EarlyLogger] = []
        self._real: Any = None

    def logger(self, context: dict[str, Any] | None = None) -> Any:
        """A logger with `context`: an early one, or structlog's once loaded."""
        if self._real is not None:
            return self._real.bind(**(context or {}))
        made = EarlyLogger(self, context or {})
        self._loggers.append(made)
        return made

    @property
    def loaded(self) -> bool:
        return self._real is not None

    def load(self) -> None:
        """Configure structlog, render what is held, in order; the early loggers become it.
        Does nothing the second time."""
        if self._real is not None:
            return
        real = self._real = logs.configure(self._level, self._fmt, self._stream)
        held, self.held = self.held, []
        for context, level, event, fields, at in held:
            real.log(level, event, **{**context, **fields, logs.LOGGED_AT: at})
        for early in self._loggers:
            early.become(real.bind(**early.context))
        self._loggers.clear()
