"""The daemon: what a Unix listening service serves (service.py), one session per connection,
all in one trio nursery.

Must not hold protocol logic (each session's own core does) nor touch the process (signals,
systemd's environment: service.py and daemon_main.py do). A session that ends or crashes
never disturbs another; a connection past max_sessions gets one JSON-RPC error and is closed.
A server that cannot start still makes a session: its core tells the client the cause.

    sessions ─┬─ accept     a connection → a session (or a refusal)   (service.accept_all)
              ├─ session-1  its own core, its own server child (session.py)
              └─ session-2  ...
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from bridge.core.codec import encode
from bridge.core.config import CoreConfig
from bridge.core.record import replaced
from bridge.core.refusal import refusal
from bridge.errors import ConfigError, ServerUnavailable
from bridge.shell.clients.fd_client import FdClient
from bridge.shell.logs import Logger
from bridge.shell.metrics import wanted
from bridge.shell.servers.child import Child, spawner
from bridge.shell.servers.era_memory import remembering, storing
from bridge.shell.servers.start_failure import NotStarted
from bridge.shell.servers.supervisor import Spawn
from bridge.shell.services.service import NO_ROOM, REFUSAL_WAIT, accept_all
from bridge.shell.session.driver import Core
from bridge.shell.session.server_side import servers_for
from bridge.shell.session.session import Session, SessionSettings
from bridge.shell.session.transcript import Transcript
from bridge.shell.settings import Settings, ShellConfig

if TYPE_CHECKING:
    from bridge.shell.metrics.watch import Watch

FIRST_LINE_MAX = 64 * 1024
FD_FIX = "raise the open-file limit (LimitNOFILE= in the unit, ulimit -n) or lower max_sessions"


def new_core(config: CoreConfig) -> Core:
    from bridge.core.bridge import Bridge

    return Bridge(config, secret=os.urandom(32))


def _watched(shell: ShellConfig) -> Watch | None:
    """The daemon's metrics, if it keeps any (their modules are loaded only then)."""
    if not wanted(shell.metrics):
        return None
    from bridge.shell.metrics.watch import Watch

    return Watch("unix")


def new_spawn(shell: ShellConfig) -> Spawn:
    return spawner(shell)


