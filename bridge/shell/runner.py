"""Wiring: the tasks of one bridge run (pumps, driver, supervisor, signals) and how it ends.

Must not hold protocol logic; process-wide setup (fds, logging) happens only in `run_stdio`.
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import Callable
from functools import partial

import trio

from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.core.events import CLIENT, Log, PeerClosed, ShutdownRequested
from bridge.shell.child import check_command, spawn_process
from bridge.shell.driver import Core, Driver
from bridge.shell.logs import LogSink, configure_logging
from bridge.shell.notify import sd_notify
from bridge.shell.pumps import open_inbox, open_outbox, read_peer, write_peer
from bridge.shell.settings import ShellConfig
from bridge.shell.stdio import take_stdio
from bridge.shell.supervisor import Spawn, Supervisor, Timing

LogFn = Callable[[Log], None]
NotifyFn = Callable[[str], object]
DEFAULT_TIMING = Timing()


def _no_log(_: Log) -> None:
    pass


def _no_notify(_: str) -> None:
    pass


async def serve(
    core: Core,
    client_in: trio.abc.ReceiveStream,
    client_out: trio.abc.SendStream,
    spawn: Spawn,
    *,
    timing: Timing = DEFAULT_TIMING,
    log: LogFn = _no_log,
    notify: NotifyFn = _no_notify,
    signals: bool = False,
) -> int:
    """Run one bridge until the core says Stop; its exit code. No child survives the return.

    Raises ServerUnavailable if the first child cannot be started.
    """
    run = _Run(core, client_in, client_out, spawn, timing, log, notify)
    try:
        await run.supervisor.spawn_first()
        async with trio.open_nursery() as nursery:
            code = await run.main(nursery, signals)
            nursery.cancel_scope.cancel()
    finally:
        await run.supervisor.kill_all()
        # Closing restores the fds' blocking mode (trio set them non-blocking), which matters
        # when they are a terminal shared with the user's shell.
        await trio.aclose_forcefully(client_in)
        await trio.aclose_forcefully(client_out)
    log(Log("info", "bridge.stopped", {"code": code}))
    return code


class _Run:
    def __init__(
        self,
        core: Core,
        client_in: trio.abc.ReceiveStream,
        client_out: trio.abc.SendStream,
        spawn: Spawn,
        timing: Timing,
        log: LogFn,
        notify: NotifyFn,
    ) -> None:
        self.core, self.client_in, self.client_out = core, client_in, client_out
        self.timing, self.log, self.notify = timing, log, notify
        self.inbox, self.inbox_rx = open_inbox()
        self.supervisor = Supervisor(spawn, self.inbox, timing, log)
        self.client_done = trio.Event()

    async def main(self, nursery: trio.Nursery, signals: bool) -> int:
        outbox, outbox_rx = open_outbox()
        if signals:
            await nursery.start(self._watch_signals)
        # ChildStarted enters the inbox first, before anything the client says.
        await self.supervisor.serve_first(nursery)
        nursery.start_soon(read_peer, self.client_in, CLIENT, self.inbox, 0)
        nursery.start_soon(self._write_client, outbox_rx)
        ready = partial(self._notify, "READY=1")
        driver = Driver(self.core, self.inbox_rx, outbox, self.supervisor, self.log, ready)
        code = await driver.run()
        self._notify("STOPPING=1")
        # Answers still queued for the client drain while the child shuts down.
        outbox.close()
        await self.supervisor.stop()
        with trio.move_on_after(self.timing.shutdown_grace):
            await self.client_done.wait()
        return code

    async def _write_client(self, outbox_rx: trio.MemoryReceiveChannel[object]) -> None:
        broken = False

        def on_broken() -> None:
            nonlocal broken
            broken = True

        try:
            await write_peer(outbox_rx, self.client_out, on_broken)
        finally:
            self.client_done.set()
        if broken:
            # Nobody can read our answers any more: for the core that is the client leaving.
            await self.inbox.send((0, PeerClosed(CLIENT)))

    async def _watch_signals(self, *, task_status: trio.TaskStatus[None]) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
            task_status.started()
            first = True
            async for signum in received:
                name = signal.Signals(signum).name
                self.log(Log("info", "signal.received", {"signal": name}))
                if first:
                    await self.inbox.send((0, ShutdownRequested()))
                else:
                    self.supervisor.hurry()  # asked twice: skip the grace periods
                first = False

    def _notify(self, state: str) -> None:
        try:
            self.notify(state)
        except OSError as exc:
            self.log(Log("warning", "notify.failed", {"state": state, "reason": str(exc)}))


def run_stdio(core_config: CoreConfig, shell: ShellConfig) -> int:
    """The bridge as a process: our stdin/stdout are the client, `shell.command` the server."""
    check_command(shell.command)
    configure_logging(shell.log_level, shell.log_format)
    fds = take_stdio()
    core = Bridge(core_config, secret=secrets.token_bytes(32))

    async def main() -> int:
        return await serve(
            core,
            trio.lowlevel.FdStream(fds.client_in),
            trio.lowlevel.FdStream(fds.client_out),
            partial(spawn_process, shell.command),
            timing=shell.timing,
            log=LogSink(shell.log_level),
            notify=sd_notify,
            signals=True,
        )

    return trio.run(main)


