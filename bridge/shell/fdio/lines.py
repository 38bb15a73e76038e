"""Newline-delimited framing: split a byte stream into lines, and never hold one past a limit.

Must not decode JSON or look inside a line: the core gets the raw bytes (or, for a line over
the limit, its first and last bytes only).
"""

from __future__ import annotations

DEFAULT_LIMIT = 64 * 1024 * 1024
# What is kept of each end of a line over the limit: enough for the core to find its id, which
# writers put first or last.
HEAD_SIZE = 4096


class Oversized:
    """A line longer than the limit, discarded as it streamed in; `head` and `tail` are its
    first and last HEAD_SIZE bytes (all of it if shorter), `size` its length."""

    __slots__ = ("head", "size", "tail")

    def __init__(self, head: bytes, size: int, tail: bytes = b"") -> None:
        self.head = head
        self.size = size
        self.tail = tail or head[-HEAD_SIZE:]

    def grow(self, piece: bytes) -> None:
        """Count more of the line; its head takes what it still lacks of HEAD_SIZE, and its
        tail moves on."""
        if len(self.head) < HEAD_SIZE:
            self.head += piece[:HEAD_SIZE - len(self.head)]
        self.tail = (self.tail + piece[-HEAD_SIZE:])[-HEAD_SIZE:]
        self.size += len(piece)

    def __repr__(self) -> str:
        return f"Oversized({self.head[:40]!r}..., size={self.size})"


Line = bytes | Oversized


class LineSplitter:
    """Feed chunks, get complete lines without their "\\n" (and "\\r"); blank lines are dropped.

    A partial line is kept as a list of chunks and joined once when its newline arrives, so a
    line of n bytes costs O(n) however many chunks it spans. Once a partial line passes
    `limit` bytes it is dropped but for its two ends, and the rest of it is only counted: memory
    stays under the limit whatever a peer sends.
    """

    __slots__ = ("_held", "_limit", "_parts", "_skipping")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._held = 0
        self._skipping: Oversized | None = None

    def feed(self, chunk: bytes) -> list[Line]:
        if b"\n" not in chunk:
            self._hold(chunk)
            return []
        # One C-level split: a read of many small lines costs no Python loop per line.
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        first: Line = self._complete(pieces[0]) if self._parts or self._skipping else pieces[0]
        if tail:
            self._hold(tail)
        if len(chunk) > self._limit:  # only then can a line within the chunk be too long
            return self._checked(first, pieces)
        if isinstance(first, Oversized):
            return [first, *_kept(pieces[1:])]
        pieces[0] = first
        return _kept(pieces)

    def finish(self) -> list[Line]:
        """At EOF: the unterminated last line, if any (a peer may omit the final newline)."""
        if not self._parts and self._skipping is None:
            return []
        line = self._complete(b"")
        return [line] if isinstance(line, Oversized) else _kept([line])

    def _hold(self, piece: bytes) -> None:
        """Keep the start of a line whose newline has not come yet, or count it if too long."""
        if self._skipping is not None:
            self._skipping.grow(piece)
            return
        if piece:
            self._parts.append(piece)
            self._held += len(piece)
        if self._held > self._limit:
            self._skipping = Oversized(_head(self._parts), self._held, _tail(self._parts))
            self._parts.clear()
            self._held = 0

    def _complete(self, piece: bytes) -> Line:
        """The held line, ended by `piece` (what precedes its newline)."""
        skipping = self._skipping
        if skipping is not None:
            self._skipping = None
            skipping.grow(piece)
            return skipping
        self._parts.append(piece)
        size = self._held + len(piece)
        line = Oversized(_head(self._parts), size, _tail(self._parts)) if size > self._limit \
            else b"".join(self._parts)
        self._parts.clear()
        self._held = 0
        return line

    def _checked(self, first: Line, pieces: list[bytes]) -> list[Line]:
        """The lines of a chunk longer than the limit, each measured against it."""
        lines: list[Line] = []
        for line in [first, *pieces[1:]]:
            if type(line) is bytes and len(line) > self._limit:
                line = Oversized(line[:HEAD_SIZE], len(line), line[-HEAD_SIZE:])
            lines += [line] if type(line) is Oversized else _kept([line])  # type: ignore[list-item]
        return lines


def _head(parts: list[bytes]) -> bytes:
    head = parts[0][:HEAD_SIZE]
    for part in parts[1:]:
        if len(head) >= HEAD_SIZE:
            break
        head += part[:HEAD_SIZE - len(head)]
    return head


def _tail(parts: list[bytes]) -> bytes:
    tail = parts[-1][-HEAD_SIZE:]
    for part in reversed(parts[:-1]):
        if len(tail) >= HEAD_SIZE:
            break
        tail = part[-(HEAD_SIZE - len(tail)):] + tail
    return tail


def _kept(lines: list[bytes]) -> list[Line]:
    """Without their "\\r", and without blank lines (isspace() stops at the first non-space
    byte, so this is cheap on real messages; removesuffix returns the line itself if no "\\r")."""
    return [line.removesuffix(b"\r") for line in lines if line and not line.isspace()]
