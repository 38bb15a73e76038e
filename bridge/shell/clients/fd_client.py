"""The client side over two fds: stdio, or a daemon's Unix connection (both ends may be one
socket's).

Must not decide anything: the pump hands the driver every line it reads, and the driver puts
what the core sends the client in this side's batch, written to the outlet once per read of
a peer, in one write. The fds are this side's from the start: closed whatever happens.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge.core.codec import encode
from bridge.core.events import CLIENT, PeerClosed, Send
from bridge.shell.fdio import fdio
from bridge.shell.fdio.outlet import Outlet
from bridge.shell.fdio.pump import Throttle, pump
from bridge.shell.logs import Logger

if TYPE_CHECKING:
    from bridge.shell.clients.fd_pool import PooledLines
    from bridge.shell.session.batch import Batch
    from bridge.shell.session.driver import Driver


class FdClient:
    """The client on `fd_in` and `fd_out`. `written` is set once the client has been sent
    its first bytes (the stdio bridge waits for it to import what its first answer does
    not need)."""

    def __init__(self, fd_in: int, fd_out: int, log: Logger,
                 pooled: PooledLines | None = None) -> None:
        self._in = fd_in
        self.pooled = pooled
        """The pool the client's lines go to (`fd_pool.py`); None: the driver takes them."""
        self._out = fd_out
        self._log = log
        self._driver: Driver | None = None
        self._nursery: trio.Nursery | None = None
        self.outlet: Outlet | None = None
        self.batch: Batch | None = None
        self.written = trio.Event()

    def open(self, driver: Driver, nursery: trio.Nursery) -> None:
        # Nobody can read our answers any more: for the core that is the client leaving.
        outlet = self.outlet = Outlet(self._out, nursery, "client",
                                      on_broken=lambda: driver.post(PeerClosed(CLIENT, gone=True)))
        self._driver, self._nursery = driver, nursery
        self.batch = driver.batch(outlet, CLIENT)
        self.batch.peer = FirstWrite(self.batch, outlet, self.written)
        if self.pooled is not None:
            self.pooled.open(driver, nursery)

    @property
    def throttle(self) -> Throttle:
        assert self.outlet is not None
        return self.outlet

    def listen(self, server: Throttle) -> None:
        driver, nursery, outlet = self._driver, self._nursery, self.outlet
        assert driver is not None and nursery is not None and outlet is not None
        read = partial(pump, self._in, CLIENT, driver, driver.limit, (server, outlet),
                       reader_gone=outlet.reader_gone,
                       deliver=None if self.pooled is None else self.pooled.lines)
        nursery.start_soon(read, name="read-client")

    def send(self, send: Send) -> None:
        """What the driver does itself with `batch`."""
        assert self.batch is not None
        line = send.line
        self.batch.parts.append(encode(send.message) if line is None else line)

    async def drain(self, stall_timeout: float) -> None:
        assert self.outlet is not None
        if self.pooled is not None:  # the other processes' answers go out first
            await self.pooled.pool.end_others(stall_timeout)
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


class FirstWrite:
    """The batch's peer until its first write: then it says so and hands the batch the
    outlet (nothing more per write from then on)."""

    def __init__(self, batch: Batch, outlet: Outlet, told: trio.Event) -> None:
        self._batch = batch
        self._outlet = outlet
        self._told = told

    def write(self, data: bytes) -> bool:
        self._hand_over()
        return self._outlet.write(data)

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        self._hand_over()
        return self._outlet.write_pieces(pieces)

    def _hand_over(self) -> None:
        self._batch.peer = self._outlet
        self._told.set()
