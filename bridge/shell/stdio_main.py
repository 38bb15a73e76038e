"""The stdio bridge's trio run: one session over fds 0 and 1, and the process's signals.

Must not be imported before the first server is started (bridge/shell/process.py): this is
where the heavy imports happen, but for structlog's, which waits for the first answer (its
lines are held until then: early_log.py). SIGTERM, SIGINT, SIGHUP and SIGQUIT end the session
(answers owed, errors for the rest, the child stopped; a second one skips the grace periods);
SIGCHLD reaps adopted orphans.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from bridge import codecache, collector, startup
from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.errors import EX_SOFTWARE, ServerUnavailable
from bridge.shell import logs
from bridge.shell.child import ProcessChild
from bridge.shell.driver import Driver
from bridge.shell.early_log import EarlyLog
from bridge.shell.notify import Notifier
from bridge.shell.orphans import Orphans
from bridge.shell.session import Session, SessionSettings
from bridge.shell.settings import ShellConfig
from bridge.shell.stdio import ProtocolFds
from bridge.shell.supervisor import Spawn
from bridge.shell.transcript import Transcript

if TYPE_CHECKING:  # --url only: its modules are imported by _run_remote's path
    from bridge.shell.remote.endpoint import Endpoint

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
                first: ProcessChild | ServerUnavailable, spawn: Spawn) -> int:
    early, log = _started(shell)
    session = Session(
        Bridge(core_config, secret=os.urandom(32)),
        spawn,
        log,
        settings=session_settings(shell),
        notify=Notifier(log),
        orphans=Orphans(),
        transcript=_transcript(shell, log),
    )
    return _run(session, fds, first, log, early)


def serve_remote(core_config: CoreConfig, shell: ShellConfig, fds: ProtocolFds,
                 where: Endpoint) -> int:
    """The stdio bridge whose server is the Streamable HTTP endpoint `where`."""
    early, log = _started(shell)
    from bridge.shell.remote.upstream import opener  # httpx2: only for --url

    session = Session(
        Bridge(core_config, secret=os.urandom(32)),
        _no_spawn,
        log,
        settings=session_settings(shell),
        notify=Notifier(log),
        transcript=_transcript(shell, log),
        upstream=opener(where, log, limit=shell.max_message_bytes),
    )
    return _run(session, fds, None, log, early)


def _started(shell: ShellConfig) -> tuple[EarlyLog, logs.Logger]:
    early = EarlyLog(shell.log_level, shell.log_format)
    log = early.logger()
    log.info("bridge.started", **logs.started_fields(shell))
    return early, log


def _transcript(shell: ShellConfig, log: logs.Logger) -> Transcript | None:
    return Transcript.open(shell.transcript, log=log) if shell.transcript else None


def _run(session: Session, fds: ProtocolFds, first: ProcessChild | ServerUnavailable | None,
         log: logs.Logger, early: EarlyLog) -> int:
    try:
        return trio.run(_main, session, fds, first, log, early)
    except Exception as exc:  # a bug: say so, and leave no child behind
        log.critical("bridge.crashed", error=repr(exc))
        if isinstance(first, ProcessChild):
            first.kill()
        return EX_SOFTWARE
    finally:  # a session that ended before its first answer still has its lines written
        early.load()
        log.debug("collector.reported", **collector.state())
        log.debug("codecache.reported", **codecache.state())


def _no_spawn() -> ProcessChild:
    raise AssertionError("an HTTP upstream starts no process")


def session_settings(shell: ShellConfig) -> SessionSettings:
    return SessionSettings(timing=shell.timing, max_message_bytes=shell.max_message_bytes,
                           debug=shell.log_level == "debug")


async def _main(session: Session, fds: ProtocolFds,
                first: ProcessChild | ServerUnavailable | None,
                log: logs.Logger, early: EarlyLog) -> int:
    orphans = session.orphans
    with trio.open_signal_receiver(*ENDING, signal.SIGCHLD) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch, signals, session, orphans, log)
            nursery.start_soon(_load_log, early, session.client_written, session.driver)
            code = await session.run(fds.client_in, fds.client_out, first)
            nursery.cancel_scope.cancel()
    return code


async def _load_log(early: EarlyLog, answered: trio.Event, driver: Driver) -> None:
    """structlog, imported after the first answer at the session's first idle moment. On this
    thread, in one pause: imported in a worker thread it would contend for the interpreter
    lock with every message for as long as it took (measured: p99 7x the line relay's)."""
    with trio.move_on_after(LOG_WAIT):
        await answered.wait()
    startup.over()
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
