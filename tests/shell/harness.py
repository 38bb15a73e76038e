"""Runs `serve` in process on a thread of its own: the client is two os.pipe pairs.

Must not wait without a bound (a hang must fail the test) nor let a test's children, pipes or
threads spill into the next test: use it as a context manager, which cleans up, and fails the
test if one of the bridge's threads died of an exception.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from bridge.core.events import Log
from bridge.shell.driver import Core
from bridge.shell.runner import serve
from bridge.shell.settings import Timing
from bridge.shell.supervisor import Spawn
from tests.shell.fakes import WAIT, LineReader, Spawner, write_all

# Long enough that a polite peer never runs into it on a loaded machine.
TIMING = Timing(shutdown_grace=2.0, kill_grace=2.0)
# Short, and different, so a test can tell which grace period was waited for.
FAST = Timing(shutdown_grace=0.2, kill_grace=0.6)
# How long teardown waits for the bridge's own threads to end.
TEARDOWN = 2.0


class Harness:
    def __init__(self, core: Core, spawner: Spawner | None = None, *,
                 spawn: Spawn | None = None, timing: Timing = TIMING) -> None:
        self.core = core
        self.spawner = spawner or Spawner()
        self.spawn: Spawn = spawn or self.spawner
        self.timing = timing
        self.client_in, self.to_bridge = os.pipe()
        self.from_bridge, self.client_out = os.pipe()
        os.set_blocking(self.to_bridge, False)
        self.client = LineReader(self.from_bridge)
        self.logs: list[Log] = []
        self.log_hook: Callable[[Log], None] | None = None
        """Runs in the bridge's thread for every log, after it is recorded."""
        self.notified: list[str] = []
        self.stopping = threading.Event()
        """Set when serve notified STOPPING=1: its shutdown has begun."""
        self.code: int | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.ended_at: float | None = None
        self.thread_errors: list[threading.ExceptHookArgs] = []
        self._open = {self.to_bridge, self.from_bridge}
        self._served = False
        self._before: set[threading.Thread] = set()
        self._thread: threading.Thread | None = None
        self._previous_hook = threading.excepthook

    def __enter__(self) -> Harness:
        threading.excepthook = self._thread_died
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
        if exc is not None and self.error is not None and exc is not self.error:
            exc.add_note(f"meanwhile serve raised {self.error!r}")
        if kind is None:
            assert not self.thread_errors, f"a bridge thread died: {self.thread_errors[0]}"

    def start(self) -> Any:
        """Run the bridge on its own thread; the first child once it exists."""
        self.run_in_background()
        return self.spawner.nth(0)

    def run_in_background(self) -> None:
        self._before = set(threading.enumerate())
        self._served = True
        self._thread = threading.Thread(target=self._run, name="serve", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.code = serve(self.core, self.client_in, self.client_out, self.spawn,
                              timing=self.timing, log=self._log, notify=self._notify)
        except BaseException as exc:
            self.error = exc
        finally:
            self.ended_at = time.monotonic()
            self.done.set()

    def _log(self, log: Log) -> None:
        self.logs.append(log)
        if self.log_hook is not None:
            self.log_hook(log)

    def _notify(self, state: str) -> None:
        self.notified.append(state)
        if state == "STOPPING=1":
            self.stopping.set()

    def join(self, timeout: float = WAIT) -> int:
        """serve's exit code once it returned (what it raised, raised here)."""
        assert self.done.wait(timeout), f"serve did not return within {timeout} s"
        if self.error is not None:
            raise self.error
        assert self.code is not None
        return self.code

    def send(self, *lines: bytes) -> None:
        self.send_raw(b"".join(line + b"\n" for line in lines))

    def send_raw(self, data: bytes) -> None:
        write_all(self.to_bridge, data)

    def client_eof(self) -> None:
        self._close(self.to_bridge)

    def stop_reading(self) -> None:
        """The client closes its end of our stdout: the bridge's writes break."""
        self._close(self.from_bridge)

    def threads(self, name: str) -> list[threading.Thread]:
        """The threads called `name` that this bridge started."""
        return [thread for thread in threading.enumerate()
                if thread.name == name and thread not in self._before]

    def events(self, name: str) -> list[str]:
        return [log.event for log in self.logs if log.event == name]

    def close(self) -> None:
        """Teardown: end the client's side and every child; give serve a moment to return.

        Then wait a little for the bridge's readers and waiters too, which end once their
        peers are gone: whatever they still do happens within this test, not the next one.
        """
        try:
            for fd in list(self._open):
                self._close(fd)
            self.spawner.close()
            if self._thread is not None:
                self._thread.join(WAIT)
                deadline = time.monotonic() + TEARDOWN
                for thread in self._bridge_threads():
                    thread.join(max(0.0, deadline - time.monotonic()))
            if not self._served:  # serve never ran, so never took the fds over
                os.close(self.client_in)
                os.close(self.client_out)
        finally:
            threading.excepthook = self._previous_hook

    def _bridge_threads(self) -> list[threading.Thread]:
        # Writers to a child's stdin may wait for good on a killed child; those are not waited.
        return [thread for thread in threading.enumerate()
                if thread not in self._before and thread.ident is not None
                and thread.name.startswith(("read-", "wait-", "write-client", "restart"))]

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def _thread_died(self, args: threading.ExceptHookArgs) -> None:
        if args.thread is not None and args.thread not in self._before:
            self.thread_errors.append(args)  # ours, not a straggler from an earlier test
        self._previous_hook(args)