class Daemon:
    """Serves every connection of one listening socket until asked to stop."""

    events = "daemon"
    fd_fix = FD_FIX

    def __init__(self, settings: Settings, log: Logger, notify: Callable[[str], None], *,
                 make_core: Callable[[CoreConfig], Core] | None = None,
                 make_spawn: Callable[[ShellConfig], Spawn] = new_spawn) -> None:
        self.settings = settings
        self._log = log
        self._notify = notify
        self.watch = _watched(settings.shell)
        """The metrics of every session, if kept (`metrics`: a restart applies a change)."""
        self._make_core = make_core or (new_core if self.watch is None else self.watch.core)
        self._make_spawn = make_spawn
        self._sessions: set[Session] = set()
        # Places taken, counted from the accept on: a session admitted in the same scheduler
        # round as others holds its place before its task first runs (issue 19.1).
        self._places = 0
        self._numbers = itertools.count(1)
        self._accepting = trio.CancelScope()
        self._stops = 0
        self.stopped = trio.Event()

    @property
    def session_count(self) -> int:
        """Places taken: sessions running, and those admitted that have yet to start."""
        return self._places

    @property
    def full(self) -> bool:
        return self._places >= self.settings.daemon.max_sessions

    async def run(self, listener: socket.socket) -> int:
        """Accept and serve until `stop`; returns once every session has ended."""
        listening = trio.socket.from_stdlib_socket(listener)
        async with trio.open_nursery() as sessions:
            metrics = self.settings.shell.metrics
            if self.watch is not None and metrics is not None:
                sessions.start_soon(partial(self.watch.serve, metrics,
                                            self.settings.daemon.token_file, self._log),
                                    name="metrics")
            self._notify("READY=1")
            self._report()
            self._log.info("daemon.listening", address=_address(listener),
                           max_sessions=self.settings.daemon.max_sessions)
            with self._accepting:
                await accept_all(listening, self, sessions, self._log)
            listening.close()  # a client now learns at once that nobody is there
            self._wind_down()
        self._log.info("daemon.stopped")
        self.stopped.set()
        return 0

    def stop(self) -> None:
        """Stop accepting, and let every session finish what it owes within shutdown_grace;
        asked again, end them all at once."""
        self._stops += 1
        self._accepting.cancel()
        if self._stops > 1:
            for session in list(self._sessions):
                session.shut_down()

    def reload(self, settings: Settings) -> None:
        """New sessions use `settings` from now on; those running keep theirs."""
        self.settings = settings
        self._log.info("daemon.reloaded", command=list(settings.shell.command))

    # Sessions -----------------------------------------------------------------------------

    def admit(self, nursery: trio.Nursery, connection: trio.socket.SocketType,
              peer: str = "") -> None:
        """Take a place for `connection` now, in the accepting task."""
        self._places += 1
        self._report()
        nursery.start_soon(self._hold_place, connection, self.settings, name="session")

    async def _hold_place(self, connection: trio.socket.SocketType, settings: Settings) -> None:
        try:
            await self._serve(connection, settings)
        finally:  # however the session went, its place is free again
            self._places -= 1
            self._report()

    async def _serve(self, connection: trio.socket.SocketType, settings: Settings) -> None:
        number = next(self._numbers)
        log = self._log.bind(session=number)
        if self._accepting.cancel_called:  # admitted just before a stop
            with connection:
                await self._answer(connection, "the daemon is stopping; try again later")
            return
        watch = self.watch
        sessions = SessionSettings.of(settings.shell, None if watch is None else watch.series)
        first: Child | NotStarted | None = None
        try:  # a remote server's headers are read now: an unset ${VAR} refuses the session
            servers = servers_for(settings.shell, sessions, make_spawn=self._make_spawn)
            out = _second_fd(connection)
            if servers.spawn is not None:
                first = _first_server(servers.spawn, out)
        except (ServerUnavailable, ConfigError) as exc:
            log.error("session.refused", reason=str(exc))
            with connection:
                await self._answer(connection, str(exc))
            return
        core, memory = settings.core, remembering(settings.shell, settings.core)
        if memory is not None:
            core = replaced(core, remembered=memory.load())
        session = Session(self._make_core(core), log, settings=sessions,
                          transcript=self._transcript(settings.shell.transcript, number, log))
        if memory is not None:
            session.driver.remember = storing(memory, log)
        self._sessions.add(session)
        log.info("session.started")
        client = FdClient(connection.detach(), out, log)
        try:
            code = await session.run(client, servers.opener(log), first)
            log.info("session.ended", code=code)
        except Exception as exc:  # contained: the other sessions go on
            log.error("session.crashed", error=repr(exc))
        finally:
            self._sessions.discard(session)

    @staticmethod
    def _transcript(path: str | None, number: int, log: Logger) -> Transcript | None:
        if path is None:
            return None
        try:
            return Transcript.open(path, number, log)
        except ConfigError as exc:  # it was writable at start: this session goes without
            log.error("session.transcript_failed", reason=str(exc))
            return None

    async def refuse(self, connection: trio.socket.SocketType) -> None:
        limit = self.settings.daemon.max_sessions
        await self._answer(connection,
                           f"too many sessions (max_sessions = {limit}); try again later",
                           {"max_sessions": limit})

    async def _answer(self, connection: trio.socket.SocketType, reason: str,
                      data: Any = None) -> None:
        """Answer the client's first request with an error naming `reason`; the request is
        waited for, and the answer given, REFUSAL_WAIT each (the caller hangs up). A client
        that hung up first costs nothing more."""
        self._log.warning("connection.refused", reason=reason)
        first = b""
        with trio.move_on_after(REFUSAL_WAIT), contextlib.suppress(OSError):
            while b"\n" not in first and len(first) < FIRST_LINE_MAX:
                chunk = await connection.recv(4096)
                if not chunk:
                    break
                first += chunk
        answer = memoryview(encode(refusal(first.split(b"\n", 1)[0], reason, data)))
        with trio.move_on_after(REFUSAL_WAIT), contextlib.suppress(OSError):
            while answer:
                answer = answer[await connection.send(answer):]

    def _wind_down(self) -> None:
        grace = self.settings.shell.timing.shutdown_grace
        self._notify("STOPPING=1")
        self._log.info("daemon.stopping", sessions=self._places, grace_s=grace)
        for session in list(self._sessions):
            session.shut_down(0.0 if self._stops > 1 else grace)

    def _report(self) -> None:
        count = self._places
        self._notify(f"STATUS={count} session{'' if count == 1 else 's'}")


def _second_fd(connection: trio.socket.SocketType) -> int:
    """The fd the session writes the client's answers to; ServerUnavailable if the daemon
    lacks one (a burst can use up every fd)."""
    try:
        return os.dup(connection.fileno())
    except OSError as exc:
        raise ServerUnavailable(_fd_failure("no file descriptor left for a session", exc)) \
            from None


def _first_server(spawn: Spawn, out: int) -> Child | NotStarted:
    """The session's server, or why its command cannot start (the session's core tells the
    client); ServerUnavailable, `out` closed, if the daemon itself lacks what a session
    needs (a burst can use up every fd)."""
    try:
        return spawn()
    except NotStarted as exc:
        return exc
    except ServerUnavailable:
        os.close(out)
        raise
    except OSError as exc:  # the server's pipes could not be made
        os.close(out)
        raise ServerUnavailable(_fd_failure("cannot start the server", exc)) from None


def _fd_failure(what: str, exc: OSError) -> str:
    return f"{what}: {exc.strerror}" + (f"; {FD_FIX}" if exc.errno in NO_ROOM else "")


def _address(listener: socket.socket) -> str:
    name = listener.getsockname()
    return f"unix:{name}" if isinstance(name, str) else str(name)
