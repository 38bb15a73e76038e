"""The server's lifecycle: one serving child at a time, its pumps, restarts, and its end.

Must not outlive its children: every process it started is reaped (group included) before
`stop` returns. Must not decide to restart: the core asks. Runs its waits on threads of its
own, never on the caller's (the driver holds the core while it calls in).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from bridge.core.events import SERVER, ChildExited, ChildStarted, Event, Log
from bridge.errors import ServerUnavailable
from bridge.shell.child import Child, kill_now, reap_group
from bridge.shell.pumps import Outlet, read_peer, start_thread
from bridge.shell.settings import Timing

Spawn = Callable[[], Child]
LogSink = Callable[[Log], None]


class PostTagged(Protocol):
    """Hands the driver events with the child generation they belong to (Driver.post_all)."""

    def __call__(self, events: list[Event], gen: int = 0) -> None: ...


# After the leader exits, wait this long for its stdout to reach EOF so every line it wrote
# is delivered before ChildExited (a helper holding the pipe open must not stall us).
EOF_WAIT = 1.0
# A restart that cannot exec the server reports the shell's "command not found" status.
EXIT_NOT_STARTED = 127


@dataclass(eq=False)
class Incarnation:
    """One child process and its pipes; `gen` tags its events so stale ones are dropped."""

    gen: int
    child: Child | None = None
    outlet: Outlet | None = None
    early: list[bytes] = field(default_factory=list)
    """What the core sent before this child existed (during a restart), in order."""
    stdout_eof: threading.Event = field(default_factory=threading.Event)
    exited: threading.Event = field(default_factory=threading.Event)
    retired: bool = False


class Supervisor:
    def __init__(self, spawn: Spawn, post: PostTagged, timing: Timing, log: LogSink) -> None:
        self._spawn = spawn
        self._post = post
        self._timing = timing
        self._log = log
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._gen = 0
        self._current = self._next_incarnation()
        self._live: set[Child] = set()
        self._hurried = False
        self._stopping = False
        self._restarts: list[threading.Thread] = []

    @property
    def gen(self) -> int:
        """The generation whose events count; earlier children's events are stale."""
        return self._gen

    def send(self, data: bytes) -> bool:
        """Write one encoded line to the current child; False if its stdin is gone."""
        inc = self._current
        outlet = inc.outlet
        if outlet is not None:
            return outlet.write(data)
        with self._lock:
            if inc.outlet is None:
                if inc.retired:
                    return False
                inc.early.append(data)
                return True
        return inc.outlet.write(data)

    def spawn_first(self) -> None:
        """Start the first child; ServerUnavailable escapes (there is nothing to clean up)."""
        self._start(self._current)

    def serve_first(self) -> None:
        """Announce the first child to the core, then start its pumps."""
        self._serve(self._current)

    def restart(self) -> None:
        """Replace the child in the background; sends from now on wait for the new one."""
        with self._lock:
            old, new = self._current, self._next_incarnation()
            self._current = new
            if self._stopping:
                new.retired = True  # never started: sends to it are refused, not kept
                return
            self._restarts.append(start_thread("restart", self._replace, old, new))

    def hurry(self) -> None:
        """Skip the grace periods still running (a second signal: the user means it)."""
        with self._lock:
            self._hurried = True
            self._changed.notify_all()

    def stop(self) -> None:
        """Stop for good: let restarts under way finish, stop the child gracefully, reap all."""
        with self._lock:
            self._stopping = True
            restarts = list(self._restarts)
        try:
            for thread in restarts:
                thread.join()
            self._stop(self._current)
        finally:
            self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every process still known, and any a restart under way starts later."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
            self._live.clear()
            outlet = self._current.outlet
        for child in live:
            kill_now(child)
        if outlet is not None:
            outlet.abandon()  # after an error nobody closed it: its thread and fd end here

    # Starting -----------------------------------------------------------------------------

    def _next_incarnation(self) -> Incarnation:
        self._gen += 1
        return Incarnation(self._gen)

    def _start(self, inc: Incarnation, *, restart: bool = False) -> bool:
        """Spawn `inc`'s child; False if the supervisor stopped meanwhile (it is killed)."""
        child = self._spawn()
        with self._lock:
            if not (restart and self._stopping):
                self._live.add(child)
                inc.child = child
        if inc.child is not child:
            kill_now(child)  # started while the bridge stopped: it must not outlive us
            return False
        self._log(Log("info", "child.started", {"pid": child.pid, "gen": inc.gen}))
        return True

    def _replace(self, old: Incarnation, new: Incarnation) -> None:
        self._stop(old)
        with self._lock:
            if self._stopping:
                new.retired = True
                return
        try:
            if not self._start(new, restart=True):
                return
        except ServerUnavailable as exc:
            self._log(Log("error", "child.start_failed", {"reason": str(exc)}))
            self._post([ChildExited(EXIT_NOT_STARTED)], new.gen)
            return
        self._serve(new)

    def _serve(self, inc: Incarnation) -> None:
        """Open `inc`'s stdin, tell the core it started, then read its stdout and exit.

        ChildStarted goes first so it precedes the child's lines; the core may answer it
        with a restart, which then finds the outlet it must close.
        """
        child = inc.child
        assert child is not None
        outlet = Outlet(child.stdin, f"server-{inc.gen}", lambda _: self._notify_all())
        with self._lock:
            inc.outlet = outlet
            early, inc.early = inc.early, []
        for data in early:
            outlet.write(data)
        self._post([ChildStarted()], inc.gen)
        start_thread(f"read-server-{inc.gen}", self._read, inc, child)
        start_thread(f"wait-server-{inc.gen}", self._wait, inc, child)

    def _read(self, inc: Incarnation, child: Child) -> None:
        try:
            read_peer(child.stdout, SERVER, partial(self._post, gen=inc.gen))
        finally:
            inc.stdout_eof.set()

    def _wait(self, inc: Incarnation, child: Child) -> None:
        code = child.wait()
        assert code is not None
        with self._lock:
            inc.exited.set()
            self._changed.notify_all()
        self._log(Log("info", "child.exited", {"pid": child.pid, "code": code, "gen": inc.gen}))
        inc.stdout_eof.wait(EOF_WAIT)
        self._post([ChildExited(code)], inc.gen)

    # Stopping -----------------------------------------------------------------------------

    def _stop(self, inc: Incarnation) -> None:
        with self._lock:
            inc.retired = True
            outlet, child = inc.outlet, inc.child
        if outlet is None or child is None:
            return
        try:
            self._stop_gracefully(inc, outlet, child)
        finally:
            kill_now(child)
            outlet.abandon()
            with self._lock:
                self._live.discard(child)

    def _stop_gracefully(self, inc: Incarnation, outlet: Outlet, child: Child) -> None:
        # stdin EOF is how a stdio server is asked to exit (stdio.mdx §Shutdown); the outlet
        # closes stdin once it has written what was queued, and is abandoned if stuck.
        outlet.close()
        deadline = time.monotonic() + self._timing.shutdown_grace
        self._wait_until(outlet.done.is_set, deadline)
        outlet.abandon()
        self._wait_until(inc.exited.is_set, deadline)
        if child.poll() is None:
            self._log(Log("warning", "child.terminating", {"pid": child.pid, "signal": "SIGTERM"}))
            child.signal_group(signal.SIGTERM)
            self._wait_until(inc.exited.is_set, time.monotonic() + self._timing.kill_grace)
        if child.poll() is None:
            self._log(Log("warning", "child.killing", {"pid": child.pid, "signal": "SIGKILL"}))
            return  # kill_now follows
        reap_group(child, 0 if self._hurried else self._timing.kill_grace)

    def _wait_until(self, done: Callable[[], bool], deadline: float) -> None:
        """Until `done()`, the deadline, or a hurry; woken by exits, outlets and hurry."""
        with self._lock:
            self._changed.wait_for(
                lambda: done() or self._hurried, max(0.0, deadline - time.monotonic()))

    def _notify_all(self) -> None:
        with self._lock:
            self._changed.notify_all()
