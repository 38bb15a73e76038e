"""The per-peer I/O: a reader thread turns lines into events, an Outlet turns bytes into writes.

Must not decide anything: readers only report, outlets only write what the driver gave them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import threading
from collections import deque
from collections.abc import Callable

from bridge.core.events import Event, MessageReceived, PeerClosed, Side
from bridge.shell.lines import READ_SIZE, LineSplitter

Post = Callable[[list[Event]], None]
"""Hands the driver the events of one read, in order."""

# How often a blocked writer looks whether it was abandoned (only while a pipe stays full).
ABANDON_POLL_MS = 50
# Queued messages written per syscall once a slow peer reads again (IOV_MAX is 1024).
WRITEV_MAX = 64


def read_peer(fd: int, side: Side, post: Post) -> None:
    """Report the lines `side` writes to `fd`, then PeerClosed at EOF (an error counts as EOF).

    Owns `fd`: closes it at the end.

    Runs in a thread of its own; blocking reads wake it exactly when bytes arrive, which is
    the cheapest wake-up there is (issue 6: an event loop cost more per message than the
    whole translation).
    """
    splitter = LineSplitter()
    with contextlib.suppress(OSError):
        while chunk := _read(fd):
            if lines := splitter.feed(chunk):
                # All lines of one read in one go: under load the driver then takes its lock,
                # and writes to each peer, once per read instead of once per message.
                post([MessageReceived(side, line) for line in lines])
    with contextlib.suppress(OSError):
        os.close(fd)
    post([*(MessageReceived(side, line) for line in splitter.finish()), PeerClosed(side)])


def _read(fd: int) -> bytes:
    """The next bytes of `fd`, waiting for them even if the fd is non-blocking.

    It may be, without our asking: stdin and stdout are one file description when they are
    one socket (systemd's StandardInput=socket) or one terminal, and the client's Outlet
    makes stdout non-blocking. Setting it back would make the Outlet's writes block.
    """
    while True:
        try:
            return os.read(fd, READ_SIZE)
        except BlockingIOError:
            poller = select.poll()  # not select(): that refuses fds past 1023
            poller.register(fd, select.POLLIN)
            poller.poll()


def start_thread(name: str, target: Callable[..., object], *args: object) -> threading.Thread:
    # Daemons: a reader blocked on a peer that never closes must not keep the process alive.
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


class Outlet:
    """The write end of one peer's pipe: ordered writes that never block the caller.

    The driver writes while it holds the core, so a write must not wait on a slow peer (the
    other side would stall behind it): what the pipe cannot take now is queued, in order, and
    written by this outlet's thread as the peer reads. `close` ends the stream after what is
    queued; `abandon` ends it now. `on_done(broken)` runs once, when the fd is closed.
    """

    def __init__(self, fd: int, name: str, on_done: Callable[[bool], None]) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._on_done = on_done
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        # Views of the callers' bytes, not a copy: a queued MiB result costs no extra MiB.
        self._queued: deque[memoryview] = deque()
        self._closing = False
        self._abandoned = False
        self.broken = False
        self.done = threading.Event()
        start_thread(f"write-{name}", self._drain)

    def write(self, data: bytes) -> bool:
        """Write or queue `data`; False once the peer is gone or the outlet closed."""
        with self._lock:
            if self.broken or self._closing:
                return False
            written = 0
            if not self._queued:
                try:
                    written = os.write(self._fd, data)
                except BlockingIOError:
                    pass
                except OSError:
                    self._break()
                    return False
                if written == len(data):
                    return True
            self._queued.append(memoryview(data)[written:])
            self._wakeup.notify()
        return True

    def close(self) -> None:
        """Finish: the fd closes once everything queued is written (or the peer is gone)."""
        with self._lock:
            self._closing = True
            self._wakeup.notify()

    def abandon(self) -> None:
        """Close now, dropping what is queued (the peer stopped reading)."""
        with self._lock:
            self._closing = self._abandoned = True
            self._wakeup.notify()

    def _break(self) -> None:
        self.broken = True
        self._queued.clear()
        self._wakeup.notify()

    def _drain(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        try:
            while self._next_turn():
                poller.poll(ABANDON_POLL_MS)
                self._flush_some()
        finally:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, True)  # a terminal shared with a shell stays usable
                os.close(self._fd)
            self.done.set()
            self._on_done(self.broken)

    def _next_turn(self) -> bool:
        """Wait for queued bytes; False when the outlet is finished."""
        with self._lock:
            while not (self._queued or self._closing or self.broken):
                self._wakeup.wait()
            return bool(self._queued) and not self._abandoned

    def _flush_some(self) -> None:
        with self._lock:
            queued = self._queued
            try:
                written = os.writev(self._fd, list(itertools.islice(queued, WRITEV_MAX)))
            except BlockingIOError:
                return
            except OSError:
                self._break()
                return
            while written:
                head = queued[0]
                if written < len(head):
                    queued[0] = head[written:]
                    return
                written -= len(head)
                queued.popleft()
