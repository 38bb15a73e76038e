"""The stdio bridge's pool (--max-servers N, N > 1): its first session is the bridge's own,
and each later one a core before one more process of the same server command.

Must not be imported unless a pool is asked for: a stdio bridge of one process never pays for
it. The pool's rules are `session/pool.py`'s; the client's lines reach it through
`clients/fd_pool.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.shell.clients.fd_client import FdClient
from bridge.shell.clients.fd_pool import FdAnswers, PooledLines
from bridge.shell.logs import Logger
from bridge.shell.session.pool import STDIO_MAX_SERVERS, Pool, PoolSettings, Processes
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from bridge.shell.settings import ShellConfig


def pool_of(first: Bridge, core: Callable[[CoreConfig], Bridge], config: CoreConfig,
            shell: ShellConfig, servers: Servers, log: Logger,
            client: FdClient) -> PooledLines:
    """`client`'s pool, whose first core is `first` (the session's); `core` makes the others
    as the first was made."""

    def make_core(route: str, legacy: bool) -> Bridge:
        return core(dataclasses.replace(config, state_route=route, server_era="legacy",
                                        share_changes=True))  # to the first's streams

    settings = PoolSettings.of(shell, STDIO_MAX_SERVERS)
    pool = Pool(FdAnswers(client), log, first, make_core=make_core,
                open_server=servers.opener, processes=Processes(settings.max_servers - 1),
                settings=settings, session=SessionSettings.of(shell))
    pool.first.tracked = False  # its answers go in its driver's batch, past `Member.send`
    return PooledLines(pool)
