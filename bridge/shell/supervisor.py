"""The server's lifecycle: one serving child at a time, its pumps, restarts, and its end.

Must not outlive its children: every process it started is reaped (group included) before it
returns, also on errors and cancellation. Must not decide to restart: the core asks.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from bridge.core.events import SERVER, ChildExited, ChildStarted, Log
from bridge.errors import ServerUnavailable
from bridge.shell.child import Child, kill_now, reap_group
from bridge.shell.pumps import Inbox, Outbox, open_outbox, read_peer, write_peer

Spawn = Callable[[], Awaitable[Child]]
LogSink = Callable[[Log], None]

# After the leader exits, wait this long for its stdout to reach EOF so every line it wrote
# is delivered before ChildExited (a helper holding the pipe open must not stall us).
EOF_WAIT = 1.0
# A restart that cannot exec the server reports the shell's "command not found" status.
EXIT_NOT_STARTED = 127


@dataclass(frozen=True, slots=True)
class Timing:
    shutdown_grace: float = 2.0
    """Seconds from closing the child's stdin to SIGTERM."""
    kill_grace: float = 2.0
    """Seconds from SIGTERM to SIGKILL."""


@dataclass(eq=False)
class Incarnation:
    """One child process and what serves it; `gen` tags its events so stale ones are dropped."""

    gen: int
    outbox: Outbox
    outbox_rx: trio.MemoryReceiveChannel[Any]
    child: Child | None = None
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    writer_done: trio.Event = field(default_factory=trio.Event)
    stdout_eof: trio.Event = field(default_factory=trio.Event)
    exited: trio.Event = field(default_factory=trio.Event)


class Supervisor:
    def __init__(self, spawn: Spawn, inbox: Inbox, timing: Timing, log: LogSink) -> None:
        self._spawn = spawn
        self._inbox = inbox
        self._timing = timing
        self._log = log
        self._gen = 0
        self._current = self._next_incarnation()
        self._live: set[Child] = set()
        self._graceful: set[trio.CancelScope] = set()
        self._hurried = False
        self._stopping = False
        self._restarts: set[trio.CancelScope] = set()
        self._nursery: trio.Nursery | None = None

    @property
    def gen(self) -> int:
        """The generation whose events count; earlier children's events are stale."""
        return self._gen

    def send(self, message: Any) -> bool:
        """Queue `message` for the current child; False if its stdin is gone."""
        try:
            self._current.outbox.send_nowait(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    async def spawn_first(self) -> None:
        """Start the first child; ServerUnavailable escapes (there is nothing to clean up)."""
        await self._start(self._current)

    async def serve_first(self, nursery: trio.Nursery) -> None:
        """Run the first child's pumps in `nursery` and announce it to the core."""
        self._nursery = nursery
        await nursery.start(self._serve, self._current)
        await self._inbox.send((self._current.gen, ChildStarted()))

    def restart(self) -> None:
        """Replace the child in the background; sends from now on wait for the new one."""
        old, new = self._current, self._next_incarnation()
        self._current = new
        assert self._nursery is not None, "restart before serve_first"
        self._nursery.start_soon(self._replace, old, new)

    def hurry(self) -> None:
        """Skip the grace periods still running (a second signal: the user means it)."""
        self._hurried = True
        for scope in self._graceful:
            scope.cancel()

    async def stop(self) -> None:
        """Stop for good: end restarts under way, stop the child gracefully, reap everything."""
        self._stopping = True
        for scope in self._restarts:
            scope.cancel()
        try:
            await self._stop(self._current)
        finally:
            await self.kill_all()

    async def kill_all(self) -> None:
        """SIGKILL every process still known; safe to call at any time, also when cancelled."""
        for child in list(self._live):
            await kill_now(child)
            self._live.discard(child)

    def _next_incarnation(self) -> Incarnation:
        self._gen += 1
        outbox, outbox_rx = open_outbox()
        return Incarnation(self._gen, outbox, outbox_rx)

    async def _start(self, inc: Incarnation) -> None:
        child = await self._spawn()
        # Registered before any checkpoint: a cancellation now still finds it in kill_all.
        self._live.add(child)
        inc.child = child
        self._log(Log("info", "child.started", {"pid": child.pid, "gen": inc.gen}))

    async def _replace(self, old: Incarnation, new: Incarnation) -> None:
        scope = trio.CancelScope()
        if self._stopping:
            scope.cancel()
        self._restarts.add(scope)
        try:
            with scope:
                await self._stop(old)
                await self._launch(new)
        finally:
            self._restarts.discard(scope)

    async def _launch(self, inc: Incarnation) -> None:
        try:
            await self._start(inc)
        except ServerUnavailable as exc:
            self._log(Log("error", "child.start_failed", {"reason": str(exc)}))
            await self._inbox.send((inc.gen, ChildExited(EXIT_NOT_STARTED)))
            return
        assert self._nursery is not None
        await self._nursery.start(self._serve, inc)
        await self._inbox.send((inc.gen, ChildStarted()))

    async def _serve(
        self, inc: Incarnation, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        child = inc.child
        assert child is not None
        with inc.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read, inc, child)
                nursery.start_soon(self._write, inc, child)
                nursery.start_soon(self._wait, inc, child)
                task_status.started()

    async def _read(self, inc: Incarnation, child: Child) -> None:
        try:
            await read_peer(child.stdout, SERVER, self._inbox, inc.gen)
        finally:
            inc.stdout_eof.set()

    async def _write(self, inc: Incarnation, child: Child) -> None:
        try:
            await write_peer(inc.outbox_rx, child.stdin)
        finally:
            inc.writer_done.set()

    async def _wait(self, inc: Incarnation, child: Child) -> None:
        code = await child.wait()
        inc.exited.set()
        self._log(Log("info", "child.exited", {"pid": child.pid, "code": code, "gen": inc.gen}))
        with trio.move_on_after(EOF_WAIT):
            await inc.stdout_eof.wait()
        await self._inbox.send((inc.gen, ChildExited(code)))

    async def _stop(self, inc: Incarnation) -> None:
        inc.outbox.close()
        child = inc.child
        if child is None:
            return
        try:
            with self._grace_scope():
                await self._stop_gracefully(inc, child)
        finally:
            await kill_now(child)
            self._live.discard(child)
            inc.scope.cancel()

    async def _stop_gracefully(self, inc: Incarnation, child: Child) -> None:
        # stdin EOF is how a stdio server is asked to exit (stdio.mdx §Shutdown); the writer
        # closes stdin once it has written what was queued, and we close it if it is stuck.
        deadline = trio.current_time() + self._timing.shutdown_grace
        with trio.move_on_at(deadline):
            await inc.writer_done.wait()
        await trio.aclose_forcefully(child.stdin)
        with trio.move_on_at(deadline):
            await inc.exited.wait()
        if child.poll() is None:
            self._log(Log("warning", "child.terminating", {"pid": child.pid, "signal": "SIGTERM"}))
            child.signal_group(signal.SIGTERM)
            with trio.move_on_after(self._timing.kill_grace):
                await inc.exited.wait()
        if child.poll() is None:
            self._log(Log("warning", "child.killing", {"pid": child.pid, "signal": "SIGKILL"}))
            return  # kill_now follows
        await reap_group(child, self._timing.kill_grace)

    def _grace_scope(self) -> trio.CancelScope:
        scope = trio.CancelScope()
        if self._hurried:
            scope.cancel()
        self._graceful.add(scope)
        return scope
