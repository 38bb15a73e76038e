"""A listening service: one socket, Unix or TCP, and the process around what it serves.

Must not serve a connection itself nor hold protocol logic: what is served (`Serving`) is
the daemon's sessions (bridge/shell/services/daemon.py) or the HTTP front (http/front.py). Both take
their connections from `accept_all`, which waits out a shortage of fds and refuses, within
REFUSAL_WAIT, a connection over the limit; `Service` turns the process's signals into a stop
(a second one hurries) or a reload, feeds systemd's watchdog, and reaps and finally ends the
processes the bridge adopted.

    service ─┬─ signals    SIGTERM/SIGINT/SIGQUIT: stop; SIGHUP: reload; SIGCHLD: reap orphans
             ├─ watchdog   WATCHDOG=1 at half of WATCHDOG_USEC, when systemd asks
             └─ (what is served: its accept loop, its sessions or connections)
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

import trio

from bridge.errors import BridgeError
from bridge.shell.logs import Logger
from bridge.shell.services.orphans import Orphans
from bridge.shell.settings import Settings

STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
REFUSAL_WAIT = 5.0
"""Seconds a refused connection is given to send its first request and take the answer (a
JSON-RPC error naming the request's id, or 503: HTTP answers only a request) before it is
closed. A refusal is only useful if it names what it refuses, and a client's first request
can come late (`connect` or a client starting on a loaded machine, a slow network); what a
silent connection costs meanwhile is one fd, and a shortage of fds only makes the accept
loop wait (`NO_ROOM`)."""
# accept(2) failing for want of room for one more fd (accept(2), ERRORS): a session or a
# refusal ending frees one, so the service waits and tries again, as trio's serve_listeners does.
NO_ROOM = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
NO_ROOM_WAIT = 0.1
# A connection that went away before it was accepted, or a network error pending on it
# (accept(2), NOTES: Linux hands these to accept, to be retried): nothing to answer.
GONE_BEFORE_ACCEPT = frozenset({
    errno.ECONNABORTED, errno.EPROTO, errno.ENETDOWN, errno.ENOPROTOOPT, errno.EHOSTDOWN,
    errno.ENONET, errno.EHOSTUNREACH, errno.EOPNOTSUPP, errno.ENETUNREACH})

Read = Callable[[], Settings]
"""Reads the configuration again (ConfigError if it is invalid)."""
Apply = Callable[[Settings], None]
"""Checks new settings and applies what a running service can change; BridgeError refuses
them whole (the settings in force stay)."""


def watchdog_interval(environ: Mapping[str, str] = os.environ) -> float | None:
    """Seconds between WATCHDOG=1 pings: half of what systemd set (sd_watchdog_enabled(3))."""
    usec = environ.get("WATCHDOG_USEC", "")
    pid = environ.get("WATCHDOG_PID")
    if not usec.isdigit() or int(usec) == 0 or (pid is not None and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6


class Serving(Protocol):
    """What a service serves on its socket."""

    events: str
    """The prefix of its log events (`daemon`, `http`)."""
    fd_fix: str
    """What to do when the process runs out of fds."""

    @property
    def full(self) -> bool:
        """The next connection is refused (the limit is reached)."""

    def admit(self, nursery: trio.Nursery, connection: trio.socket.SocketType,
              peer: str) -> None:
        """Take a place for `connection` now, and serve it in a task of `nursery`."""

    async def refuse(self, connection: trio.socket.SocketType) -> None:
        """Read the request of a connection over the limit and answer it with the reason,
        within REFUSAL_WAIT (the caller closes the connection)."""

    async def run(self, listener: socket.socket) -> int:
        """Serve until stopped (or, for the front, until its shared core stops); the exit
        status."""

    def stop(self) -> None:
        """Stop serving, letting what is under way finish within its grace; again: at once."""


async def accept_all(listening: trio.socket.SocketType, serving: Serving, nursery: trio.Nursery,
                     log: Logger) -> None:
    """Accept for ever: each connection admitted, or refused over the limit (in `nursery`)."""
    while True:
        connection, peer = await _next(listening, serving, log)
        if serving.full:
            nursery.start_soon(_refuse, serving, connection, name="refuse")
        else:
            serving.admit(nursery, connection, peer)


async def _next(listening: trio.socket.SocketType, serving: Serving,
                log: Logger) -> tuple[trio.socket.SocketType, str]:
    """The next connection. Out of fds (a burst of idle connections or refusals holds many):
    wait for one to be freed, saying so once, instead of ending the service."""
    told = False
    while True:
        try:
            connection, address = await listening.accept()
            return connection, _peer(address)
        except OSError as exc:
            if exc.errno in GONE_BEFORE_ACCEPT:
                continue
            if exc.errno not in NO_ROOM:
                raise
            if not told:
                told = True
                log.warning(f"{serving.events}.accept_waiting", reason=exc.strerror,
                            fix=serving.fd_fix)
            await trio.sleep(NO_ROOM_WAIT)


async def _refuse(serving: Serving, connection: trio.socket.SocketType) -> None:
    with connection:
        await serving.refuse(connection)


def _peer(address: object) -> str:
    """A TCP peer as host:port ([host]:port for IPv6); "" for a Unix socket's."""
    if not isinstance(address, tuple):
        return ""
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Service:
    """The process around what is served: signals, systemd's watchdog, reload, orphans."""

    def __init__(self, serving: Serving, log: Logger, notify: Callable[[str], None], *,
                 read: Read, apply: Apply, kill_grace: float,
                 watchdog: float | None = None, orphans: Orphans | None = None) -> None:
        """`read` and `apply` are a SIGHUP's reload; `kill_grace` bounds the end of the
        adopted orphans."""
        self._serving = serving
        self._log = log
        self._notify = notify
        self._read = read
        self._apply = apply
        self._kill_grace = kill_grace
        self._watchdog = watchdog
        self._orphans = orphans

    async def run(self, listener: socket.socket) -> int:
        with trio.open_signal_receiver(*STOPPING, signal.SIGHUP, signal.SIGCHLD) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch, signals, name="signals")
                if self._watchdog is not None:
                    nursery.start_soon(self._ping_watchdog, self._watchdog, name="watchdog")
                code = await self._serving.run(listener)
                nursery.cancel_scope.cancel()
        if self._orphans is not None:
            ended = await self._orphans.end_all(self._kill_grace)
            if ended:
                self._log.info("orphans.ended", count=ended)
        return code

    def reload(self) -> None:
        """Read the configuration again and apply it, or refuse it whole (logged, in one
        line); systemd hears the reload begin and end either way."""
        self._notify(f"RELOADING=1\nMONOTONIC_USEC={time.monotonic_ns() // 1000}")
        try:
            self._apply(self._read())
        except BridgeError as exc:
            self._log.error("daemon.reload_failed", reason=str(exc))
        self._notify("READY=1")

    async def _watch(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
            if signum == signal.SIGCHLD:
                if self._orphans is not None:
                    self._orphans.reap()
                continue
            self._log.info("signal.received", signal=signal.Signals(signum).name)
            if signum == signal.SIGHUP:
                self.reload()
            else:
                self._serving.stop()

    async def _ping_watchdog(self, interval: float) -> None:
        while True:
            self._notify("WATCHDOG=1")
            await trio.sleep(interval)
