"""The client side over two fds: stdio, or a daemon's Unix connection (both ends may be one
socket's).

Must not decide anything: the pump hands the driver every line it reads, and what the core
sends the client is written to the outlet once per batch (the lines one read of a peer
brought), in one write. The fds are this side's from the start: closed whatever happens.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge.core.codec import encode
from bridge.core.events import CLIENT, PeerClosed, Send, Spliced
from bridge.shell import fdio
from bridge.shell.logs import Logger
from bridge.shell.outlet import Outlet
from bridge.shell.pump import Throttle, pump

if TYPE_CHECKING:
    from bridge.shell.batch import Batch
    from bridge.shell.driver import Driver


class FdClient:
    """The client on `fd_in` and `fd_out`. `written` is set once the client has been sent
    its first bytes (the stdio bridge waits for it to import what its first answer does
    not need)."""

    def __init__(self, fd_in: int, fd_out: int, log: Logger) -> None:
        self._in = fd_in
        self._out = fd_out
        self._log = log
        self.outlet: Outlet | None = None
        self._batch: Batch | None = None
        self._parts: list[bytes | Spliced] = []
        self.written = trio.Event()
        self._told = False

    @property
    def congested(self) -> bool:
        return self.outlet is not None and self.outlet.congested

    async def relieved(self) -> None:
        if self.outlet is not None:
            await self.outlet.relieved()

    def open(self, driver: Driver, nursery: trio.Nursery, server: Throttle) -> None:
        # Nobody can read our answers any more: for the core that is the client leaving.
        outlet = self.outlet = Outlet(self._out, nursery, "client",
                                      on_broken=lambda: driver.post(PeerClosed(CLIENT, gone=True)))
        self._batch = driver.batch(outlet, CLIENT)
        self._parts = self._batch.parts
        read = partial(pump, self._in, CLIENT, driver, driver.limit, (server, outlet),
                       reader_gone=outlet.reader_gone)
        nursery.start_soon(read, name="read-client")

    def send(self, send: Send) -> None:
        line = send.line  # a peer's line with its id spliced: written as it is
        self._parts.append(encode(send.message) if line is None else line)

    def flush(self) -> None:
        if self._parts:
            assert self._batch is not None
            self._batch.write()
            if not self._told:
                self._told = True
                self.written.set()

    async def drain(self, stall_timeout: float) -> None:
        assert self.outlet is not None
        self._tell_dropped(await self.outlet.drain(stall_timeout))

    def close(self) -> None:
        if self.outlet is None:  # never opened: the fds are still ours to close
            fdio.close_quietly(self._in)
            fdio.close_quietly(self._out)
            return
        self._tell_dropped(self.outlet.abandon())

    def _tell_dropped(self, dropped: tuple[int, int]) -> None:
        if dropped != (0, 0):
            self._log.warning("client.dropped", bytes=dropped[0], messages=dropped[1],
                              reason="the client stopped reading")
