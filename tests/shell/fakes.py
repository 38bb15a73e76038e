"""Stand-ins for the shell's tests: scripted cores, an in-memory child over os.pipe pairs, peers.

Must not touch real processes or the real core: those have tests of their own. Must not wait
without a bound: every helper that waits gives up after WAIT seconds (of trio's clock, virtual
under autojump_clock), so a hang fails a test instead of stalling the run.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

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
from bridge.shell.fdio.lines import LineSplitter

OTHER = {"client": "server", "server": "client"}
# The longest any single wait in a test may take before it counts as a hang.
WAIT = 10.0


# Cores ------------------------------------------------------------------------------------


class EchoCore:
    """Passes every message to the other side; stops on client EOF, a signal or child exit.

    Records every event with the time the driver gave; tests wait on the record.
    """

    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []
        self.deadline: float | None = None
        self._changed = trio.Event()

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle(self, event: Event, now: float) -> list[Action]:
        self.events.append((now, event))
        self._changed.set()
        self._changed = trio.Event()
        return self.react(event, now)

    def react(self, event: Event, now: float) -> list[Action]:
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

    def of(self, kind: type) -> list[tuple[float, Any]]:
        """The recorded events of one type, with their times."""
        return [(now, event) for now, event in self.events if isinstance(event, kind)]

    async def wait_for(self, done: Callable[[], bool], what: str) -> None:
        with trio.fail_after(WAIT):
            while not done():
                await self._changed.wait()


# Byte streams -----------------------------------------------------------------------------


class LineStream:
    """One side of a pipe (or socket), driven by the test: write lines, read whole lines."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None, *,
                 stream: trio.SocketStream | None = None) -> None:
        """Over two fds (either may be None), or over one trio socket stream."""
        self._in: Any = trio.lowlevel.FdStream(read_fd) if read_fd is not None else stream
        self._out: Any = trio.lowlevel.FdStream(write_fd) if write_fd is not None else stream
        self._splitter = LineSplitter()
        self._pending: deque[bytes] = deque()

    async def send(self, *lines: bytes) -> None:
        await self.send_raw(b"".join(line + b"\n" for line in lines))

    async def send_raw(self, data: bytes) -> None:
        assert self._out is not None
        with trio.fail_after(WAIT):
            await self._out.send_all(data)

    async def line(self, wait: float = WAIT) -> bytes:
        """The next line; EOFError at the end. TooSlowError after `wait` seconds."""
        assert self._in is not None
        with trio.fail_after(wait):
            while not self._pending:
                chunk = await self._in.receive_some(1 << 20)
                if not chunk:
                    assert not self._splitter.finish(), "the stream ended inside a line"
                    raise EOFError
                self._pending.extend(self._splitter.feed(chunk))  # type: ignore[arg-type]
        return self._pending.popleft()

    async def lines(self, count: int) -> list[bytes]:
        return [await self.line() for _ in range(count)]

    async def expect_eof(self) -> None:
        try:
            line = await self.line()
        except EOFError:
            return
        raise AssertionError(f"expected EOF, got {line[:80]!r}")

    async def close_writing(self) -> None:
        if isinstance(self._out, trio.SocketStream):
            await self._out.send_eof()
        elif self._out is not None:
            await self._out.aclose()
        self._out = None

    async def close_reading(self) -> None:
        if self._in is not None:
            await self._in.aclose()
            self._in = None

    async def aclose(self) -> None:
        await self.close_writing()
        await self.close_reading()


def ids(lines: list[bytes]) -> list[Any]:
    return [decode(line)["id"] for line in lines]


# The child --------------------------------------------------------------------------------


