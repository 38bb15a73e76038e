"""The write end of one peer: ordered writes that never block the caller, with back-pressure.

Must not decide what to write or when to stop: the driver gives it bytes, the session closes
it. It writes straight to the fd when the pipe takes the bytes; only what a full pipe cannot
take is queued, in order, and drained by a writer task that exists only while there is a
backlog. A backlog past HIGH_WATER makes the outlet `congested` until it is back under
LOW_WATER: the readers that feed this peer wait for that, so memory stays flat however slowly
the peer reads.

Its life is `OutletState`, moved only along `_OUTLET_MOVES`. Three facts stay flags beside it,
each with a single move of its own rather than a state of the stream: `congested` (the
back-pressure's hysteresis, read by the readers before every read), whether a writer task
exists, and whether the pipe was widened (once, for good).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Final

import trio

from bridge.core.states import IllegalMove
from bridge.shell.fdio import fdio

# Bytes queued for a peer before the sides that feed it stop reading, and the level it must
# come back under before they read again.
HIGH_WATER = 1024 * 1024
LOW_WATER = HIGH_WATER // 4


class OutletState(Enum):
    """One peer's write end, from opened to its fd closed."""

    OPEN = "writes go to the peer, or queue behind what it has not taken yet"
    CLOSING = "no more writes: what is queued goes out, then the fd closes (EOF)"
    CLOSED = "the fd is closed, everything written or the rest dropped"
    BROKEN = "the peer stopped reading for good (EPIPE and the like): the fd is closed"


_OUTLET_MOVES: dict[OutletState, frozenset[OutletState]] = {
    OutletState.OPEN: frozenset({OutletState.CLOSING, OutletState.CLOSED, OutletState.BROKEN}),
    OutletState.CLOSING: frozenset({OutletState.CLOSED, OutletState.BROKEN}),
    OutletState.CLOSED: frozenset(),
    OutletState.BROKEN: frozenset(),
}
# Read on every write (a member read through its class costs several times a global's).
_OPEN: Final = OutletState.OPEN
_CLOSING: Final = OutletState.CLOSING
_CLOSED: Final = OutletState.CLOSED
_BROKEN: Final = OutletState.BROKEN


