"""A server's stderr: read it always, log each line as `server.stderr`, keep its last lines.

Must not block the server nor the session: it reads whatever comes, cuts a line past
LINE_MAX, and when lines come faster than the log should take them (RATE, after a BURST) it
drops them and logs how many. Must not interpret what the server says.
"""

from __future__ import annotations

from collections import deque

import trio

from bridge.shell.fdio import fdio
from bridge.shell.logs import Logger

LINE_MAX = 8 * 1024
"""Bytes of one line that are logged; the rest is counted (`cut`)."""
TAIL_LINES = 20
"""Lines kept for ChildExited.stderr_tail: the fault of a server that exits is near the end,
but not always last (npm writes its 404 a dozen lines before it ends)."""
RATE = 1000.0
BURST = 1000
"""Lines per second logged, after a burst of BURST lines at once; beyond, lines are counted."""


class StderrReader:
    """One incarnation's stderr. `run` reads it to EOF; `flush` logs an unfinished last line."""

    def __init__(self, fd: int, log: Logger) -> None:
        self._fd = fd
        self._log = log
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.ended = trio.Event()
        self._held: list[bytes] = []
        self._size = 0
        self._cut = 0
        self._tokens = float(BURST)
        self._refilled = trio.current_time()
        self._dropped = 0

    async def run(self) -> None:
        restore = fdio.make_nonblocking(self._fd)
        try:
            while True:
                chunk = fdio.read_now(self._fd)
                if chunk is None:
                    await fdio.wait_readable(self._fd)
                    continue
                if not chunk:
                    break
                self._feed(chunk)
        finally:
            fdio.close_quietly(self._fd, blocking=restore)
            self.flush()
            self.ended.set()

    def flush(self) -> None:
        """Log what is held of a line with no newline yet, and the count of dropped lines."""
        if self._held or self._cut:
            self._line()
        self._report_drops()

    def _feed(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            self._hold(piece)
            self._line()
        self._hold(rest)

    def _hold(self, piece: bytes) -> None:
        room = LINE_MAX - self._size
        if len(piece) > room:
            self._cut += len(piece) - room
            piece = piece[:room]
        if piece:
            self._held.append(piece)
            self._size += len(piece)

    def _line(self) -> None:
        data, cut = b"".join(self._held).removesuffix(b"\r"), self._cut
        self._held, self._size, self._cut = [], 0, 0
        if not data and not cut:
            return
        line = data.decode("utf-8", "backslashreplace")
        self.tail.append(line)
        if not self._take():
            self._dropped += 1
            return
        self._report_drops()
        if cut:
            self._log.info("server.stderr", line=line, cut=cut)
        else:
            self._log.info("server.stderr", line=line)

    def _take(self) -> bool:
        now = trio.current_time()
        self._tokens = min(float(BURST), self._tokens + (now - self._refilled) * RATE)
        self._refilled = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def _report_drops(self) -> None:
        if self._dropped:
            self._log.warning("server.stderr_dropped", lines=self._dropped,
                              reason="the server wrote to stderr faster than the log takes")
            self._dropped = 0
