"""A server as `mcp-rosetta check` talks to it (`Asker`), here a process (`Wire`): requests
out, answers by id, the rest of its stdout and the last lines of its stderr kept for the
report. A remote server's is check_remote.py's.

Must not decide what to ask or what an answer means (bridge/shell/check.py does); it only
frames lines, matches responses to requests, and answers the server's own requests with a
refusal (ping with {}), since check offers the server no client capabilities.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import signal
from collections.abc import Callable
from typing import Any

import orjson
import trio

from bridge.check_client import answer_server_request
from bridge.shell.fdio.lines import LineSplitter, Oversized
from bridge.shell.servers.child import Child
from bridge.shell.settings import Timing

NOISE_LINES = 5
"""How many of the lines on stdout that are not protocol messages the report shows."""
NOISE_WIDTH = 200
STDERR_LINES = 10
"""How many of the last lines of the server's stderr the report shows when it fails."""


class ServerGone(Exception):
    """The server closed its output (or exited) before it answered."""


def spawn_with_stderr(spawn: Callable[[], Child]) -> tuple[Child, int]:
    """The server started by `spawn` (the bridge's own spawn function, which pipes the
    server's stderr), and the read end of that pipe."""
    child = spawn()
    assert child.stderr is not None  # spawn_process always makes the pipe
    return child, child.stderr


class Asker(abc.ABC):
    """A server check talks to, wherever it is: requests out, answers matched by id, what is
    not protocol counted. `request` asks and waits; the kinds (a process's `Wire`, an
    endpoint's `check_remote.RemoteWire`) say how lines go and come."""

    kind = "an MCP server"
    """What the server should be, for a failure's question ("is this ... ?")."""

    def __init__(self) -> None:
        self.started = trio.current_time()
        self.first_byte: float | None = None
        """When the server's answers first held a byte, in trio's clock."""
        self.noise: list[str] = []
        self.noise_count = 0
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.closed = trio.Event()
        self.gone = False
        """The server closed its output (or exited) before it answered what it was asked."""
        self.asking: str | None = None
        """The method of the last request sent."""
        self.exit_code: int | None = None
        self.signalled = False
        """Whether it had to be sent SIGTERM (or SIGKILL) to end once asked to stop."""
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._next_id = 0

    @abc.abstractmethod
    async def run(self) -> None:
        """Read what the server says until it is stopped (in a nursery)."""

    @abc.abstractmethod
    async def send(self, message: dict[str, Any]) -> None:
        """Write one message to the server."""

    @abc.abstractmethod
    async def stop(self, timing: Timing) -> int:
        """Stop the server as the bridge does; its exit code."""

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The response to `message` (a request with an int id), None if none came in
        `timeout` seconds; ServerGone if the server closed its output first."""
        if self.closed.is_set():
            raise ServerGone
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[message["id"]] = send
        self.asking = message["method"]
        try:
            await self.send(message)
            with trio.move_on_after(timeout):
                async with receive:
                    with contextlib.suppress(trio.EndOfChannel):
                        return await receive.receive()
                    raise ServerGone
            return None
        finally:
            self._waiting.pop(message["id"], None)

    def _take(self, line: bytes | Oversized) -> dict[str, Any] | None:
        """One line from the server: an answer handed to its request, or what is not
        protocol counted; the reply to send when it is a request of the server's own."""
        message = _message(line)
        if message is None:
            self.noise_count += 1
            if len(self.noise) < NOISE_LINES:
                shown = f"({line.size} bytes)" if isinstance(line, Oversized) else _text(line)
                self.noise.append(shown[:NOISE_WIDTH])
        elif "method" in message and "id" in message:
            return answer_server_request(message)
        elif "method" not in message and (send := self._waiting.get(_int_id(message))):
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                send.send_nowait(message)  # a second answer to one id is not waited for
        return None

    def _closed(self) -> None:
        """The server's output ended: nothing more is answered."""
        self.closed.set()
        for send in self._waiting.values():
            send.close()


class Wire(Asker):
    """A started server process: `run` reads its stdout and stderr."""

    kind = "an MCP server on stdio"

    def __init__(self, child: Child, stderr: int, max_message_bytes: int) -> None:
        super().__init__()
        self.child = child
        self._stdin = trio.lowlevel.FdStream(child.stdin)
        self._stdout = trio.lowlevel.FdStream(child.stdout)
        self._stderr = trio.lowlevel.FdStream(stderr)
        self._lines = LineSplitter(max_message_bytes)

    async def run(self) -> None:
        """Read stdout and stderr until both close."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read_stderr)
            await self._read_stdout()

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self._stdin.send_all(orjson.dumps(message) + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            raise ServerGone from None

    async def stop(self, timing: Timing) -> int:
        """Stop the server as the bridge does: stdin closed, then SIGTERM, then SIGKILL to
        its group; its exit code. Its output pipes are closed after, which ends `run`."""
        with contextlib.suppress(OSError):
            await self._stdin.aclose()
        code = await self._ended(timing)
        for stream in (self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                await stream.aclose()
        return code

    async def _ended(self, timing: Timing) -> int:
        for grace, sig in ((timing.shutdown_grace, signal.SIGTERM),
                           (timing.kill_grace, signal.SIGKILL)):
            with trio.move_on_after(grace):
                return await self.child.wait()
            self.signalled = True
            self.child.signal_group(sig)
        self.child.kill()
        return await self.child.wait()

    async def _read_stdout(self) -> None:
        while chunk := await _receive(self._stdout):
            if self.first_byte is None:
                self.first_byte = trio.current_time()
            for line in self._lines.feed(chunk):
                reply = self._take(line)
                if reply is not None:
                    with contextlib.suppress(ServerGone):
                        await self.send(reply)
        self._closed()

    async def _read_stderr(self) -> None:
        rest = b""
        while chunk := await _receive(self._stderr):
            *lines, rest = (rest + chunk).split(b"\n")
            self.stderr_tail.extend(_text(line) for line in lines if line.strip())
            rest = rest[-NOISE_WIDTH * 4:]
        if rest.strip():
            self.stderr_tail.append(_text(rest))


async def _receive(stream: trio.lowlevel.FdStream) -> bytes:
    try:
        return await stream.receive_some(64 * 1024)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        return b""


def _message(line: bytes | Oversized) -> dict[str, Any] | None:
    """A JSON-RPC message object (batches count too), or None for anything else."""
    if isinstance(line, Oversized):
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return {"jsonrpc": "2.0", "batch": value}
    if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
        return value
    return None


def _int_id(message: dict[str, Any]) -> int:
    """The response's id if it is one check could have sent (a positive int), else 0."""
    ident = message.get("id")
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else 0


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip("\r")
