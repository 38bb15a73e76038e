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
        if b"\n" not in chunk:
            if chunk:
                self._parts.append(chunk)
            return []
        # One C-level split: a read of many small lines costs no Python loop per line.
        pieces = chunk.split(b"\n")
        if self._parts:
            self._parts.append(pieces[0])
            pieces[0] = b"".join(self._parts)
            self._parts.clear()
        if tail := pieces.pop():
            self._parts.append(tail)
        return _kept(pieces)

    def finish(self) -> list[bytes]:
        """At EOF: the unterminated last line, if any (a peer may omit the final newline)."""
        if not self._parts:
            return []
        line = b"".join(self._parts)
        self._parts.clear()
        return _kept([line])


def _kept(lines: list[bytes]) -> list[bytes]:
    """Without their "\\r", and without blank lines (isspace() stops at the first non-space
    byte, so this is cheap on real messages; removesuffix returns the line itself if no "\\r")."""
    return [line.removesuffix(b"\r") for line in lines if line and not line.isspace()]
