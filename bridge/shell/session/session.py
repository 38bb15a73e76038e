"""One bridge session: a core, its driver and clock, a client side and a server side, and the
trio nursery that owns every task of them.

Must not hold protocol logic (the core decides) nor touch the process (fds 0/1, signals,
systemd): the entry points do that, and hand a session its two sides (`sides.py`). Leaving
`Session.run` means every task of the session has ended and its server children are reaped.
For fds and a child, the tasks are:

    nursery ─┬─ read-client     client fd → lines → core → writes to both sides
             ├─ server-N ─┬─ read-server-N  server fd → lines → core → writes
             │            └─ wait-server-N  the child's exit → ChildExited
             ├─ read-stderr-N   server's stderr → `server.stderr` log events (and the exit's tail)
             ├─ clock           sleeps until the core's next deadline → TimerFired
             └─ write-*         only while a peer's pipe is full: drains its backlog in order

`server-N` is the child's generation (generation.py): retiring it cancels its tasks together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING

import trio

from bridge.core.events import ShutdownRequested
from bridge.core.record import record
from bridge.errors import ServerUnavailable
from bridge.shell.logs import Logger
from bridge.shell.servers.child import Child
from bridge.shell.services.orphans import Orphans
from bridge.shell.session.clock import Clock
from bridge.shell.session.driver import Core, Driver
from bridge.shell.session.sides import ClientSide, OpenServer, ServerSide
from bridge.shell.session.transcript import Transcript
from bridge.shell.settings import ShellConfig, Timing

if TYPE_CHECKING:  # metrics are loaded only when kept
    from bridge.shell.metrics.series import Series, Watched


@record(frozen=True)
class SessionSettings:
    timing: Timing = field(default_factory=Timing)
    max_message_bytes: int = 64 * 1024 * 1024
    debug: bool = False
    """Per-message debug events (bytes in and out) besides the core's own."""
    series: Series | None = None
    """The process's metrics, which each session's facts reach (its core an observing
    one: `bridge.core.observe`); None: none are kept."""

    @classmethod
    def of(cls, shell: ShellConfig, series: Series | None = None) -> SessionSettings:
        """What a session takes of the shell's settings (and the metrics, if kept)."""
        return cls(timing=shell.timing, max_message_bytes=shell.max_message_bytes,
                   debug=shell.log_level == "debug", series=series)


def _no_notify(_: str) -> None:
    pass


class Session:
    """One client's bridge. `run` it once; `shut_down` asks it to end (twice: hurry)."""

    def __init__(self, core: Core, log: Logger, *,
                 settings: SessionSettings = SessionSettings(),
                 notify: Callable[[str], None] = _no_notify,
                 orphans: Orphans | None = None,
                 transcript: Transcript | None = None) -> None:
        self._core = core
        self._log = log
        self._settings = settings
        self._notify = notify
        self.orphans = orphans
        self.driver = Driver(core, log, limit=settings.max_message_bytes, notify=notify,
                             debug=settings.debug, transcript=transcript,
                             series=settings.series)
        self.client: ClientSide | None = None
        self.server: ServerSide | None = None
        self._asked = 0
        self._hurry = trio.CancelScope()

    @property
    def stopped(self) -> trio.Event:
        """Set once the core said Stop (the session is ending)."""
        return self.driver.stopped

    def shut_down(self, grace: float = 0.0) -> None:
        """The first call asks the core to stop (after `grace` seconds for the answers it
        owes); a second one asks it to stop now, and skips every grace period."""
        self._asked += 1
        self.driver.post(ShutdownRequested(grace if self._asked == 1 else 0.0))
        if self._asked > 1:
            self._hurry.cancel()
            if self.server is not None:
                self.server.hurry()

    async def run(self, client: ClientSide, open_server: OpenServer,
                  first: Child | ServerUnavailable | None = None, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> int:
        """Serve until the core says Stop; its exit code. The client side is the session's
        from now on (its fds closed, whatever happens).

        `first` is a server already started (the stdio bridge starts it before its imports
        so the two start-ups overlap), or why it could not be; else one is started. A server
        that cannot start reaches the core as its exit, with the cause. `task_status` hears
        once the server side has started: the core can take the client's first message.
        """
        driver = self.driver
        self.client = client
        series, opened = self._settings.series, trio.current_time()
        if series is not None:
            series.opened(self._watched())
        try:
            async with trio.open_nursery() as nursery:
                self._start(nursery, client, open_server, first)
                task_status.started()
                await driver.stopped.wait()
                await self._end(client)
                nursery.cancel_scope.cancel()
        finally:  # also after a crash or a cancellation: no fd and no child left behind
            client.close()
            if self.server is not None:
                self.server.kill_all()
            if driver.transcript is not None:
                driver.transcript.close()
            if series is not None:
                series.closed(self._watched(), trio.current_time() - opened)
        assert driver.stop_code is not None
        return driver.stop_code

    def _watched(self) -> Watched:
        """The core as the metrics' gauges read it (an observing core, with metrics on)."""
        return self._core  # type: ignore[return-value]

    def _start(self, nursery: trio.Nursery, client: ClientSide, open_server: OpenServer,
               first: Child | ServerUnavailable | None) -> None:
        driver = self.driver
        client.open(driver, nursery)
        server = self.server = open_server(driver, nursery, client.throttle)
        clock = Clock(driver.post, self._core)
        driver.attach(client, server, clock)
        server.serve(first)  # ChildStarted reaches the core before anything the client says
        client.listen(server)
        nursery.start_soon(clock.run, name="clock")

    async def _end(self, client: ClientSide) -> None:
        """What is owed to the client goes out while the server stops; then adopted
        orphans go."""
        self._notify("STOPPING=1")
        assert self.server is not None
        timing = self._settings.timing
        async with trio.open_nursery() as ending:
            ending.start_soon(self._end_client, client, timing.drain_timeout)
            ending.start_soon(self.server.stop)
        if self.orphans is not None:
            ended = await self.orphans.end_all(0.0 if self._asked > 1 else timing.kill_grace)
            if ended:
                self._log.info("orphans.ended", count=ended)

    async def _end_client(self, client: ClientSide, stall_timeout: float) -> None:
        with self._hurry:
            await client.drain(stall_timeout)
        client.close()  # hurried: what is left is dropped
