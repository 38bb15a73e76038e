"""Where a session's server side comes from: the one place that knows whether the server is
a child on pipes (a command) or a Streamable HTTP endpoint (`url`).

Must not decide anything for the protocol (each session's core does) nor know the client:
every entry point (stdio, the daemon, the HTTP front) asks it for a session's `OpenServer`
and gets a supervisor or an HTTP upstream behind the same `ServerSide` (sides.py). So the
era of the clients and the era of the server stay two independent choices.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import trio

from bridge.core.record import record
from bridge.errors import ConfigError
from bridge.shell.logs import Logger
from bridge.shell.servers.child import check_command, spawner
from bridge.shell.servers.environment import server_environment
from bridge.shell.servers.start_failure import not_found
from bridge.shell.servers.supervisor import Spawn, Supervisor
from bridge.shell.session.session import SessionSettings
from bridge.shell.session.sides import OpenServer, ServerSide
from bridge.shell.settings import ShellConfig

if TYPE_CHECKING:
    from bridge.shell.fdio.pump import Throttle
    from bridge.shell.servers.remote.endpoint import Endpoint
    from bridge.shell.session.driver import Driver


@record(frozen=True)
class Servers:
    """Every session's server: a child `spawn` starts (a supervisor of its own per session),
    or a session of its own with the endpoint `where` (its own HTTP client and connections,
    its own legacy `Mcp-Session-Id`: a legacy server keeps one client's state per session,
    as a child keeps it per process)."""

    settings: SessionSettings
    spawn: Spawn | None = None
    where: Endpoint | None = None

    def opener(self, log: Logger, *, reach_first: bool = False) -> OpenServer:
        """How one session opens its server side. `reach_first`: a session nobody's request
        opened (the HTTP front's shared one) waits until a remote server answers, where a
        client's own session tells that client at once if it is not there."""
        settings = self.settings
        if self.where is not None:
            from bridge.shell.servers.remote.upstream import opener  # httpx2: only with a URL

            return opener(self.where, log, limit=settings.max_message_bytes,
                          reach_first=reach_first)
        spawn = self.spawn
        assert spawn is not None

        def open_child(driver: Driver, nursery: trio.Nursery, feeds: Throttle) -> ServerSide:
            return Supervisor(spawn, driver, nursery, settings.timing, log,
                              limit=settings.max_message_bytes, feeds=feeds)

        return open_child


def servers_for(shell: ShellConfig, settings: SessionSettings, *,
                make_spawn: Callable[[ShellConfig], Spawn] = spawner,
                environ: Mapping[str, str] = os.environ) -> Servers:
    """The server `shell` names: its URL (the headers' ${VAR} read now: ConfigError if one
    is unset), else its command."""
    if shell.url is not None:
        from bridge.shell.servers.remote.endpoint import resolve

        return Servers(settings, where=resolve(shell, environ))
    return Servers(settings, spawn=make_spawn(shell))


def check_reload(shell: ShellConfig, environ: Mapping[str, str] = os.environ) -> None:
    """ConfigError if no new session could start `shell`'s server: a URL whose headers name
    an unset ${VAR}, or a command that cannot be found on the PATH its server would get.
    (At start-up a missing program is left to each session, whose core tells its client;
    a reload that would make every new session fail is refused, the settings in force stay.)
    """
    if shell.url is not None:
        from bridge.shell.servers.remote.endpoint import resolve

        resolve(shell, environ)
        return
    check_command(shell.command)
    problem = not_found(shell.command, server_environment(environ, shell.env, shell.pass_env),
                        shell.cwd)
    if problem is not None:
        raise ConfigError(problem)
