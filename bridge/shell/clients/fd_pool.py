"""A byte client (stdio) served by a pool of sessions: each request to the process its pool
places it at, every answer written to the client's one outlet.

Must not decide where a request goes (the pool asks mode B's `placement.py`) nor hold
anything per message: until the first session serves a legacy server to a modern client
(mode B) the client's lines go to it as they came, undecoded; from then on each line is
decoded once here and its value handed to the core that takes it (`MessageDecoded`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import trio

from bridge.core.codec import decode
from bridge.core.events import CLIENT, MessageDecoded, Send, Side
from bridge.core.modern_server_legacy_client.placement import load_of
from bridge.shell.fdio.lines import Line
from bridge.shell.session.driver import line_of

if TYPE_CHECKING:
    from bridge.shell.fdio.outlet import Outlet
    from bridge.shell.session.driver import Driver, Source
    from bridge.shell.session.pool import Pool


class Writable(Protocol):
    """A byte client side (`fd_client.FdClient`): its outlet, once it is open."""

    @property
    def outlet(self) -> Outlet | None: ...


class FdAnswers:
    """The pool's `Clients` over a byte client: what a later process's core sends is written
    to the client's outlet at once (the first process's goes in its driver's batch)."""

    def __init__(self, client: Writable) -> None:
        self._client = client

    def deliver(self, send: Send) -> bool:
        outlet = self._client.outlet
        assert outlet is not None
        outlet.write(line_of(send))
        message = send.message
        return send.request is not None and type(message) is dict and "method" not in message

    def close(self, request_id: object) -> None:
        """A process's core answers what it owes as it stops: nothing is left to close."""

    def abandon_all(self) -> None:
        """The outlet is the first session's: it is drained and closed with it."""


class PooledLines:
    """The client's lines, to the pool (the pump hands each read's lines to `lines`)."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self._first: Driver | None = None

    def open(self, driver: Driver, nursery: trio.Nursery) -> None:
        """The first session's driver and nursery: the pool's own."""
        self._first = driver
        self.pool.first.open(driver, nursery)

    def lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None:
        first = self._first
        assert first is not None
        if load_of(self.pool.first.core.handler) is None:  # not mode B: there is no pool
            first.lines(side, lines, source)
            return
        for line in lines:
            self._one(first, line)

    def _one(self, first: Driver, line: Line) -> None:
        if type(line) is not bytes:  # too long to take: the first core refuses it
            first.lines(CLIENT, [line])
            return
        try:
            message = decode(line)
        except ValueError:
            first.lines(CLIENT, [line])  # the first core answers the parse error
            return
        if type(message) is not dict:
            first.lines(CLIENT, [line])  # a batch: a modern client sends none
            return
        event = MessageDecoded(CLIENT, message, line)
        if "id" in message and "method" in message:
            self.pool.take(event)
        elif message.get("method") == "notifications/cancelled":
            params = message.get("params")
            self.pool.cancel(params.get("requestId") if type(params) is dict else None, line)
        else:
            first.decoded(event)
