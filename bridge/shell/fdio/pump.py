"""A peer's reader: read what it writes, split it into lines, hand each read's lines to the driver.

Must not decide anything: the core gets every line. It reads straight from the fd and waits
with trio only when the fd is empty (no task hop, no channel: a hop costs more than the whole
translation), and it stops reading while an outlet it feeds is congested, so a peer that does
not read holds the other side back instead of the bridge's memory growing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import trio

from bridge.core.events import PeerClosed, Side
from bridge.shell.fdio import fdio
from bridge.shell.fdio.lines import Line, LineSplitter

if TYPE_CHECKING:
    from bridge.shell.session.driver import Driver, Source

# Reads in a row, none of them waiting, before the reader lets other tasks run: a peer that
# never pauses must not starve the other side.
FAIR_READS = 16


class Throttle(Protocol):
    """An outlet this reader feeds: while it is congested, the reader does not read."""

    @property
    def congested(self) -> bool: ...
    async def relieved(self) -> None: ...


Deliver = Callable[[Side, list[Line], "Source | None"], None]
"""Where a read's lines go (`Driver.lines`, unless a pool places them)."""


async def pump(fd: int, side: Side, driver: Driver, limit: int, throttles: Sequence[Throttle],
               source: Source | None = None,
               reader_gone: Callable[[], bool] | None = None,
               deliver: Deliver | None = None) -> None:
    """Read `fd` until EOF (an error counts as EOF), then report PeerClosed; owns `fd`.

    `source` is the server generation the lines come from (None for the client); once it is
    retired, what it still says is dropped. `reader_gone` says, at EOF, whether the peer
    cannot read any more either (PeerClosed.gone). `deliver` takes each read's lines instead
    of the driver (a pool places them: `clients/fd_pool.py`).
    """
    restore_blocking = fdio.make_nonblocking(fd)
    splitter = LineSplitter(limit)
    deliver = driver.lines if deliver is None else deliver
    streak = 0
    widened = False
    try:
        while True:
            for throttle in throttles:
                if throttle.congested:
                    await throttle.relieved()
            chunk = fdio.read_now(fd)
            if chunk is None:
                streak = 0
                await fdio.wait_readable(fd)
                continue
            if not chunk:
                break
            if lines := splitter.feed(chunk):
                deliver(side, lines, source)
            elif not widened and len(chunk) == fdio.READ_SIZE:
                widened = True  # a line longer than the pipe: let the next ones in at once
                fdio.widen(fd)
            streak += 1
            if streak == FAIR_READS:
                streak = 0
                await trio.lowlevel.checkpoint()
        if rest := splitter.finish():
            deliver(side, rest, source)
        if source is None or not source.retired:
            driver.post(PeerClosed(side, reader_gone is not None and reader_gone()))
    finally:
        fdio.close_quietly(fd, blocking=restore_blocking)
