"""Newline-delimited framing: split a byte stream into lines, however long the lines are.

Must not decode JSON or look inside a line: the core gets the raw bytes.
"""

from __future__ import annotations

# A pipe's whole capacity per read: a MiB line takes 16 reads. Larger would cost every small
# message more than it saves: a read buffer past glibc's mmap threshold (128 KiB) is an
# mmap and a munmap per read, paid by every small message (issue 6).
READ_SIZE = 64 * 1024


class LineSplitter:
    """Feed chunks, get complete lines without their "\\n" (and "\\r"); blank lines are dropped.

    A partial line is kept as a list of chunks and joined once when its newline arrives, so a
    line of n bytes costs O(n) however many chunks it spans (no quadratic re-joining).
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        nl = chunk.find(b"\n")
        if nl < 0:
            if chunk:
                self._parts.append(chunk)
            return lines
        if self._parts:
            self._parts.append(chunk[:nl])
            _keep(lines, b"".join(self._parts))
            self._parts.clear()
        else:
            _keep(lines, chunk[:nl])
        start = nl + 1
        while (nl := chunk.find(b"\n", start)) >= 0:
            _keep(lines, chunk[start:nl])
            start = nl + 1
        if start < len(chunk):
            self._parts.append(chunk[start:])
        return lines

    def finish(self) -> list[bytes]:
        """At EOF: the unterminated last line, if any (a peer may omit the final newline)."""
        lines: list[bytes] = []
        if self._parts:
            _keep(lines, b"".join(self._parts))
            self._parts.clear()
        return lines


def _keep(lines: list[bytes], line: bytes) -> None:
    if line.endswith(b"\r"):
        line = line[:-1]
    # isspace() stops at the first non-space byte, so this is cheap on real messages.
    if line and not line.isspace():
        lines.append(line)