class Outlet:
    """One peer's write end. `write` never waits; `drain` waits for the backlog to go out."""

    def __init__(self, fd: int, nursery: trio.Nursery, name: str,
                 on_broken: Callable[[], object] | None = None) -> None:
        self.name = name
        self._on_broken = on_broken
        self._fd = fd
        self._nursery = nursery
        self._restore_blocking = fdio.make_nonblocking(fd)
        self._widened = False
        # Views of the callers' bytes, not copies: a queued MiB result costs no extra MiB.
        self._backlog: deque[memoryview] = deque()
        self.queued = 0
        self._writing = False
        self._progress = trio.Event()  # set (and replaced) whenever queued bytes leave
        self.congested = False
        self._relieved = trio.Event()
        self.state: OutletState = _OPEN

    def _move(self, to: OutletState) -> None:
        if to not in _OUTLET_MOVES[self.state]:
            raise IllegalMove(f"outlet {self.name}", self.state, to)
        self.state = to

    @property
    def ended(self) -> bool:
        """Whether the fd is closed (CLOSED or BROKEN): nothing more reaches the peer."""
        return self.state is _CLOSED or self.state is _BROKEN

    def write(self, data: bytes) -> bool:
        """Write `data` now, or queue it after what is already queued; False if it never can."""
        if self.state is not _OPEN:
            return False
        if not self._backlog:
            try:
                written = fdio.write_now(self._fd, data)
            except OSError:
                self._break()
                return False
            if written < len(data) and not self._widened and len(data) > fdio.READ_SIZE:
                written += self._widen(data, written)
            if written == len(data):
                return True
            self._queue(memoryview(data)[written:])
        else:
            self._queue(memoryview(data))
        return True

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        """As `write`, for bytes given in pieces (a spliced line's views of the line it came
        as): written with writev, and only what the pipe does not take is queued, as views."""
        if self.state is not _OPEN:
            return False
        if self._backlog:
            for piece in pieces:
                self._queue(memoryview(piece))
            return True
        try:
            written = fdio.writev_now(self._fd, pieces[:fdio.WRITEV_MAX])
            rest = _after(pieces, written)
            if rest and not self._widened and written + _size(rest) > fdio.READ_SIZE:
                self._widened = True  # longer than the pipe holds: widen it (once), go on
                fdio.widen(self._fd)
                rest = _after(rest, fdio.writev_now(self._fd, rest[:fdio.WRITEV_MAX]))
        except OSError:
            self._break()
            return False
        for view in rest:
            self._queue(view)
        return True

    def _widen(self, data: bytes, written: int) -> int:
        """A message longer than the pipe holds: widen it (once) and write on at once."""
        self._widened = True
        fdio.widen(self._fd)
        try:
            return fdio.write_now(self._fd, memoryview(data)[written:])
        except OSError:
            return 0  # the queued rest finds out, and breaks the outlet

    def reader_gone(self) -> bool:
        """Whether the peer can no longer read (checked now); if so the outlet is broken.
        The caller tells the core: `on_broken` is not called."""
        if not self.ended and fdio.reader_gone(self._fd):
            self._break(tell=False)
        return self.state is _BROKEN

    async def relieved(self) -> None:
        """Return once the outlet is not congested (at once if it is not)."""
        while self.congested:
            await self._relieved.wait()

    def close(self) -> None:
        """End the stream once what is queued is written (the peer then sees EOF)."""
        if self.state is _OPEN:
            self._move(_CLOSING)
        if not self._backlog:
            self._close_fd()

    async def drain(self, stall_timeout: float) -> tuple[int, int]:
        """Close, then wait while the peer keeps reading; give up after `stall_timeout` seconds
        without progress. Returns what was dropped: (bytes, messages), (0, 0) if nothing."""
        self.close()
        while not self.ended:
            with trio.move_on_after(stall_timeout):
                await self._progress.wait()
                continue
            return self.abandon()
        return 0, 0

    def abandon(self) -> tuple[int, int]:
        """Close now, dropping what is queued; returns what was dropped (bytes, messages)."""
        dropped = self.queued, _messages(self._backlog)
        self._backlog.clear()
        self._set_queued(0)
        self._close_fd()
        return dropped

    def _queue(self, view: memoryview) -> None:
        self._backlog.append(view)
        self._set_queued(self.queued + len(view))
        if not self._writing:
            self._writing = True
            self._nursery.start_soon(self._write_backlog, name=f"write-{self.name}")

    async def _write_backlog(self) -> None:
        backlog = self._backlog
        try:
            while backlog and not self.ended:
                await fdio.wait_writable(self._fd)
                if self.ended:  # abandoned meanwhile: the fd is gone
                    break
                try:
                    written = fdio.writev_now(
                        self._fd, list(itertools.islice(backlog, fdio.WRITEV_MAX)))
                except OSError:
                    self._break()
                    break
                self._advance(written)
        finally:
            self._writing = False
        if self.state is _CLOSING:
            self._close_fd()

    def _advance(self, written: int) -> None:
        if not written:
            return
        self._set_queued(self.queued - written)
        backlog = self._backlog
        while written:
            head = backlog[0]
            if written < len(head):
                backlog[0] = head[written:]
                break
            written -= len(head)
            backlog.popleft()
        self._progress.set()
        self._progress = trio.Event()

    def _set_queued(self, queued: int) -> None:
        self.queued = queued
        if queued > HIGH_WATER and not self.congested:
            self.congested = True
            self._relieved = trio.Event()
        elif queued <= LOW_WATER and self.congested:
            self.congested = False
            self._relieved.set()

    def _break(self, tell: bool = True) -> None:
        self._backlog.clear()
        self._set_queued(0)
        self._close_fd(_BROKEN)
        if tell and self._on_broken is not None:
            # Told from a task of its own: the write that found the peer gone may be the
            # driver's own, in the middle of carrying out the core's actions.
            self._nursery.start_soon(_call, self._on_broken)

    def _close_fd(self, to: OutletState = _CLOSED) -> None:
        if not self.ended:
            self._move(to)
            fdio.close_quietly(self._fd, blocking=self._restore_blocking, end_writing=True)
            self._progress.set()


async def _call(function: Callable[[], object]) -> None:
    function()


def _after(pieces: Sequence[bytes | memoryview], written: int) -> list[memoryview]:
    """What `pieces` hold past their first `written` bytes, as views."""
    rest: list[memoryview] = []
    for piece in pieces:
        size = len(piece)
        if written >= size:
            written -= size
            continue
        rest.append(memoryview(piece)[written:])
        written = 0
    return rest


def _size(views: list[memoryview]) -> int:
    return sum(len(view) for view in views)


def _messages(backlog: deque[memoryview]) -> int:
    """How many messages a backlog holds: its newlines (a partly written one counts whole)."""
    return sum(bytes(view).count(b"\n") for view in backlog)
