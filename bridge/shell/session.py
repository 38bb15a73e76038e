"""One bridge session: a client, a core, a server child, and the trio nursery that owns them all.

Must not hold protocol logic (the core decides) nor touch the process (fds 0/1, signals,
systemd): the stdio entry point and the daemon do that, and hand a session its client's fds.
Leaving `Session.run` means every task of the session has ended and its children are reaped.

    nursery ─┬─ read-client   client fd → lines → core → writes to both peers' outlets
             ├─ read-server-N server fd → lines → core → writes (N: the child's generation)
             ├─ wait-server-N the child's exit → ChildExited
             ├─ read-stderr-N server's stderr → `server.stderr` log events (and the exit's tail)
             ├─ clock         sleeps until the core's next deadline → TimerFired
             └─ write-*       only while a peer's pipe is full: drains its backlog in order
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from functools import partial
from typing import Protocol

import trio

from bridge.core.events import CLIENT, PeerClosed, ShutdownRequested, TimerFired
from bridge.core.record import record
from bridge.errors import ServerUnavailable
from bridge.shell.child import Child
from bridge.shell.driver import Core, Driver
from bridge.shell.logs import Logger
from bridge.shell.orphans import Orphans
from bridge.shell.outlet import Outlet
from bridge.shell.pump import Throttle, pump
from bridge.shell.settings import Timing
from bridge.shell.supervisor import Spawn, Supervisor
from bridge.shell.transcript import Transcript


@record(frozen=True)
class SessionSettings:
    timing: Timing = field(default_factory=Timing)
    max_message_bytes: int = 64 * 1024 * 1024
    debug: bool = False
    """Per-message debug events (bytes in and out) besides the core's own."""


def _no_notify(_: str) -> None:
    pass


class Upstream(Protocol):
    """The server side of a session: the supervisor of a child, or the HTTP upstream
    (bridge/shell/remote/upstream.py). The driver writes to it and asks it to restart."""

    @property
    def congested(self) -> bool: ...
    async def relieved(self) -> None: ...
    def write(self, data: bytes) -> bool: ...
    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool: ...
    def restart(self) -> None: ...
    def serve(self, child: Child | ServerUnavailable | None = None) -> None: ...
    def hurry(self) -> None: ...
    async def stop(self) -> None: ...
    def kill_all(self) -> None: ...


OpenUpstream = Callable[[Driver, trio.Nursery, Throttle], Upstream]
"""Builds a session's upstream once its nursery is open (None: the child supervisor); the
throttle is the client's outlet, which paces the reading of the server."""


class Clock:
    """Sleeps until the core's next deadline, then tells the core; moved when it moves."""

    def __init__(self, driver: Driver, core: Core) -> None:
        self._driver = driver
        self._core = core
        self._scope: trio.CancelScope | None = None

    def watch(self, deadline: float | None) -> None:
        scope = self._scope
        if deadline is not None and scope is not None and deadline < scope.deadline:
            scope.deadline = deadline

    async def run(self) -> None:
        while True:
            deadline = self._core.next_deadline()
            with trio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._driver.post(TimerFired())


class FirstWrite:
    """The client's outlet until its first write: then it says so and steps out of the way
    (the driver writes to the outlet itself from then on: nothing more per message)."""

    def __init__(self, outlet: Outlet, driver: Driver, told: trio.Event) -> None:
        self._outlet = outlet
        self._driver = driver
        self._told = told

    def write(self, data: bytes) -> bool:
        self._driver.client = self._outlet
        self._told.set()
        return self._outlet.write(data)

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        self._driver.client = self._outlet
        self._told.set()
        return self._outlet.write_pieces(pieces)


