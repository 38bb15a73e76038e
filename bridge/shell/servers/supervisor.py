"""The server's lifecycle: one serving child at a time, its pumps, its replacement, its end.

Must not decide when to restart (the core asks) and must not outlive its children: every
process it started is stopped and reaped, group included, before the session's nursery
closes. Each child is a server generation (`Incarnation`) whose reader (its lines to the
core) and waiter (its exit to the core) run in its own nursery: retiring it (the core
restarted the server, or the session ends) cancels them, so nothing it says reaches the core
any more. Its stop then owns the rest of the process's life: the stdout it still writes,
read to no one (a child blocked on a full or closed pipe could not end cleanly), and its
exit. Its stderr reader lives as long as its stderr, in the session's nursery: what a
server says while it stops is logged too.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import trio

from bridge.core.events import SERVER, ChildExited, ChildStarted
from bridge.errors import ServerUnavailable
from bridge.shell.fdio import fdio
from bridge.shell.fdio.outlet import Outlet
from bridge.shell.fdio.pump import Throttle, pump
from bridge.shell.logs import Logger
from bridge.shell.servers.child import Child
from bridge.shell.servers.start_failure import NOT_FOUND, NotStarted
from bridge.shell.servers.stderr import StderrReader
from bridge.shell.session.generation import Generation, Task
from bridge.shell.settings import Timing

if TYPE_CHECKING:
    from bridge.shell.session.driver import Driver

Spawn = Callable[[], Child]

# After the leader exits, wait this long for its stdout to reach EOF so every line it wrote
# is delivered before ChildExited (a helper holding the pipe open must not stall us).
EOF_WAIT = 1.0
# While the group outlives its leader (helpers the server left behind), look this often.
GROUP_POLL = 0.05
# A start that fails for a reason the spawner does not name reports "command not found".
EXIT_NOT_STARTED = NOT_FOUND


class Incarnation:
    """One child process and its pipes: a server generation. Once retired, its reader and its
    waiter are cancelled and nothing it says reaches the core."""

    def __init__(self, gen: int, parent: trio.Nursery) -> None:
        self.gen = gen
        self.generation = Generation(parent, f"server-{gen}")
        """Its tasks, and the source the driver reads its lines from (whether it retired)."""
        self.child: Child | None = None
        self.outlet: Outlet | None = None
        self.early: list[bytes] = []
        """What the core sent before this child existed (during a restart), in order."""
        self.stdout_eof = trio.Event()
        self.stderr: StderrReader | None = None
        self.reported = False
        """Whether its exit reached the core (ChildExited)."""
        self.kept_stdout: int | None = None
        """Its stdout, kept open past its reader's cancellation for its stop to read."""

    @property
    def retired(self) -> bool:
        return self.generation.retired

    @property
    def ended(self) -> trio.Event:
        """Set once its reader and its waiter have returned (after `retire`)."""
        return self.generation.ended

    def start_soon(self, task: Task, *args: object, name: str) -> None:
        self.generation.start_soon(task, *args, name=name)

    def retire(self) -> None:
        """Cancel its reader and waiter. Its stdout is kept open (the reader closes its own
        end as it unwinds): the child must not find it closed while it stops."""
        if self.retired:
            return
        if self.child is not None and not self.stdout_eof.is_set():
            with contextlib.suppress(OSError):  # out of fds: its stdout closes with the reader
                self.kept_stdout = os.dup(self.child.stdout)
        self.generation.retire()


