"""The stdio bridge's trio run: one session over fds 0 and 1, and the process's signals.

Must not be imported before the first server is started (bridge/shell/services/process.py): this is
where the heavy imports happen, but for structlog's, which waits for the first answer (its
lines are held until then: early_log.py). SIGTERM, SIGINT, SIGHUP and SIGQUIT end the session
(answers owed, errors for the rest, the child stopped; a second one skips the grace periods);
SIGCHLD reaps adopted orphans.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge import collector
from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.errors import EX_SOFTWARE, ServerUnavailable
from bridge.shell import logs
from bridge.shell.clients.fd_client import FdClient
from bridge.shell.early_log import EarlyLog
from bridge.shell.fdio.stdio import ProtocolFds
from bridge.shell.metrics import wanted
from bridge.shell.servers.child import ProcessChild
from bridge.shell.servers.era_memory import EraMemory, storing
from bridge.shell.servers.supervisor import Spawn
from bridge.shell.services.notify import Notifier
from bridge.shell.services.orphans import Orphans
from bridge.shell.session.driver import Driver
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import Session, SessionSettings
from bridge.shell.session.sides import OpenServer
from bridge.shell.session.transcript import Transcript
from bridge.shell.settings import ShellConfig

if TYPE_CHECKING:  # --url and --max-servers only: imported on their paths
    from bridge.shell.clients.fd_pool import PooledLines
if TYPE_CHECKING:  # --url only: its modules are imported by _run_remote's path
    from bridge.shell.metrics.watch import Watch
    from bridge.shell.servers.remote.endpoint import Endpoint

PoolOf = Callable[[FdClient], "PooledLines"]
"""The pool a stdio client's lines go to (--max-servers), made for its client side."""
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
LOG_WAIT = 1.0
"""Seconds a log line may wait for structlog when the client has no answer yet (a server that
never lets the bridge answer still has its lines written soon)."""
LOG_IDLE = 0.05
"""After the first answer, structlog is imported once no peer has written for this long, so its
one pause falls between a client's requests, not among them."""
LOG_IDLE_AT_MOST = 5.0
"""Seconds after the first answer a busy session goes on without structlog at most."""


def serve_stdio(core_config: CoreConfig, shell: ShellConfig, fds: ProtocolFds,
                first: ProcessChild | ServerUnavailable, spawn: Spawn,
                memory: EraMemory | None = None) -> int:
    early, log = _started(shell)
    watch = _watched(shell)
    settings = SessionSettings.of(shell, None if watch is None else watch.series)
    core = _core(core_config, watch)
    session = Session(
        core,
        log,
        settings=settings,
        notify=Notifier(log),
        orphans=Orphans(),
        transcript=_transcript(shell, log),
    )
    if memory is not None:
        session.driver.remember = storing(memory, log)
    servers = Servers(settings, spawn=spawn)
    pool = None
    if (shell.max_servers or 1) > 1:  # else no pool module is even imported
        from bridge.shell.services.stdio_pool import pool_of

        pool = partial(pool_of, core, partial(_core, watch=watch), core_config, shell,
                       servers, log)
    return _run(session, servers.opener(log), fds, first, log, early, pool, watch,
                shell.metrics)


def serve_remote(core_config: CoreConfig, shell: ShellConfig, fds: ProtocolFds,
                 where: Endpoint) -> int:
    """The stdio bridge whose server is the Streamable HTTP endpoint `where`."""
    early, log = _started(shell)
    watch = _watched(shell)
    settings = SessionSettings.of(shell, None if watch is None else watch.series)
    session = Session(
        _core(core_config, watch),
        log,
        settings=settings,
        notify=Notifier(log),
        transcript=_transcript(shell, log),
    )
    return _run(session, Servers(settings, where=where).opener(log), fds, None, log, early,
                None, watch, shell.metrics)


def _started(shell: ShellConfig) -> tuple[EarlyLog, logs.Logger]:
    early = EarlyLog(shell.log_level, shell.log_format)
    log = early.logger()
    log.info("bridge.started", **logs.started_fields(shell))
    return early, log


def _watched(shell: ShellConfig) -> Watch | None:
    """The process's metrics, if it keeps any (their modules are loaded only then)."""
    if not wanted(shell.metrics):
        return None
    from bridge.shell.metrics.watch import Watch

    return Watch("pipe")


def _core(config: CoreConfig, watch: Watch | None) -> Bridge:
    return Bridge(config, secret=os.urandom(32)) if watch is None else watch.core(config)


def _transcript(shell: ShellConfig, log: logs.Logger) -> Transcript | None:
    return Transcript.open(shell.transcript, log=log) if shell.transcript else None


def _run(session: Session, server: OpenServer, fds: ProtocolFds,
         first: ProcessChild | ServerUnavailable | None, log: logs.Logger,
         early: EarlyLog, pool: PoolOf | None = None, watch: Watch | None = None,
         metrics: str | None = None) -> int:
    try:
        return trio.run(_main, session, server, fds, first, log, early, pool, watch, metrics)
    except Exception as exc:  # a bug: say so, and leave no child behind
        log.critical("bridge.crashed", error=repr(exc))
        if isinstance(first, ProcessChild):
            first.kill()
        return EX_SOFTWARE
    finally:  # a session that ended before its first answer still has its lines written
        early.load()
        log.debug("collector.reported", **collector.state())


async def _main(session: Session, server: OpenServer, fds: ProtocolFds,
                first: ProcessChild | ServerUnavailable | None,
                log: logs.Logger, early: EarlyLog, pool: PoolOf | None,
                watch: Watch | None, metrics: str | None) -> int:
    orphans = session.orphans
    client = FdClient(fds.client_in, fds.client_out, log)
    if pool is not None:
        client.pooled = pool(client)
    with trio.open_signal_receiver(*ENDING, signal.SIGCHLD) as signals:
        async with trio.open_nursery() as nursery:
            if watch is not None and metrics is not None:
                nursery.start_soon(partial(watch.serve, metrics, None, log), name="metrics")
            nursery.start_soon(_watch, signals, session, orphans, log)
            nursery.start_soon(_load_log, early, client.written, session.driver)
            code = await session.run(client, server, first)
            nursery.cancel_scope.cancel()
    log.info("bridge.stopped", code=code)
    return code


async def _load_log(early: EarlyLog, answered: trio.Event, driver: Driver) -> None:
    """structlog, imported after the first answer at the session's first idle moment. On this
    thread, in one pause: imported in a worker thread it would contend for the interpreter
    lock with every message for as long as it took (measured: p99 7x the line relay's)."""
    with trio.move_on_after(LOG_WAIT):
        await answered.wait()
    collector.resume()
    until = trio.current_time() + LOG_IDLE_AT_MOST
    while trio.current_time() < until:
        await trio.sleep(LOG_IDLE)
        if trio.current_time() - driver.last_lines >= LOG_IDLE:
            break
    logs.import_structlog()
    early.load()


async def _watch(signals: AsyncIterator[int], session: Session, orphans: Orphans | None,
                 log: logs.Logger) -> None:
    async for signum in signals:
        if signum == signal.SIGCHLD:
            if orphans is not None:
                orphans.reap()
            continue
        log.info("signal.received", signal=signal.Signals(signum).name)
        session.shut_down()
