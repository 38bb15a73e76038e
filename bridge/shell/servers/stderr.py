"""A server's stderr: read it always, log each line as `server.stderr`, keep its last lines.

Must not block the server nor the session: it reads whatever comes, cuts a line past
LINE_MAX, and when lines come faster than the log should take them (RATE, after a BURST) it
drops them and logs how many. Must not interpret what the server says, but for one thing the
core tells it (`probe.names_the_probe`): the lines that came together with one naming the
probe, a legacy server's complaint about a request it does not know (an `mcp` 1.x server
writes some 90 lines), are one `server.stderr` event that counts them; each line is still
logged at debug level and kept in the tail.
"""

from __future__ import annotations

from collections import deque

import trio

from bridge.core.probe import PROBE_COMPLAINT, names_the_probe
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
QUIET = 0.05
"""Seconds without a byte that end a burst about the probe: its lines come in one write, or
in a few close together."""


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
        self._about_probe: list[str] = []
        """The lines of a burst that names the probe, held until it is over."""

    async def run(self) -> None:
        restore = fdio.make_nonblocking(self._fd)
        try:
            while True:
                chunk = fdio.read_now(self._fd)
                if chunk is None:
                    await self._readable()
                    continue
                if not chunk:
                    break
                self._feed(chunk)
        finally:
            fdio.close_quietly(self._fd, blocking=restore)
            self.flush()
            self.ended.set()

    async def _readable(self) -> None:
        """Wait for the next bytes; a burst about the probe is over after QUIET without."""
        if not self._about_probe:
            await fdio.wait_readable(self._fd)
            return
        with trio.move_on_after(QUIET) as quiet:
            await fdio.wait_readable(self._fd)
        if quiet.cancelled_caught:
            self._summarise()

    def flush(self) -> None:
        """Log what is held of a line with no newline yet, a burst about the probe, and the
        count of dropped lines."""
        if self._held or self._cut:
            self._lines([self._line()])
        if self._about_probe:
            self._summarise()
        self._report_drops()

    def _feed(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        lines = []
        for piece in complete:
            self._hold(piece)
            lines.append(self._line())
        self._hold(rest)
        self._lines(lines)

    def _hold(self, piece: bytes) -> None:
        room = LINE_MAX - self._size
        if len(piece) > room:
            self._cut += len(piece) - room
            piece = piece[:room]
        if piece:
            self._held.append(piece)
            self._size += len(piece)

    def _line(self) -> tuple[str, int] | None:
        """The line held, decoded, and how many of its bytes were cut; None if empty."""
        data, cut = b"".join(self._held).removesuffix(b"\r"), self._cut
        self._held, self._size, self._cut = [], 0, 0
        if not data and not cut:
            return None
        line = data.decode("utf-8", "backslashreplace")
        self.tail.append(line)
        return line, cut

    def _lines(self, lines: list[tuple[str, int] | None]) -> None:
        """Log the lines that came together: each, or all held as a burst about the probe
        when one names it (or such a burst is under way)."""
        read = [line for line in lines if line is not None]
        if self._about_probe or any(names_the_probe(line) for line, _ in read):
            self._about_probe += [line for line, _ in read]
            if len(self._about_probe) >= BURST:
                self._summarise()
            return
        for line, cut in read:
            if not self._take():
                self._dropped += 1
                continue
            self._report_drops()
            if cut:
                self._log.info("server.stderr", line=line, cut=cut)
            else:
                self._log.info("server.stderr", line=line)

    def _summarise(self) -> None:
        """One event for a burst about the probe: its first line and how many there were."""
        lines, self._about_probe = self._about_probe, []
        if self._take():
            self._report_drops()
            self._log.info("server.stderr", line=lines[0], lines=len(lines),
                           about=PROBE_COMPLAINT)
        else:
            self._dropped += 1
        for line in lines:
            self._log.debug("server.stderr", line=line)

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
