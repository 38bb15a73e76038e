"""Stand-ins for the shell's tests: a scripted core, an in-memory child, line-level peers.

Must not touch real processes or the real core: those have tests of their own.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable

import trio
import trio.testing

from bridge.core.codec import decode
from bridge.core.events import (
    Action,
    ChildExited,
    Event,
    MessageReceived,
    PeerClosed,
    Send,
    ShutdownRequested,
    Stop,
)
from bridge.shell.lines import LineSplitter

OTHER = {"client": "server", "server": "client"}


class EchoCore:
    """Passes every message to the other side; stops on client EOF, a signal or child exit."""

    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []
        self.deadline: float | None = None

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle(self, event: Event, now: float) -> list[Action]:
        self.events.append((now, event))
        return self.react(event)

    def react(self, event: Event) -> list[Action]:
        match event:
            case MessageReceived(side=side, message=line):
                return [Send(OTHER[side], decode(line))]  # type: ignore[arg-type]
            case PeerClosed(side="client") | ShutdownRequested():
                return [Stop(0)]
            case ChildExited(code=code):
                return [Stop(code)]
        return []

    def kinds(self) -> list[str]:
        return [type(event).__name__ for _, event in self.events]


class FakeChild:
    """A child process in memory: pipes are memory streams, signals are recorded."""

    _next_pid = 1000

    def __init__(self, *, ignore_eof: bool = False, ignore_term: bool = False) -> None:
        FakeChild._next_pid += 1
        self.pid = FakeChild._next_pid
        self.ignore_eof = ignore_eof
        self.ignore_term = ignore_term
        self.stdin: trio.abc.SendStream
        self.stdin_rx: trio.abc.ReceiveStream
        self.stdin, self.stdin_rx = trio.testing.memory_stream_one_way_pair()
        self.stdout_tx, self.stdout = trio.testing.memory_stream_one_way_pair()
        self.code: int | None = None
        self.signals: list[tuple[float, signal.Signals]] = []
        self._exited = trio.Event()

    def poll(self) -> int | None:
        return self.code

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.code is not None
        return self.code

    def signal_group(self, sig: signal.Signals) -> None:
        if self.code is not None:
            return
        self.signals.append((trio.current_time(), sig))
        if sig == signal.SIGKILL or not self.ignore_term:
            self.exit(-sig)

    def group_alive(self) -> bool:
        return self.code is None

    def exit(self, code: int) -> None:
        if self.code is None:
            self.code = code
            self.stdout_tx.close()
            self._exited.set()

    async def write(self, *lines: bytes) -> None:
        await self.stdout_tx.send_all(b"".join(line + b"\n" for line in lines))

    async def serve(self, farewell: bytes | None = None) -> None:
        """Act as the server: echo each line of stdin; at its EOF write `farewell` and exit 0
        (unless stubborn)."""
        async for line in lines_of(self.stdin_rx):
            if self.code is None:
                await self.write(line)
        if farewell is not None:
            await self.write(farewell)
        if not self.ignore_eof:
            self.exit(0)


class Spawner:
    """A spawn function handing out FakeChild instances (made by `factory`), remembering them."""

    def __init__(self, factory: Callable[[], FakeChild] = FakeChild) -> None:
        self.factory = factory
        self.children: list[FakeChild] = []
        self.started = trio.Event()

    async def __call__(self) -> FakeChild:
        child = self.factory()
        self.children.append(child)
        self.started.set()
        return child


async def lines_of(stream: trio.abc.ReceiveStream) -> AsyncIterator[bytes]:
    splitter = LineSplitter()
    while chunk := await stream.receive_some(65536):
        for line in splitter.feed(bytes(chunk)):
            yield line


class LineReader:
    """Reads whole lines from a stream, one at a time (for asserting what a peer received)."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.splitter = LineSplitter()
        self.pending: list[bytes] = []

    async def line(self) -> bytes:
        while not self.pending:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError
            self.pending.extend(self.splitter.feed(bytes(chunk)))
        return self.pending.pop(0)

    async def lines(self, count: int) -> list[bytes]:
        return [await self.line() for _ in range(count)]
