"""Stand-ins for the shell's tests: scripted cores, an in-memory child over os.pipe pairs, peers.

Must not touch real processes or the real core: those have tests of their own. Must not wait
without a bound: every helper that blocks gives up after WAIT seconds, so a hang fails a test.
"""

from __future__ import annotations

import itertools
import os
import queue
import select
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

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
    TimerFired,
)
from bridge.shell.child import Child
from bridge.shell.lines import LineSplitter

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
        self._changed = threading.Condition()

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle(self, event: Event, now: float) -> list[Action]:
        with self._changed:
            self.events.append((now, event))
            self._changed.notify_all()
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
        with self._changed:
            return [type(event).__name__ for _, event in self.events]

    def of(self, kind: type) -> list[tuple[float, Any]]:
        """The recorded events of one type, with their times."""
        with self._changed:
            return [(now, event) for now, event in self.events if isinstance(event, kind)]

    def wait_for(self, done: Callable[[], bool], what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(done, WAIT), f"the core never saw {what}"


class Interrupt(BaseException):
    """What a KeyboardInterrupt (or SystemExit) in the clock thread looks like to serve."""


class InterruptCore(EchoCore):
    """Echoes; a client message {"id":"interrupt"} makes the next timer raise Interrupt.

    The timer fires on the clock thread, so the interruption escapes from serve's own thread
    the way a KeyboardInterrupt would (nothing in the bridge can catch it as an Exception).
    """

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.message == b'{"id":"interrupt"}':
            self.deadline = 0.0  # overdue: the clock must wake up for it
            return []
        if isinstance(event, TimerFired):
            raise Interrupt
        return super().react(event, now)


# Byte streams -----------------------------------------------------------------------------


def wait_for_fd(fd: int, events: int, deadline: float, what: str) -> None:
    poller = select.poll()
    poller.register(fd, events)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(what)
        if poller.poll(remaining * 1000):
            return


def write_all(fd: int, data: bytes, timeout: float = WAIT) -> None:
    """Write all of `data` to the non-blocking `fd`; TimeoutError if the reader stalls."""
    deadline = time.monotonic() + timeout
    view = memoryview(data)
    while view:
        wait_for_fd(fd, select.POLLOUT, deadline, f"nobody read {len(view)} bytes")
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[written:]


class LineReader:
    """Reads whole lines from an fd, one at a time (for asserting what a peer received)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.splitter = LineSplitter()
        self.pending: deque[bytes] = deque()

    def line(self, timeout: float = WAIT) -> bytes:
        deadline = time.monotonic() + timeout
        while not self.pending:
            wait_for_fd(self.fd, select.POLLIN, deadline, "no line arrived")
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                assert not self.splitter.finish(), "the stream ended inside a line"
                raise EOFError
            self.pending.extend(self.splitter.feed(chunk))
        return self.pending.popleft()

    def lines(self, count: int) -> list[bytes]:
        return [self.line() for _ in range(count)]

    def expect_eof(self) -> None:
        try:
            line = self.line()
        except EOFError:
            return
        raise AssertionError(f"expected EOF, got {line[:80]!r}")


# The child --------------------------------------------------------------------------------


class FakeChild:
    """A child process in memory: its pipes are real os.pipe pairs, its signals are recorded.

    `stdin`/`stdout` are the bridge's ends (the supervisor owns and closes them). A thread
    plays the process's side of stdin: lines go to `received` (None marks EOF) until `serve`
    turns the child into an echo server. Behaviour: `ignore_eof` (stays alive when stdin ends),
    `ignore_term` (SIGTERM is recorded but does nothing), `reads_stdin=False` (never reads, so
    the bridge's writes fill the pipe), `serving`/`farewell` (serve from the start), `linger`
    (seconds between stdin EOF and exiting). Dying closes the child's end of both pipes, as a
    real exit does.
    """

    _pids = itertools.count(1001)

    def __init__(self, *, ignore_eof: bool = False, ignore_term: bool = False,
                 reads_stdin: bool = True, serving: bool = False,
                 farewell: bytes | None = None, linger: float = 0.0) -> None:
        self.pid = next(FakeChild._pids)
        self.ignore_eof = ignore_eof
        self.ignore_term = ignore_term
        self.linger = linger
        self._stdin_rx, self.stdin = os.pipe()
        self.stdout, self._stdout_tx = os.pipe()
        os.set_blocking(self._stdout_tx, False)
        self._dead_r, self._dead_w = os.pipe()
        self._lock = threading.Lock()
        self._exited = threading.Event()
        self._serving = serving
        self._farewell = farewell
        self._eof = False
        self.code: int | None = None
        self.signals: list[tuple[float, signal.Signals]] = []
        self.received: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[bytes] = []
        """Every line the bridge wrote to stdin, echoed or not."""
        self._thread = threading.Thread(target=self._read_stdin, args=(reads_stdin,),
                                        name=f"fake-child-{self.pid}", daemon=True)
        self._thread.start()

    # The Child protocol

    def poll(self) -> int | None:
        return self.code

    def wait(self, timeout: float | None = None) -> int | None:
        self._exited.wait(timeout)
        return self.code

    def signal_group(self, sig: signal.Signals) -> None:
        with self._lock:
            if self.code is not None:
                return  # no such process any more
            self.signals.append((time.monotonic(), sig))
        if sig == signal.SIGKILL or not self.ignore_term:
            self.exit(-sig)

    def group_alive(self) -> bool:
        return self.code is None

    # Behaviour

    def exit(self, code: int) -> None:
        with self._lock:
            if self.code is not None:
                return
            self.code = code
            os.close(self._stdout_tx)
            os.write(self._dead_w, b"x")  # the stdin thread stops and closes its end
        self._exited.set()

    def write(self, *lines: bytes) -> None:
        """Write lines to stdout (nothing, once dead); TimeoutError if the bridge stops reading."""
        with self._lock:
            if self.code is None:
                write_all(self._stdout_tx, b"".join(line + b"\n" for line in lines))

    def serve(self, farewell: bytes | None = None) -> None:
        """From now on echo each stdin line; at stdin EOF write `farewell` and exit 0 (unless
        `ignore_eof`)."""
        with self._lock:
            self._serving = True
            self._farewell = farewell
            eof = self._eof
        if eof:
            self._at_eof()

    def lines(self, count: int) -> list[bytes]:
        """The next `count` lines the bridge wrote to stdin (those not echoed)."""
        got: list[bytes] = []
        for _ in range(count):
            line = self._next()
            assert line is not None, f"stdin ended after {len(got)} of {count} lines"
            got.append(line)
        return got

    def expect_eof(self) -> None:
        line = self._next()
        assert line is None, f"expected stdin EOF, got {line[:80]!r}"

    def _next(self) -> bytes | None:
        try:
            return self.received.get(timeout=WAIT)
        except queue.Empty:
            raise TimeoutError("nothing more arrived on the child's stdin") from None

    def close(self) -> None:
        """Test teardown: die if still alive, and release the fake's own fds."""
        self.exit(-signal.SIGKILL)
        self._thread.join(WAIT)
        if not self._thread.is_alive():
            os.close(self._dead_r)
            os.close(self._dead_w)

    def _read_stdin(self, reads_stdin: bool) -> None:
        poller = select.poll()
        poller.register(self._dead_r, select.POLLIN)
        if reads_stdin:
            poller.register(self._stdin_rx, select.POLLIN)
        splitter = LineSplitter()
        try:
            while True:
                ready = {fd for fd, _ in poller.poll()}
                if self._dead_r in ready:
                    return
                chunk = os.read(self._stdin_rx, 65536)
                if not chunk:
                    break
                for line in splitter.feed(chunk):
                    self._got(line)
            for line in splitter.finish():
                self._got(line)
            with self._lock:
                self._eof = True
                serving = self._serving
            self.received.put(None)
            if serving:
                self._at_eof()
        finally:
            os.close(self._stdin_rx)

    def _got(self, line: bytes) -> None:
        self.seen.append(line)
        if self._serving:
            self.write(line)
        else:
            self.received.put(line)

    def _at_eof(self) -> None:
        if self._farewell is not None:
            self.write(self._farewell)
        if not self.ignore_eof:
            time.sleep(self.linger)
            self.exit(0)


class Spawner:
    """A spawn function handing out children (made by `factory`), remembering them."""

    def __init__(self, factory: Callable[[], Child] = FakeChild) -> None:
        self.factory = factory
        self.children: list[Any] = []
        self._changed = threading.Condition()

    def __call__(self) -> Child:
        child = self.factory()
        with self._changed:
            self.children.append(child)
            self._changed.notify_all()
        return child

    def nth(self, index: int) -> Any:
        """The `index`th child spawned, once it exists."""
        with self._changed:
            spawned = self._changed.wait_for(lambda: len(self.children) > index, WAIT)
            assert spawned, f"child #{index} was never spawned"
            return self.children[index]

    def close(self) -> None:
        """Test teardown: nothing spawned outlives the test."""
        for child in self.children:
            if isinstance(child, FakeChild):
                child.close()
            elif child.poll() is None:
                child.signal_group(signal.SIGKILL)
                child.wait(WAIT)
