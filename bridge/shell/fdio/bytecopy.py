"""Copying one file descriptor into another until the first's EOF, as `connect` relays.

Must not buffer more than one chunk, spin, or change a descriptor's flags (stdin and stdout
are the client's, maybe shared with a terminal), nor import anything heavy: connect's start-up
pays for it.
"""

from __future__ import annotations

import errno
import os
import select
import stat

CHUNK = 64 * 1024
# splice(2) needs a pipe on one side and a kernel that can splice these two: anything else is
# told by one of these before a byte moves, and read/write takes over. Only a pipe is spliced
# from: a Unix socket spliced into a pipe could leave that pipe polling readable with nothing to
# read (seen on Linux 6.18), and a client that polls then reads its stdout would hang there.
_CANNOT_SPLICE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF})
_splice = getattr(os, "splice", None)  # Linux only


def copy_fd(src: int, dst: int) -> bool:
    """Copy `src` into `dst` until `src` ends (EOF, or it cannot be read: False) or `dst`
    cannot take more (True: nothing more can reach it). Blocks on whichever side is slow, so a
    full `dst` stops the reading of `src`."""
    if _splice is not None and _splices(src, dst):
        try:
            while _splice(src, dst, CHUNK):
                pass
            return False
        except OSError as exc:
            if exc.errno not in _CANNOT_SPLICE:
                # A pipe or socket whose reader is gone says EPIPE; a failed read says
                # anything else (ECONNRESET from a daemon gone, EIO from a hung-up terminal).
                return exc.errno == errno.EPIPE
    return _copy(src, dst)


def _splices(src: int, dst: int) -> bool:
    """From a pipe, both ends blocking: splice's EAGAIN would not say which end to wait for."""
    try:
        return (stat.S_ISFIFO(os.fstat(src).st_mode) and os.get_blocking(src)
                and os.get_blocking(dst))
    except OSError:  # a closed fd: read/write says so as the end of that side
        return False


def _copy(src: int, dst: int) -> bool:
    while True:
        try:
            chunk = _read(src)
        except OSError:
            return False
        if not chunk:
            return False
        try:
            _write_all(dst, chunk)
        except OSError:
            return True


def _read(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, CHUNK)
        except BlockingIOError:  # a non-blocking descriptor the client gave: wait, not spin
            select.select([fd], [], [])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])