class Session:
    """One client's bridge. `run` it once; `shut_down` asks it to end (twice: hurry).

    `client_written` is set once the client has been sent its first bytes (the stdio bridge
    waits for it to import what its first answer does not need)."""

    def __init__(self, core: Core, spawn: Spawn, log: Logger, *,
                 settings: SessionSettings = SessionSettings(),
                 notify: Callable[[str], None] = _no_notify,
                 orphans: Orphans | None = None,
                 transcript: Transcript | None = None,
                 upstream: OpenUpstream | None = None) -> None:
        self._core = core
        self._open_upstream = upstream
        self._spawn = spawn
        self._log = log
        self._settings = settings
        self._notify = notify
        self.orphans = orphans
        self.driver = Driver(core, log, limit=settings.max_message_bytes, notify=notify,
                             debug=settings.debug, transcript=transcript)
        self._supervisor: Upstream | None = None
        self._client: Outlet | None = None
        self._asked = 0
        self._hurry = trio.CancelScope()
        self.client_written = trio.Event()

    def shut_down(self, grace: float = 0.0) -> None:
        """The first call asks the core to stop (after `grace` seconds for the answers it
        owes); a second one asks it to stop now, and skips every grace period."""
        self._asked += 1
        self.driver.post(ShutdownRequested(grace if self._asked == 1 else 0.0))
        if self._asked > 1:
            self._hurry.cancel()
            if self._supervisor is not None:
                self._supervisor.hurry()

    async def run(self, client_in: int, client_out: int,
                  child: Child | ServerUnavailable | None = None) -> int:
        """Serve until the core says Stop; its exit code. Takes both fds (closes them).

        `child` is a server already started (the stdio bridge starts it before its imports
        so the two start-ups overlap), or why it could not be; else one is spawned. A server
        that cannot start reaches the core as its exit, with the cause.
        """
        driver = self.driver
        try:
            async with trio.open_nursery() as nursery:
                self._start(nursery, client_in, client_out, child)
                await driver.stopped.wait()
                await self._end()
                nursery.cancel_scope.cancel()
        finally:  # also after a crash or a cancellation: no fd and no child left behind
            if self._client is not None:
                self._client.abandon()
            if self._supervisor is not None:
                self._supervisor.kill_all()
            if self.driver.transcript is not None:
                self.driver.transcript.close()
        assert driver.stop_code is not None
        self._log.info("bridge.stopped", code=driver.stop_code)
        return driver.stop_code

    def _start(self, nursery: trio.Nursery, client_in: int, client_out: int,
               child: Child | ServerUnavailable | None) -> None:
        settings, driver = self._settings, self.driver
        # Nobody can read our answers any more: for the core that is the client leaving.
        client = Outlet(client_out, nursery, "client",
                        on_broken=lambda: driver.post(PeerClosed(CLIENT, gone=True)))
        supervisor: Upstream
        if self._open_upstream is not None:
            supervisor = self._open_upstream(driver, nursery, client)
        else:
            supervisor = Supervisor(self._spawn, driver, nursery, settings.timing, self._log,
                                    limit=settings.max_message_bytes, feeds=client)
        clock = Clock(driver, self._core)
        driver.client = FirstWrite(client, driver, self.client_written)
        driver.server, driver.clock = supervisor, clock
        self._supervisor, self._client = supervisor, client
        supervisor.serve(child)  # ChildStarted reaches the core before anything the client says
        read_client = partial(pump, client_in, CLIENT, driver, settings.max_message_bytes,
                              (supervisor, client), reader_gone=client.reader_gone)
        nursery.start_soon(read_client, name="read-client")
        nursery.start_soon(clock.run, name="clock")

    async def _end(self) -> None:
        """What is owed to the client drains while the child stops; then adopted orphans go."""
        self._notify("STOPPING=1")
        assert self._supervisor is not None
        timing = self._settings.timing
        async with trio.open_nursery() as ending:
            ending.start_soon(self._drain_client, timing.drain_timeout)
            ending.start_soon(self._supervisor.stop)
        if self.orphans is not None:
            ended = await self.orphans.end_all(0.0 if self._asked > 1 else timing.kill_grace)
            if ended:
                self._log.info("orphans.ended", count=ended)

    async def _drain_client(self, stall_timeout: float) -> None:
        client = self._client
        assert client is not None
        dropped = (0, 0)
        with self._hurry:
            dropped = await client.drain(stall_timeout)
        if self._hurry.cancelled_caught:
            dropped = client.abandon()
        if dropped != (0, 0):
            self._log.warning("client.dropped", bytes=dropped[0], messages=dropped[1],
                              reason="the client stopped reading")
