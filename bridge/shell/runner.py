"""Wiring: the threads of one bridge run (pumps, driver, supervisor), its clock, and its end.

Must not hold protocol logic nor touch the process (fds, signals aside): bridge/shell/process.py
does that.
The calling thread is the clock: it sleeps until the core's next deadline, a signal, or the
core's Stop, while the reader threads feed the core (see bridge/shell/pumps.py for why
threads and not an event loop).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial

from bridge.core.events import CLIENT, Log, PeerClosed, ShutdownRequested, TimerFired
from bridge.shell.driver import Core, Driver
from bridge.shell.pumps import Outlet, read_peer, start_thread
from bridge.shell.settings import Timing
from bridge.shell.supervisor import Spawn, Supervisor

LogFn = Callable[[Log], None]
NotifyFn = Callable[[str], object]
DEFAULT_TIMING = Timing()
# The byte that pokes the clock; signal numbers (1..64) arrive on the same pipe.
POKE = b"\0"
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _no_log(_: Log) -> None:
    pass


def _no_notify(_: str) -> None:
    pass


def serve(
    core: Core,
    client_in: int,
    client_out: int,
    spawn: Spawn,
    *,
    timing: Timing = DEFAULT_TIMING,
    log: LogFn = _no_log,
    notify: NotifyFn = _no_notify,
    signals: bool = False,
) -> int:
    """Run one bridge until the core says Stop; its exit code. No child survives the return.

    Takes ownership of both fds (closes them). `signals` (main thread only) turns SIGTERM and
    SIGINT into ShutdownRequested, and a second one into skipping the grace periods.
    Raises ServerUnavailable if the first child cannot be started, and re-raises what the
    core raised, after the child is gone.
    """
    with _clock_pipe(signals) as (wake_r, wake_w):
        run = _Run(core, spawn, timing, log, notify, partial(_poke, wake_w))
        try:
            run.supervisor.spawn_first()
        except BaseException:
            os.close(client_out)
            os.close(client_in)
            raise
        try:
            code = run.main(client_in, client_out, wake_r)
        finally:
            run.driver.close()  # before the wake-up pipe closes: nothing may poke it after
            run.supervisor.kill_all()
    log(Log("info", "bridge.stopped", {"code": code}))
    return code


class _Run:
    def __init__(self, core: Core, spawn: Spawn, timing: Timing, log: LogFn, notify: NotifyFn,
                 wake: Callable[[], None]) -> None:
        self.timing, self.log, self.notify = timing, log, notify
        self.wake = wake
        self.stopped = threading.Event()
        self.shutdown_error: BaseException | None = None
        self.driver = Driver(core, log, partial(self._notify, "READY=1"), wake)
        self.supervisor = Supervisor(spawn, self.driver.post_all, timing, log)
        self.driver.supervisor = self.supervisor
        self.signalled = 0

    def main(self, client_in: int, client_out: int, wake_r: int) -> int:
        client = Outlet(client_out, "client", self._client_done)
        self.driver.client = client
        # ChildStarted reaches the core first, before anything the client says.
        self.supervisor.serve_first()
        start_thread("read-client", read_peer, client_in, CLIENT, self.driver.post_all)
        try:
            code = self._clock(wake_r)
        except BaseException:
            client.abandon()
            raise
        self._notify("STOPPING=1")
        # Answers still queued for the client drain while the child shuts down, on a thread
        # of its own: this one keeps reading signals, so a second one still hurries it.
        client.close()
        stopper = start_thread("shut-down", self._shut_down, client)
        while not self.stopped.is_set():
            self._sleep(wake_r, None)
        stopper.join()  # its last poke is written before the wake-up pipe closes
        if self.shutdown_error is not None:
            raise self.shutdown_error
        return code

    def _shut_down(self, client: Outlet) -> None:
        try:
            self.supervisor.stop()
            if not client.done.wait(self.timing.shutdown_grace):
                client.abandon()
        except BaseException as exc:
            self.shutdown_error = exc
        finally:
            self.stopped.set()
            self.wake()

    def _clock(self, wake_r: int) -> int:
        """Sleep until a deadline, a poke or a signal; the core's exit code once it stops."""
        driver = self.driver
        while (code := driver.outcome()) is None:
            deadline = driver.deadline()
            if not self._sleep(wake_r, deadline) and deadline is not None:
                driver.post(TimerFired())
        return code

    def _sleep(self, wake_r: int, deadline: float | None) -> bool:
        """Until `deadline` (False) or a poke or signal (True, signals handled)."""
        poller = select.poll()  # not select(): that refuses fds past 1023 (a library host's)
        poller.register(wake_r, select.POLLIN)
        timeout_ms = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1e3
        if not poller.poll(timeout_ms):
            return False
        self._on_wake(os.read(wake_r, 64))
        return True

    def _on_wake(self, data: bytes) -> None:
        for signum in data.replace(POKE, b""):
            self.log(Log("info", "signal.received", {"signal": signal.Signals(signum).name}))
            self.signalled += 1
            if self.signalled == 1:
                self.driver.post(ShutdownRequested())
            else:
                self.supervisor.hurry()  # asked twice: skip the grace periods

    def _client_done(self, broken: bool) -> None:
        if broken:
            # Nobody can read our answers any more: for the core that is the client leaving.
            self.driver.post(PeerClosed(CLIENT))

    def _notify(self, state: str) -> None:
        try:
            self.notify(state)
        except OSError as exc:
            self.log(Log("warning", "notify.failed", {"state": state, "reason": str(exc)}))


def _poke(wake_w: int) -> None:
    with contextlib.suppress(BlockingIOError):  # full: the clock has pokes to read already
        os.write(wake_w, POKE)


@contextlib.contextmanager
def _clock_pipe(signals: bool) -> Iterator[tuple[int, int]]:
    """The clock's wake-up pipe; with `signals`, SIGTERM/SIGINT also write to it."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    previous: list[object] = []
    try:
        if signals:
            previous = [signal.signal(sig, _ignore) for sig in SIGNALS]
            signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        yield wake_r, wake_w
    finally:
        if signals:
            signal.set_wakeup_fd(-1)
            for sig, handler in zip(SIGNALS, previous, strict=True):
                signal.signal(sig, handler)  # type: ignore[arg-type]
        os.close(wake_r)
        os.close(wake_w)


def _ignore(signum: int, frame: object) -> None:
    """The Python-level handler; the signal itself is read from the wake-up pipe."""
