"""One HTTP answer's queue: the messages the core sent for it that its connection has not
written yet, within a bound.

Must not wait nor parse: `put` is called by the driver while the core's actions run (the one
shared server reader among them), so it never blocks; a client that stops reading makes its
own route give up past `bound` bytes instead of holding the server back for everyone (the
daemon's stdio client stops the server's reader instead: there the server has one client).
The connection's task takes what is queued (`get`) and is cancelled (`scope`) when the route
gives up, even while it waits for the client to take bytes. A POST's answer uses it
(`modern.py`); so can any stream that carries messages the core routes.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

import trio

from bridge.shell.logs import Logger

STOPPED_READING = "the client stopped reading"
"""Why a client is given up on: the daemon's words (session.py, `client.dropped`)."""
STREAM_BACKLOG = 4 * 1024 * 1024
"""Bytes a route holds for a client that does not read before giving up on it (one message
is always taken, however long: the bound is on the backlog, not on a message)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message for the client, encoded once (its line is what goes on the wire)."""

    line: bytes
    """The message as one newline-terminated JSON line."""
    final: bool
    """The answer that ends the exchange (no `method`)."""
    status: int = 200
    """The HTTP status a JSON answer of it gets (`replies.status_of`)."""


class RouteState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"
    """Ended as it should (answered, or the front stopping): what is queued still goes out."""
    GAVE_UP = "gave up"
    """Past its bound: nothing more goes out, and the connection's task is cancelled."""


class Route:
    def __init__(self, log: Logger, bound: int = STREAM_BACKLOG, **names: object) -> None:
        """`names`: what the log says the route is for (the client, its request)."""
        self._queue: deque[Outgoing] = deque()
        self._ended = False
        """No more is put: once `_queue` is emptied, the writer is told EndOfChannel."""
        self._waiting = trio.lowlevel.ParkingLot()
        """The writer, while nothing is queued (a deque and a parking lot: what a memory
        channel would give, without its two objects and its statistics per answer)."""
        self._log = log
        self._names = names
        self.bound = bound
        self.state = RouteState.OPEN
        self.queued_bytes = 0
        self.queued = 0
        self.scope = trio.CancelScope()
        """The connection's task writing this route runs in it: cancelled when it gives up."""

    def put(self, outgoing: Outgoing) -> bool:
        """Queue `outgoing`; False when the route is no longer open, or has just given up
        because the backlog would pass the bound (the caller logs it and cancels the request)."""
        if self.state is not RouteState.OPEN:
            return False
        size = len(outgoing.line)
        if self.queued and self.queued_bytes + size > self.bound:
            self.give_up(bound=self.bound)
            return False
        self.queued_bytes += size
        self.queued += 1
        self._queue.append(outgoing)
        self._waiting.unpark()
        return True

    def give_up(self, **why: object) -> None:
        """The client stopped reading (past the bound, or a write it took nothing of): take
        nothing more, cancel the writer, and say so once, with `why`."""
        if self.state is RouteState.GAVE_UP:
            return
        self.state = RouteState.GAVE_UP
        self._end()
        self.scope.cancel()
        self._log.warning("http.client_dropped", **self._names, bytes=self.queued_bytes,
                          messages=self.queued, **why, reason=STOPPED_READING)

    def close(self) -> None:
        if self.state is RouteState.OPEN:
            self.state = RouteState.CLOSED
        self._end()

    def _end(self) -> None:
        self._ended = True
        self._waiting.unpark_all()

    async def _next(self) -> Outgoing:
        while not self._queue:
            if self._ended:
                raise trio.EndOfChannel
            await self._waiting.park()
        return self._queue.popleft()

    async def get(self) -> Outgoing:
        """The next message to write; trio.EndOfChannel once closed and emptied."""
        outgoing = await self._next()
        self.queued_bytes -= len(outgoing.line)
        self.queued -= 1
        return outgoing

    async def take(self) -> list[Outgoing]:
        """Everything queued (waiting for one if none is): the writer puts it all in one
        write, so it keeps up with the server's reader, which queues many messages a turn
        (one write per message lets a backlog build even for a client that reads at once).
        trio.EndOfChannel once closed and emptied."""
        taken = [await self._next()]
        taken.extend(self._queue)
        self._queue.clear()
        self.queued -= len(taken)
        self.queued_bytes -= sum(len(outgoing.line) for outgoing in taken)
        return taken
