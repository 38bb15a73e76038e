"""The demo's view of a process: JSON lines over pipes with timeouts, and the server's transcript.

Must not interpret MCP beyond matching a response to its request id.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

TIMEOUT = 10.0
Message = dict[str, Any]


class DemoFailed(Exception):
    """Something did not happen as the demo expects; the message says what."""


class PipedPeer:
    """A subprocess we talk to over its stdin/stdout; a thread turns its stdout into messages."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=stderr, env=env)
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, message: Message) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive_response(self, ident: Any) -> list[Message]:
        """Everything received up to and including the response to request `ident`."""
        seen: list[Message] = []
        while True:
            try:
                line = self._lines.get(timeout=TIMEOUT)
            except queue.Empty:
                raise DemoFailed(f"no answer to request {ident} within {TIMEOUT:.0f} s") from None
            if not line:
                raise DemoFailed(f"the process closed its stdout before answering {ident}")
            message = json.loads(line)
            seen.append(message)
            if isinstance(message, dict) and message.get("id") == ident and "method" not in message:
                return seen

    def close(self) -> int:
        """Close its stdin (how a stdio peer is asked to stop) and wait for its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise DemoFailed(f"the process did not exit within {TIMEOUT:.0f} s") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ServerTranscript:
    """The lines the demo server appended ("in" or "out" + JSON), read as they come."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def take(self) -> list[tuple[str, Message]]:
        try:
            with open(self.path, "rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next call
        self._offset += end
        entries = []
        for line in data[:end].decode().splitlines():
            direction, _, text = line.partition(" ")
            entries.append((direction, json.loads(text)))
        return entries
