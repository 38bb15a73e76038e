"""`mcp-rosetta serve` as a process: the listening socket, the signals, systemd, the trio run.

Must not hold protocol logic nor serve connections itself (bridge/shell/services/daemon.py does; the
process around it is service.py's). SIGTERM, SIGINT and SIGQUIT stop the daemon (a second
one skips the grace periods); SIGHUP reloads the configuration for new sessions; SIGCHLD
reaps adopted orphans.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import trio

from bridge import collector
from bridge.shell import logs
from bridge.shell.servers.child import check_command
from bridge.shell.services.daemon import Daemon
from bridge.shell.services.listeners import listening
from bridge.shell.services.notify import Notifier
from bridge.shell.services.orphans import Orphans
from bridge.shell.services.service import Service, watchdog_interval
from bridge.shell.session.server_side import check_reload
from bridge.shell.session.transcript import check_transcript
from bridge.shell.settings import Settings

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
        notify = Notifier(log)
        daemon = Daemon(settings, log, notify)
        service = Service(daemon, log, notify, read=reload, apply=partial(_apply, daemon),
                          kill_grace=settings.shell.timing.kill_grace,
                          watchdog=watchdog_interval(), orphans=orphans)
        trio.run(service.run, listener)
    log.debug("collector.reported", **collector.state())
    return 0


def _check_server(settings: Settings) -> None:
    """A command to start, or a URL whose headers' ${VAR} are all set (each session reads
    them again: a variable unset later refuses that session)."""
    if settings.shell.url is not None:
        import os

        from bridge.shell.servers.remote.endpoint import resolve

        resolve(settings.shell, os.environ)
    else:
        check_command(settings.shell.command)


def _apply(daemon: Daemon, settings: Settings) -> None:
    """A reload, refused (ConfigError) for a server no new session could start or a
    transcript that cannot be written."""
    check_reload(settings.shell)
    check_transcript(settings.shell.transcript)
    daemon.reload(settings)
