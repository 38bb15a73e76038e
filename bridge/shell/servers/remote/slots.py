"""The requests in flight to the endpoint, those waiting their turn, and the back-pressure
they make, as a child's full pipe makes it.

Must not send anything itself: a request given a slot runs in its link's nursery (`run`),
and the slot is free again when it ends, however it ends. At most `slots` requests are in
flight at once, the others wait in order; too many waiting (or too many bytes written and not
yet taken by a link's dispatcher) make the upstream `congested`, so the client's reader stops
until it is `relieved`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from bridge.shell.logs import Logger
from bridge.streamable.outbound import ServerBound

if TYPE_CHECKING:
    from bridge.shell.servers.remote.link import Link

WAITING_HIGH = 4
"""Requests waiting for a slot, per slot, past which the upstream is congested (the client's
reader stops); it is relieved once they are back to one per slot."""
QUEUED_HIGH = 1024 * 1024
"""Bytes written but not yet taken by the dispatcher past which the upstream is congested
(a notification's POST is awaited before the next line); relieved at a quarter of it."""

Run = Callable[["Link", ServerBound], Awaitable[None]]


class Slots:
    """Requests in flight (one a slot), the queue behind them, and congestion."""

    def __init__(self, slots: int, run: Run, log: Logger) -> None:
        self._slots = slots
        self._run = run
        self._log = log
        self._in_flight = 0
        self._waiting: deque[tuple[Link, ServerBound]] = deque()
        """Requests waiting for a slot, in order."""
        self._queued = 0
        """Bytes written and not yet taken by a dispatcher."""
        self._congested = False
        self._relieved = trio.Event()

    @property
    def congested(self) -> bool:
        return self._congested

    async def relieved(self) -> None:
        """Return once the upstream takes lines again (at once if it does)."""
        while self._congested:
            await self._relieved.wait()

    # Bytes written, and taken -------------------------------------------------------------

    def queue(self, size: int) -> None:
        """`size` bytes were written for a dispatcher to take."""
        self._queued += size
        self._check()

    def take(self, size: int) -> None:
        """`size` bytes were taken by a dispatcher, or dropped with a retired link."""
        self._queued -= size
        self._check()

    # Requests -----------------------------------------------------------------------------

    def take_turn(self, link: Link, out: ServerBound) -> None:
        """Start request `out` if a slot is free, else queue it behind those waiting."""
        if self._in_flight < self._slots and not self._waiting:
            self._start(link, out)
        else:
            self._waiting.append((link, out))
            self._check()

    def unqueue(self, link: Link, request_id: object) -> bool:
        """Drop the waiting request `request_id` (cancelled before its turn); whether it was."""
        for entry in self._waiting:
            if entry[0] is link and entry[1].id == request_id:
                self._waiting.remove(entry)
                self._check()
                return True
        return False

    def drop(self, link: Link) -> None:
        """Drop the requests of `link`, retired, still waiting: the core answers them."""
        self._waiting = deque(entry for entry in self._waiting if entry[0] is not link)
        self._check()

    def _start(self, link: Link, out: ServerBound) -> None:
        if link.retired:
            return  # it starts nothing: the slot would never be freed (the core answers)
        self._in_flight += 1
        link.start_soon(self._in_slot, link, out, name=f"http-{out.method}")

    async def _in_slot(self, link: Link, out: ServerBound) -> None:
        try:
            await self._run(link, out)
        finally:
            self._in_flight -= 1
            self._next_turn()

    def _next_turn(self) -> None:
        """Start the requests waiting, in order, while slots are free."""
        waiting = self._waiting
        while waiting and self._in_flight < self._slots:
            self._start(*waiting.popleft())
        self._check()

    def _check(self) -> None:
        waiting, slots = len(self._waiting), self._slots
        if not self._congested:
            if waiting > WAITING_HIGH * slots or self._queued > QUEUED_HIGH:
                self._congested = True
                self._relieved = trio.Event()
                self._log.debug("upstream.congested", waiting=waiting, queued=self._queued)
        elif waiting <= slots and self._queued <= QUEUED_HIGH // 4:
            self._congested = False
            self._relieved.set()
