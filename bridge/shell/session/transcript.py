"""The transcript: every message of a session's four legs, one JSON line each, in a file.

Must not stall the session nor change a message: lines are buffered and written once per
batch of events (the driver flushes), each message is spliced in as the bytes that crossed
(valid JSON) or as a string (anything else), and nothing here runs when there is no
transcript (the driver binds other functions). Must stay cheap to import (see process.py).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from bridge.errors import ConfigError

CLIENT_IN = b"client>bridge"
SERVER_OUT = b"bridge>server"
SERVER_IN = b"server>bridge"
CLIENT_OUT = b"bridge>client"
"""The legs: what the client sent, what the bridge sent the server, and back."""

_MODE = 0o600  # messages may hold secrets (tokens in arguments, results)


def open_transcript(path: str) -> int:
    """An fd appending to `path` (made 0600 if new); ConfigError naming why it cannot be."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, _MODE)
    except OSError as exc:
        raise ConfigError(f"cannot open transcript {path}: {exc.strerror or exc}; give a "
                          "file in a directory the bridge may write to") from None


def check_transcript(path: str | None) -> None:
    """ConfigError now, before anything starts, if `path` cannot be appended to."""
    if path is not None:
        os.close(open_transcript(path))


class Transcript:
    """One session's writer. `record` buffers; `flush` writes the buffer in one call."""

    def __init__(self, fd: int, session: int | None = None, log: Any = None) -> None:
        self._fd = fd
        self._session = b"" if session is None else b',"session":%d' % session
        self._log = log
        self._buffer: list[bytes] = []
        self.failed = ""
        """Why writing stopped (the file became unwritable), once it did."""

    @classmethod
    def open(cls, path: str, session: int | None = None, log: Any = None) -> Transcript:
        """`log` (a structlog logger) hears once if writing fails."""
        return cls(open_transcript(path), session, log)

    def record(self, leg: bytes, line: bytes | None, oversized: int = 0) -> None:
        """One message crossing `leg`: `line` without its newline, or (None) one of
        `oversized` bytes that the bridge discarded unread."""
        stamp = time.time()
        head = b'{"time":%.6f,"leg":"%s"%s,"message":' % (stamp, leg, self._session)
        self._buffer.append(head + _as_json(line, oversized) + b"}\n")

    def flush(self) -> None:
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        if self.failed:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:  # a full disk must not cost the session
            self.failed = exc.strerror or str(exc)
            if self._log is not None:
                self._log.error("transcript.failed", reason=self.failed,
                                fix="free space or fix the file; the session goes on without it")

    def close(self) -> None:
        self.flush()
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _as_json(line: bytes | None, oversized: int) -> bytes:
    """`line` itself if it is JSON as the core reads it, else a JSON string of it."""
    if line is None:
        return b'{"oversized_bytes":%d}' % oversized
    from bridge.core.codec import DecodeError, decode, encode  # loaded by then (the core's)

    try:
        decode(line)
    except DecodeError:
        return encode(line.decode("utf-8", "backslashreplace")).rstrip(b"\n")
    return line
