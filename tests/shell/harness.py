"""Runs a Session in the test's own trio run: the client is two os.pipe pairs, the child a fake.

Must not wait without a bound (a hang must fail the test) nor let a test's children, pipes or
tasks spill into the next test: `bridged` is an async context manager that cleans up, and
leaving it means the session's nursery is closed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
import trio
from structlog.testing import capture_logs

from bridge.shell import logs
from bridge.shell.clients.fd_client import FdClient
from bridge.shell.servers.supervisor import Spawn
from bridge.shell.session.driver import Core
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import Session, SessionSettings
from bridge.shell.session.transcript import Transcript
from bridge.shell.settings import Timing
from tests.shell.fakes import WAIT, LineStream, Spawner

# Long enough that a polite peer never runs into it.
TIMING = Timing(shutdown_grace=2.0, kill_grace=2.0, drain_timeout=5.0)
# Short, and different, so a test can tell which grace period was waited for.
FAST = Timing(shutdown_grace=0.2, kill_grace=0.6, drain_timeout=1.0)


class Harness:
    def __init__(self, core: Core, spawner: Spawner, spawn: Spawn, timing: Timing,
                 limit: int, debug: bool, transcript: Transcript | None = None) -> None:
        self.core = core
        self.spawner = spawner
        self.spawn = spawn
        self.settings = SessionSettings(timing=timing, max_message_bytes=limit, debug=debug)
        self.client_in, to_bridge = os.pipe()
        from_bridge, self.client_out = os.pipe()
        self.client = LineStream(from_bridge, to_bridge)
        """The client's side: what it sends to the bridge, and reads from it."""
        self.logs: list[dict[str, Any]] = []
        self.notified: list[str] = []
        self.stopping = trio.Event()
        """Set when the session notified STOPPING=1: its shutdown has begun."""
        self.code: int | None = None
        self.error: BaseException | None = None
        self.done = trio.Event()
        self.ended_at: float | None = None
        self.session: Session | None = None
        self.fd_client: FdClient | None = None
        """The session's client side, on the bridge's ends of the two pipes."""
        self._transcript = transcript
        self._scope = trio.CancelScope()

    async def run(self) -> None:
        with capture_logs() as captured, self._scope:
            self.logs = captured
            log = logs.logger()
            self.session = Session(self.core, log, settings=self.settings,
                                   notify=self._notify, transcript=self._transcript)
            self.fd_client = FdClient(self.client_in, self.client_out, log)
            servers = Servers(self.settings, spawn=self.spawn)
            try:
                self.code = await self.session.run(self.fd_client, servers.opener(log))
            except Exception as exc:
                self.error = exc
            finally:
                self.ended_at = trio.current_time()
                self.done.set()

    def cancel(self) -> None:
        """Cancel the session from outside, as an enclosing nursery's failure would."""
        self._scope.cancel()

    def _notify(self, state: str) -> None:
        self.notified.append(state)
        if state == "STOPPING=1":
            self.stopping.set()

    async def join(self) -> int:
        """The session's exit code once it returned (what it raised, raised here)."""
        with trio.fail_after(WAIT):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.code is not None
        return self.code

    def events(self, name: str) -> list[dict[str, Any]]:
        """The logged events called `name`, with their fields."""
        return [entry for entry in self.logs if entry["event"] == name]


@asynccontextmanager
async def bridged(core: Core, spawner: Spawner | None = None, *, spawn: Spawn | None = None,
                  timing: Timing = TIMING, limit: int = 64 * 1024 * 1024,
                  debug: bool = False,
                  transcript: Transcript | None = None) -> AsyncIterator[Harness]:
    """A session between the test (as the client) and fake children, running in the test."""
    spawner = spawner or Spawner()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    async with trio.open_nursery() as nursery:
        spawner.nursery = nursery
        h = Harness(core, spawner, spawn or spawner, timing, limit, debug, transcript)
        nursery.start_soon(h.run)
        try:
            yield h
        finally:
            await h.client.aclose()
            spawner.close()
            with trio.move_on_after(WAIT):
                await h.done.wait()
            nursery.cancel_scope.cancel()
