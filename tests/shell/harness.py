"""Runs `serve` in process against fake peers: the client is two memory streams, the server fakes.

Must not sleep on the wall clock: tests use pytest-trio's autojump_clock.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from bridge.core.events import Log
from bridge.shell.driver import Core
from bridge.shell.runner import serve
from bridge.shell.supervisor import Timing
from tests.shell.fakes import LineReader, Spawner

TIMING = Timing(shutdown_grace=2.0, kill_grace=3.0)


class Harness:
    def __init__(self, core: Core, spawner: Spawner | None = None, *,
                 client_out: trio.abc.SendStream | None = None, timing: Timing = TIMING,
                 signals: bool = False) -> None:
        self.core = core
        self.spawner = spawner or Spawner()
        self.to_bridge, self.client_in = trio.testing.memory_stream_one_way_pair()
        if client_out is None:
            client_out, from_bridge = trio.testing.memory_stream_one_way_pair()
            self.client = LineReader(from_bridge)
        self.client_out = client_out
        self.timing = timing
        self.signals = signals
        self.logs: list[Log] = []
        self.notified: list[str] = []
        self.code: int | None = None
        self.done = trio.Event()
        self.ended_at: float | None = None

    async def run(self) -> None:
        try:
            self.code = await serve(self.core, self.client_in, self.client_out, self.spawner,
                                    timing=self.timing, log=self.logs.append,
                                    notify=self.notified.append, signals=self.signals)
        finally:
            self.ended_at = trio.current_time()
            self.done.set()

    async def start(self, nursery: trio.Nursery) -> Any:
        """Run the bridge in `nursery`; the first (fake) child once it exists."""
        nursery.start_soon(self.run)
        await self.spawner.started.wait()
        return self.spawner.children[0]

    async def send(self, *lines: bytes) -> None:
        await self.to_bridge.send_all(b"".join(line + b"\n" for line in lines))

    async def client_eof(self) -> None:
        await self.to_bridge.aclose()

    def events(self, name: str) -> list[str]:
        return [log.event for log in self.logs if log.event == name]
