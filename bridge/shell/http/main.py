"""`mcp-rosetta serve --listen http://…` as a process: the socket, the signals, the trio run.

Must not serve requests itself (`front.py` does). SIGTERM, SIGINT and SIGQUIT stop the front
(a second one skips the grace periods); SIGHUP is logged and ignored for now (the shared
session cannot take new settings without a restart); SIGCHLD reaps adopted orphans.
"""

from __future__ import annotations

import os
import resource
import signal

import trio

from bridge.config import Settings
from bridge.errors import ConfigError
from bridge.shell import logs
from bridge.shell.child import check_command, spawner
from bridge.shell.daemon import session_settings
from bridge.shell.http.address import is_loopback, parse_address
from bridge.shell.http.front import FD_FIX, Front, bind
from bridge.shell.notify import Notifier
from bridge.shell.orphans import Orphans

STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
FD_MARGIN = 64
"""fds beyond one per connection: the listener, the child's pipes, refusals under way."""
FDS_PER_SESSION = 4
"""A legacy session's server child: its three pipes and its pidfd."""


def run_http(settings: Settings) -> int:
    """Serve the Streamable HTTP front until stopped; the exit status."""
    check_command(settings.shell.command)
    assert settings.daemon.listen is not None
    address = parse_address(settings.daemon.listen)
    if not is_loopback(address.host):
        # streamable-http.mdx §Security & Endpoint: bind localhost when running locally;
        # anything else needs the bearer token, which is not built yet (issue 21).
        raise ConfigError(f"listen {settings.daemon.listen}: the HTTP front binds loopback "
                          "only for now (put a reverse proxy in front for other hosts)")
    log = logs.configure(settings.shell.log_level, settings.shell.log_format)
    log.info("daemon.started", **logs.started_fields(settings.shell))
    room_for(settings.daemon.max_connections + FDS_PER_SESSION * settings.daemon.max_sessions
             + FD_MARGIN, log)
    try:
        listener = bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {settings.daemon.listen}: {exc.strerror}") \
            from None
    from bridge.core.bridge import Bridge

    def legacy_core() -> Bridge:  # a legacy session's own, as a daemon session's
        return Bridge(settings.core, secret=os.urandom(32))

    daemon = settings.daemon
    front = Front(legacy_core(), spawner(settings.shell), address, log,
                  settings=session_settings(settings), notify=Notifier(log),
                  make_core=legacy_core, max_sessions=daemon.max_sessions,
                  session_idle=daemon.session_idle, idle_timeout=daemon.connection_idle,
                  max_connections=daemon.max_connections,
                  stream_backlog=daemon.stream_backlog)
    with listener:
        return trio.run(_main, front, listener, Orphans(), log)


def room_for(fds: int, log: logs.Logger) -> None:
    """Raise the soft open-file limit to `fds` if the hard one allows: systemd and most
    shells start a process at a soft 1024, below what max_connections needs (systemd's
    own advice is that a server raises its soft limit itself). Below that: said once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= fds:
        return
    target = fds if hard == resource.RLIM_INFINITY else min(fds, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < fds:
        log.warning("http.open_files_low", limit=target, needed=fds, fix=FD_FIX)


async def _main(front: Front, listener: object, orphans: Orphans, log: logs.Logger) -> int:
    with trio.open_signal_receiver(*STOPPING, signal.SIGHUP, signal.SIGCHLD) as signals:
        async with trio.open_nursery() as nursery:
            async def watch() -> None:
                async for signum in signals:
                    if signum == signal.SIGCHLD:
                        orphans.reap()
                        continue
                    log.info("signal.received", signal=signal.Signals(signum).name)
                    if signum == signal.SIGHUP:
                        log.warning("daemon.reload_ignored",
                                    reason="the HTTP front does not reload yet")
                    else:
                        front.stop()

            nursery.start_soon(watch, name="signals")
            code = await front.run(listener)  # type: ignore[arg-type]
            nursery.cancel_scope.cancel()
    await orphans.end_all(2.0)
    return code
