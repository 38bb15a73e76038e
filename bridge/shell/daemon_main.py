"""`mcp-rosetta serve` as a process: the listening socket, the signals, systemd, the trio run.

Must not hold protocol logic nor serve connections itself (bridge/shell/daemon.py does).
SIGTERM, SIGINT and SIGQUIT stop the daemon (a second one skips the grace periods); SIGHUP
reloads the configuration for new sessions; SIGCHLD reaps adopted orphans.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable

import trio

from bridge import collector
from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.shell import logs
from bridge.shell.child import check_command
from bridge.shell.daemon import Daemon, watchdog_interval
from bridge.shell.listeners import listening
from bridge.shell.notify import Notifier
from bridge.shell.orphans import Orphans
from bridge.shell.transcript import check_transcript

STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
Reload = Callable[[], Settings]


def run_daemon(settings: Settings, reload: Reload) -> int:
    """Serve until stopped; the exit status. `reload` reads the configuration again."""
    if (settings.daemon.listen or "").startswith("http://"):
        from bridge.shell.http.main import run_http

        return run_http(settings, reload)
    _check_server(settings)
    check_transcript(settings.shell.transcript)
    log = logs.configure(settings.shell.log_level, settings.shell.log_format)
    log.info("daemon.started", **logs.started_fields(settings.shell))
    orphans = Orphans()
    with listening(settings.daemon) as listener:
        daemon = Daemon(settings, log, Notifier(log), watchdog=watchdog_interval())
        trio.run(_main, daemon, listener, reload, orphans, log)
    log.debug("collector.reported", **collector.state())
    return 0


async def _main(daemon: Daemon, listener: object, reload: Reload, orphans: Orphans,
                log: logs.Logger) -> None:
    with trio.open_signal_receiver(*STOPPING, signal.SIGHUP, signal.SIGCHLD) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch, signals, daemon, reload, orphans, log)
            await daemon.run(listener)  # type: ignore[arg-type]
            nursery.cancel_scope.cancel()
    grace = daemon.settings.shell.timing.kill_grace
    ended = await orphans.end_all(grace)
    if ended:
        log.info("orphans.ended", count=ended)


async def _watch(signals: AsyncIterator[int], daemon: Daemon, reload: Reload,
                 orphans: Orphans, log: logs.Logger) -> None:
    async for signum in signals:
        if signum == signal.SIGCHLD:
            orphans.reap()
            continue
        log.info("signal.received", signal=signal.Signals(signum).name)
        if signum == signal.SIGHUP:
            _reload(daemon, reload)
        else:
            daemon.stop()


def _check_server(settings: Settings) -> None:
    """A command to start, or a URL whose headers' ${VAR} are all set (each session reads
    them again: a variable unset later refuses that session)."""
    if settings.shell.url is not None:
        import os

        from bridge.shell.remote.endpoint import resolve

        resolve(settings.shell, os.environ)
    else:
        check_command(settings.shell.command)


def _reload(daemon: Daemon, reload: Reload) -> None:
    try:
        settings = reload()
        _check_server(settings)
        check_transcript(settings.shell.transcript)
    except BridgeError as exc:
        daemon.reload(None, str(exc))
        return
    daemon.reload(settings)
