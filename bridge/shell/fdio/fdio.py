"""The fd seam: every read and write of a peer's file descriptor goes through these few calls.

Must not buffer, frame or decide anything. It is the one place that knows fds are
non-blocking and waited on with trio's readiness calls, so a platform without them (Windows:
blocking reads in a worker thread) can be added here without touching the rest of the shell.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import stat
from collections.abc import Sequence

import trio

# A pipe's whole capacity per read: a MiB line takes 16 reads. Larger would cost every small
# message more than it saves: a read buffer past glibc's mmap threshold (128 KiB) is an mmap
# and a munmap per read.
READ_SIZE = 64 * 1024
# At most this many buffers per writev (IOV_MAX is 1024 on Linux and macOS).
WRITEV_MAX = 64


# A pipe holds 64 KiB unless told otherwise: a MiB message then crosses it in sixteen rounds
# of wait and write, or more as the reader takes it in small reads. At 1 MiB (Linux's
# pipe-max-size for any user) such a message goes in one write and is read without waiting.
# Only once a message longer than the pipe is seen (the outlet, the pump decide): small ones
# gain nothing, and back-pressure sets in as early as before.
PIPE_SIZE = 1024 * 1024


def widen(fd: int) -> None:
    """Give the pipe `fd` is an end of room for PIPE_SIZE bytes, where the system allows it
    (Linux); anything else (a socket, a terminal, a refusal) stays as it is."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is None:
        return
    with contextlib.suppress(OSError):
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, setpipe, PIPE_SIZE)


def make_nonblocking(fd: int) -> bool:
    """Make `fd` non-blocking; whether it was blocking before (to put it back at the end)."""
    was_blocking = os.get_blocking(fd)
    if was_blocking:
        os.set_blocking(fd, False)
    return was_blocking


def read_now(fd: int) -> bytes | None:
    """What `fd` holds now: bytes, b"" at EOF (an error counts as EOF), None if nothing yet."""
    try:
        return os.read(fd, READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


async def wait_readable(fd: int) -> None:
    await trio.lowlevel.wait_readable(fd)


def write_now(fd: int, data: bytes | memoryview) -> int:
    """Write what the pipe takes now; the count written (0 if full). OSError if the peer is gone."""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0


def writev_now(fd: int, buffers: Sequence[bytes | memoryview]) -> int:
    """Like write_now, for several buffers in one call."""
    try:
        return os.writev(fd, buffers)
    except BlockingIOError:
        return 0


def reader_gone(fd: int) -> bool:
    """Whether nobody can read what is written to `fd` any more: a pipe whose reading end is
    closed (POLLERR), a socket whose peer closed both ways or reset (POLLHUP). A socket the
    peer only shut down for writing still reads: that is not gone."""
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    # Not POLLNVAL: macOS's poll says that of a terminal, which is there and reads.
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


async def wait_writable(fd: int) -> None:
    """Until `fd` can take bytes, or another task closed it (see close_quietly)."""
    with contextlib.suppress(trio.ClosedResourceError):
        await trio.lowlevel.wait_writable(fd)


def close_quietly(fd: int, *, blocking: bool = False, end_writing: bool = False) -> None:
    """Close `fd`, first putting it back in blocking mode if asked (a terminal shared with a
    shell must stay usable after us); an fd already gone is fine.

    A task waiting on `fd` is woken first (trio must be told before an fd it watches closes).
    With `end_writing`, a socket is shut down for writing first: its peer sees EOF now, even
    if another fd (our reading end) still holds the socket open.
    """
    with contextlib.suppress(RuntimeError):  # outside trio: nobody can be waiting
        trio.lowlevel.notify_closing(fd)
    if end_writing:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                with socket.socket(fileno=os.dup(fd)) as sock:
                    sock.shutdown(socket.SHUT_WR)
    if blocking:
        with contextlib.suppress(OSError):
            os.set_blocking(fd, True)
    with contextlib.suppress(OSError):
        os.close(fd)