class FakeChild:
    """A child process in memory: its pipes are real os.pipe pairs, its signals are recorded.

    `stdin`/`stdout` are the bridge's ends (the supervisor owns and closes them). A task plays
    the process's side of stdin: lines go to `received` until `serve` turns the child into an
    echo server. Behaviour: `ignore_eof` (stays alive when stdin ends), `ignore_term` (SIGTERM
    is recorded but does nothing), `reads_stdin=False` (never reads, so the bridge's writes
    fill the pipe), `serving`/`farewell` (serve from the start), `linger` (seconds between
    stdin EOF and exiting). Dying closes the child's end of both pipes, as a real exit does.
    """

    _pids = itertools.count(1001)

    def __init__(self, nursery: trio.Nursery, *, ignore_eof: bool = False,
                 ignore_term: bool = False, reads_stdin: bool = True, serving: bool = False,
                 farewell: bytes | None = None, linger: float = 0.0) -> None:
        self.pid = next(FakeChild._pids)
        self.ignore_eof = ignore_eof
        self.ignore_term = ignore_term
        self.linger = linger
        stdin_rx, self.stdin = os.pipe()
        self.stdout, stdout_tx = os.pipe()
        stderr, stderr_tx = os.pipe()
        self.stderr: int | None = stderr
        self._stderr_tx: int | None = stderr_tx
        self._process = LineStream(stdin_rx, stdout_tx)  # the process's own ends
        self.code: int | None = None
        self._exited = trio.Event()
        self.signals: list[tuple[float, signal.Signals]] = []
        self.serving = serving
        self.farewell = farewell
        self._serve = trio.Event()  # what happens at stdin EOF waits for serve()
        if serving:
            self._serve.set()
        self.seen: list[bytes] = []
        """Every line the bridge wrote to stdin, echoed or not."""
        self._received: deque[bytes | None] = deque()
        self._arrived = trio.Event()
        self._scope = trio.CancelScope()
        nursery.start_soon(self._play, reads_stdin, name=f"fake-child-{self.pid}")

    # The Child protocol

    def poll(self) -> int | None:
        return self.code

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.code is not None
        return self.code

    def signal_group(self, sig: signal.Signals) -> None:
        if self.code is not None:
            return  # no such process any more
        self.signals.append((trio.current_time(), sig))
        if sig == signal.SIGKILL or not self.ignore_term:
            self.exit(-sig)

    def group_alive(self) -> bool:
        return self.code is None

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)

    # Behaviour

    def exit(self, code: int) -> None:
        if self.code is not None:
            return
        self.code = code
        self._scope.cancel()  # the process's side of its pipes closes, as on a real exit
        self.close_stderr()
        self._exited.set()

    def complain(self, data: bytes) -> None:
        """Write `data` to stderr (a pipe holds far more than a test writes)."""
        if self._stderr_tx is not None:
            os.write(self._stderr_tx, data)

    def close_stderr(self) -> None:
        if self._stderr_tx is not None:
            os.close(self._stderr_tx)
            self._stderr_tx = None

    async def write(self, *lines: bytes) -> None:
        """Write lines to stdout (nothing, once dead)."""
        if self.code is None:
            await self._process.send(*lines)

    def serve(self, farewell: bytes | None = None) -> None:
        """From now on echo each stdin line; at stdin EOF write `farewell` and exit 0."""
        self.serving = True
        self.farewell = farewell
        self._serve.set()

    async def lines(self, count: int) -> list[bytes]:
        """The next `count` lines the bridge wrote to stdin (those not echoed)."""
        got: list[bytes] = []
        for _ in range(count):
            line = await self._next()
            assert line is not None, f"stdin ended after {len(got)} of {count} lines"
            got.append(line)
        return got

    async def expect_eof(self) -> None:
        line = await self._next()
        assert line is None, f"expected stdin EOF, got {line[:80]!r}"

    async def _next(self) -> bytes | None:
        with trio.fail_after(WAIT):
            while not self._received:
                await self._arrived.wait()
        return self._received.popleft()

    def _put(self, line: bytes | None) -> None:
        self._received.append(line)
        self._arrived.set()
        self._arrived = trio.Event()

    async def _play(self, reads_stdin: bool) -> None:
        with self._scope:
            try:
                if not reads_stdin:
                    await trio.sleep_forever()
                while True:
                    try:
                        line = await self._process.line(math.inf)  # a process waits
                    except EOFError:
                        break
                    self.seen.append(line)
                    if self.serving:
                        await self._process.send(line)
                    else:
                        self._put(line)
                self._put(None)
                await self._at_eof()
            finally:
                with trio.CancelScope(shield=True):
                    await self._process.aclose()

    async def _at_eof(self) -> None:
        await self._serve.wait()
        if self.farewell is not None:
            await self._process.send(self.farewell)
        if not self.ignore_eof:
            await trio.sleep(self.linger)
            self.exit(0)
        else:
            await trio.sleep_forever()


class Spawner:
    """A spawn function handing out children (made by `factory`), remembering them."""

    def __init__(self, factory: Callable[[trio.Nursery], Any] = FakeChild) -> None:
        self.factory = factory
        self.children: list[Any] = []
        self.nursery: trio.Nursery | None = None
        self._changed = trio.Event()

    def __call__(self) -> Any:
        assert self.nursery is not None, "the harness gives the spawner its nursery"
        child = self.factory(self.nursery)
        self.children.append(child)
        self._changed.set()
        self._changed = trio.Event()
        return child

    async def nth(self, index: int) -> Any:
        """The `index`th child spawned, once it exists."""
        with trio.fail_after(WAIT):
            while len(self.children) <= index:
                await self._changed.wait()
        return self.children[index]

    def close(self) -> None:
        """Test teardown: nothing spawned outlives the test."""
        for child in self.children:
            child.kill()