class Supervisor:
    """The server side of one session: what the driver writes to, and what it restarts."""

    def __init__(self, spawn: Spawn, driver: Driver, nursery: trio.Nursery, timing: Timing,
                 log: Logger, *, limit: int, feeds: Throttle) -> None:
        self._spawn = spawn
        self._driver = driver
        self._nursery = nursery
        self._timing = timing
        self._log = log
        self._limit = limit
        self._feeds = feeds  # the client side: the server reader waits while it is full
        self._gen = 0
        self._current = self._next()
        self._incarnations: list[Incarnation] = []
        self._hurried = False
        self._waits: set[trio.CancelScope] = set()
        self._replacing = 0
        self._replaced = trio.Event()

    @property
    def congested(self) -> bool:
        outlet = self._current.outlet
        return outlet is not None and outlet.congested

    async def relieved(self) -> None:
        outlet = self._current.outlet
        if outlet is not None:
            await outlet.relieved()

    def write(self, data: bytes) -> bool:
        """Write to the serving child, or keep it for the child being started; False if none."""
        inc = self._current
        if inc.outlet is not None:
            return inc.outlet.write(data)
        if inc.retired:
            return False
        inc.early.append(data)
        return True

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        """As `write`, for the pieces of spliced lines (kept whole only for a child to come)."""
        outlet = self._current.outlet
        if outlet is not None:
            return outlet.write_pieces(pieces)
        return self.write(b"".join(pieces))

    def serve(self, child: Child | ServerUnavailable | None = None) -> None:
        """Start serving with `child` (already spawned, or the reason it could not be), or
        spawn one. A server that cannot start is reported to the core as its exit."""
        if child is None:
            self._start(self._current)
        elif isinstance(child, ServerUnavailable):
            self._not_started(child)
        else:
            self._serve(self._current, child)

    def restart(self) -> None:
        """Replace the child, in a task of its own; writes from now on go to the new one.

        The old child is retired at once, not when its stop begins: its exit or end of file,
        already on the way, must not reach the core as news of the new one.
        """
        old, new = self._current, self._next()
        old.retire()
        self._current = new
        self._replacing += 1
        self._nursery.start_soon(self._replace, old, new, name=f"restart-{new.gen}")

    def hurry(self) -> None:
        """Skip the grace periods still running (a second signal: the user means it)."""
        self._hurried = True
        for scope in self._waits:
            scope.cancel()

    async def stop(self) -> None:
        """Stop for good: let a restart under way finish, then stop the child gracefully."""
        self._current.retire()
        while self._replacing:
            await self._replaced.wait()
        await self._stop(self._current)

    def kill_all(self) -> None:
        """Last resort when the session is torn down: SIGKILL every child not yet reaped, and
        close what is left of their pipes."""
        for inc in self._incarnations:
            if inc.child is not None and inc.child.poll() is None:
                inc.child.kill()
            if inc.outlet is not None:
                inc.outlet.abandon()
            if inc.kept_stdout is not None:  # its stop never began
                fdio.close_quietly(inc.kept_stdout)
                inc.kept_stdout = None

    # Starting -----------------------------------------------------------------------------

    def _next(self) -> Incarnation:
        self._gen += 1
        return Incarnation(self._gen, self._nursery)

    def _start(self, inc: Incarnation) -> None:
        try:
            child = self._spawn()
        except ServerUnavailable as exc:
            self._not_started(exc)
            return
        self._serve(inc, child)

    def _not_started(self, exc: ServerUnavailable) -> None:
        code, cause = (exc.status, exc.cause) if isinstance(exc, NotStarted) \
            else (EXIT_NOT_STARTED, str(exc))
        self._log.error("child.start_failed", code=code, reason=cause)
        self._driver.post(ChildExited(code, cause=cause))

    def _serve(self, inc: Incarnation, child: Child) -> None:
        """Open `inc`'s stdin, tell the core it started, then read its stdout and its exit.

        ChildStarted goes first so it precedes the child's lines.
        """
        inc.child = child
        self._incarnations.append(inc)
        self._log.info("child.started", pid=child.pid, gen=inc.gen)
        inc.outlet = Outlet(child.stdin, self._nursery, f"server-{inc.gen}")
        early, inc.early = inc.early, []
        for data in early:
            inc.outlet.write(data)
        inc.start_soon(self._read, inc, child, name=f"read-server-{inc.gen}")
        if child.stderr is not None:  # the process's, not the generation's: read to its end
            inc.stderr = StderrReader(child.stderr, self._log.bind(gen=inc.gen))
            self._nursery.start_soon(inc.stderr.run, name=f"read-stderr-{inc.gen}")
        inc.start_soon(self._wait, inc, child, name=f"wait-server-{inc.gen}")
        self._driver.post(ChildStarted())

    async def _replace(self, old: Incarnation, new: Incarnation) -> None:
        try:
            await self._stop(old)
            if new.retired:
                return  # the session began to stop meanwhile
            self._start(new)
        finally:
            self._replacing -= 1
            self._replaced.set()
            self._replaced = trio.Event()

    async def _read(self, inc: Incarnation, child: Child) -> None:
        try:
            await pump(child.stdout, SERVER, self._driver, self._limit, (self._feeds,),
                       inc.generation)
        finally:
            inc.stdout_eof.set()

    async def _wait(self, inc: Incarnation, child: Child) -> None:
        """Report the child's exit once its output has reached the core. Retired meanwhile,
        it is cancelled at the wait for that output: an exit that was on its way when the
        core restarted the server is no news of the new one."""
        code = await child.wait()
        stderr = inc.stderr
        with trio.move_on_after(EOF_WAIT):
            await inc.stdout_eof.wait()
            if stderr is not None:
                await stderr.ended.wait()
        if stderr is not None:
            stderr.flush()  # a helper may hold the pipe open: what came so far is logged
        tail = tuple(stderr.tail) if stderr is not None else ()
        inc.reported = True
        self._driver.post(ChildExited(code, stderr_tail=tail))

    # Stopping -----------------------------------------------------------------------------

    async def _stop(self, inc: Incarnation) -> None:
        """Retire `inc`, then stdin EOF, then SIGTERM, then SIGKILL to the group, each after
        its grace period (stdio.mdx §Shutdown: closing stdin is how a stdio server is asked
        to exit), reading to no one what it still writes."""
        inc.retire()
        kept, inc.kept_stdout = inc.kept_stdout, None
        try:
            child, outlet = inc.child, inc.outlet
            if child is None or outlet is None:
                return
            outlet.close()
            await inc.ended.wait()  # its reader let go of stdout: the kept end is read now
            async with trio.open_nursery() as ending:
                drained = trio.Event()
                if kept is None:
                    drained.set()
                else:
                    ending.start_soon(_discard, kept, drained, name=f"drain-server-{inc.gen}")
                code = await self._exit(ending, child)
                outlet.abandon()  # whatever a dead child's stdin still had queued
                await self._end_group(child)
                await self._stopped(inc, child, code, drained)
                ending.cancel_scope.cancel()
        finally:
            if kept is not None:
                fdio.close_quietly(kept)

    async def _exit(self, ending: trio.Nursery, child: Child) -> int | None:
        """The child's exit code, once its stdin is closed: after the grace periods, SIGTERM,
        then SIGKILL (None if it has not been reaped even then)."""
        exited = trio.Event()
        codes: list[int] = []

        async def wait() -> None:
            codes.append(await child.wait())
            exited.set()

        ending.start_soon(wait, name=f"reap-server-{child.pid}")
        if not await self._within(self._timing.shutdown_grace, exited):
            self._log.warning("child.terminating", pid=child.pid, signal="SIGTERM")
            child.signal_group(signal.SIGTERM)
            if not await self._within(self._timing.kill_grace, exited):
                self._log.warning("child.killing", pid=child.pid, signal="SIGKILL")
                child.kill()
        return codes[0] if codes else child.poll()

    async def _stopped(self, inc: Incarnation, child: Child, code: int | None,
                       drained: trio.Event) -> None:
        """Log the stopped child, once its output has ended (at most EOF_WAIT: a helper may
        hold its pipes open), unless its exit was reported to the core already."""
        stderr = inc.stderr
        with trio.move_on_after(EOF_WAIT):
            await drained.wait()
            if stderr is not None:
                await stderr.ended.wait()
        if stderr is not None:
            stderr.flush()
        if not inc.reported:
            self._log.info("child.stopped", pid=child.pid, code=code, gen=inc.gen)

    async def _end_group(self, child: Child) -> None:
        """After the leader exited: SIGTERM what is left of its group, then SIGKILL it."""
        if not child.group_alive():
            return
        child.signal_group(signal.SIGTERM)
        with self._hurriable(self._timing.kill_grace):
            while child.group_alive():
                await trio.sleep(GROUP_POLL)
        child.signal_group(signal.SIGKILL)

    async def _within(self, seconds: float, event: trio.Event) -> bool:
        """Whether `event` is set within `seconds` (or at once, once hurried)."""
        with self._hurriable(seconds):
            await event.wait()
        return event.is_set()

    @contextlib.contextmanager
    def _hurriable(self, seconds: float) -> Iterator[None]:
        """A timeout that `hurry` ends at once."""
        with trio.move_on_after(0.0 if self._hurried else seconds) as scope:
            self._waits.add(scope)
            try:
                yield
            finally:
                self._waits.discard(scope)


async def _discard(fd: int, drained: trio.Event) -> None:
    """Read `fd` to its end, keeping nothing: a retired child's stdout, which no one hears.
    The caller closes `fd`."""
    fdio.make_nonblocking(fd)
    while (chunk := fdio.read_now(fd)) != b"":
        if chunk is None:
            await fdio.wait_readable(fd)
    drained.set()
