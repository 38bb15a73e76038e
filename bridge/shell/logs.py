"""Logging: structlog, configured once; JSON lines on stderr, or its console view on a terminal.

Must not write to stdout (the protocol's), must not cost more than one call below the chosen
level (a filtering bound logger), and must never raise: no logged value, however odd (an
integer past 64 bits, an object whose repr fails), may take the bridge down. Must not import
structlog until it configures it: the stdio bridge answers first (bridge/shell/early_log.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

import orjson

from bridge import __version__
from bridge.core.events import Log
from bridge.shell.settings import LEVELS, ShellConfig

# Keys structlog fills itself; a core field by that name is renamed instead of clobbering them.
_RESERVED = frozenset({"event", "level", "timestamp"})
LOGGED_AT = "_logged_at"
"""A line logged before structlog was configured carries its time (time.time()) in this key."""
# How long a log line may wait for a terminal that cannot take it at once (stderr shares a
# non-blocking file description with stdout when both are one terminal or socket).
_STALL_MS = 200

Logger = Any
"""A structlog bound logger (its methods depend on the configured wrapper class)."""


class StderrWriter:
    """structlog's output end: writes each rendered line whole to an fd, never raising."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def msg(self, message: str | bytes) -> None:
        data = message.encode("utf-8", "backslashreplace") if isinstance(message, str) \
            else message
        view = memoryview(data + b"\n")
        try:
            while view:
                try:
                    view = view[os.write(self._fd, view):]
                except BlockingIOError:
                    if not _writable(self._fd, _STALL_MS):
                        return
        except OSError:
            return  # stderr is gone: nothing left to tell, and the protocol must go on

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def _writable(fd: int, timeout_ms: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return bool(poller.poll(timeout_ms))


def _serialize(event: Mapping[str, Any], **_: Any) -> bytes:
    try:
        return orjson.dumps(event, default=repr)
    except (TypeError, orjson.JSONEncodeError):  # e.g. integers orjson cannot hold exactly
        return json.dumps(event, default=repr, ensure_ascii=False).encode()


def _never_raise(renderer: Any) -> Any:
    """The renderer, falling back to a line that names what could not be rendered."""

    def render(logger: Any, name: str, event: MutableMapping[str, Any]) -> Any:
        what = {"event": str(event.get("event")), "level": str(event.get("level"))}
        try:
            return renderer(logger, name, event)
        except Exception as exc:  # a log line must never cost the bridge
            return orjson.dumps({**what, "unrenderable": type(exc).__name__})

    return render


def _server_line(logger: Any, name: str, event: MutableMapping[str, Any]) -> Any:
    """For people: a server's stderr line reads as itself (`server: ...`), not as a field."""
    if event.get("event") == "server.stderr" and isinstance(event.get("line"), str):
        event["event"] = f"server: {event.pop('line')}"
    return event


def _stamped(stamper: Any) -> Any:
    """structlog's TimeStamper, unless the line says when it was logged (early_log.py)."""

    def stamp(logger: Any, name: str, event: MutableMapping[str, Any]) -> Any:
        at = event.pop(LOGGED_AT, None)
        if at is None:
            return stamper(logger, name, event)
        event["timestamp"] = iso_utc(at)
        return event

    return stamp


def iso_utc(at: float) -> str:
    """`at` as TimeStamper(fmt="iso", utc=True) writes the time it is called."""
    import datetime

    when = datetime.datetime.fromtimestamp(at, tz=datetime.UTC)
    return when.isoformat().replace("+00:00", "Z")


def import_structlog() -> None:
    """Import structlog ahead of `configure` (the stdio bridge does it after its first answers)."""
    import structlog  # noqa: F401


def configure(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> Logger:
    """Set structlog up for the whole process and return the bridge's logger.

    `auto` renders for people on a terminal and JSON lines otherwise.
    """
    import structlog

    out = sys.stderr if stream is None else stream
    console = fmt == "console" or (fmt == "auto" and out.isatty())
    renderer = structlog.dev.ConsoleRenderer(colors=out.isatty()) if console \
        else structlog.processors.JSONRenderer(serializer=_serialize)
    writer = StderrWriter(out.fileno())
    plain = [_server_line] if console else []
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    _stamped(structlog.processors.TimeStamper(fmt="iso", utc=True)),
                    *plain, _never_raise(renderer)],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=lambda *_: writer,
        cache_logger_on_first_use=False,
    )
    return logger()


def logger() -> Logger:
    """A logger bound now, to the configuration in force (tests capture it that way)."""
    import structlog

    return structlog.get_logger().bind()


def emit(log: Logger, action: Log) -> None:
    """Log one of the core's Log actions."""
    fields = action.fields
    if not _RESERVED.isdisjoint(fields):
        fields = {(f"{k}_" if k in _RESERVED else k): v for k, v in fields.items()}
    with contextlib.suppress(Exception):  # see _never_raise: logging must not cost a message
        log.log(LEVELS.get(action.level, 20), action.event, **fields)


def started_fields(shell: ShellConfig) -> dict[str, object]:
    """What the first log line says: the version, the command, the config file, and the
    names (never the values) of what is set in the server's environment."""
    fields: dict[str, object] = {"version": __version__, "command": list(shell.command),
                                 "config": shell.config_file}
    if shell.url is not None:
        fields["url"] = shell.url
    if shell.headers:
        fields["headers"] = [name for name, _ in shell.headers]
    if shell.env:
        fields["env"] = [key for key, _ in shell.env]
    if shell.pass_env is not None:
        fields["pass_env"] = list(shell.pass_env)
    if shell.cwd is not None:
        fields["cwd"] = shell.cwd
    if shell.transcript is not None:
        fields["transcript"] = shell.transcript
    return fields
