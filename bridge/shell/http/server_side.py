"""Where the front's sessions get their server: the one place that knows whether it is a
child on pipes or a Streamable HTTP endpoint (`--url`).

Must not decide anything for the protocol (each session's core does) nor know what a
session is: the front asks it for the shared modern session's server side and for every
legacy session's, each with that session's driver, nursery and log, and gets an `Upstream`
(bridge/shell/session.py) either way. So the era of the front's clients and the era of
the server stay two independent choices, as on stdio.
"""

from __future__ import annotations

from typing import Protocol

import trio

from bridge.shell.driver import Driver
from bridge.shell.logs import Logger
from bridge.shell.remote.endpoint import Endpoint
from bridge.shell.session import SessionSettings, Upstream
from bridge.shell.supervisor import Spawn, Supervisor


class ServerSide(Protocol):
    """Opens one session's server side once its nursery is open. `shared`: the front's
    shared modern session, which nobody's request opened; a remote server is then waited
    for until it answers (/readyz says `starting` meanwhile), where a legacy session,
    opened by a client's `initialize`, tells that client at once if it is not there."""

    def __call__(self, driver: Driver, nursery: trio.Nursery, log: Logger, *,
                 shared: bool = False) -> Upstream: ...


class NeverFull:
    """The client side as the server's reader sees it: HTTP answers are queued per POST,
    each within its own bound (`route.py`), so one slow client never holds the shared
    server's reader back for the others."""

    congested = False

    async def relieved(self) -> None:  # pragma: no cover - never congested
        return


def children(spawn: Spawn, settings: SessionSettings) -> ServerSide:
    """Each session's server is a child `spawn` starts, under a supervisor of its own."""
    def open_child(driver: Driver, nursery: trio.Nursery, log: Logger, *,
                   shared: bool = False) -> Upstream:
        return Supervisor(spawn, driver, nursery, settings.timing, log,
                          limit=settings.max_message_bytes, feeds=NeverFull())

    return open_child


def remote(where: Endpoint, settings: SessionSettings) -> ServerSide:
    """Each session's server is a session of its own with the endpoint `where`: its own
    HTTP client and connections, its own legacy `Mcp-Session-Id` (a legacy server keeps
    one client's state per session, as a child keeps it per process)."""
    from bridge.shell.remote.upstream import opener  # httpx2: only with --url, after trio

    def open_remote(driver: Driver, nursery: trio.Nursery, log: Logger, *,
                    shared: bool = False) -> Upstream:
        return opener(where, log, limit=settings.max_message_bytes,
                      reach_first=shared)(driver, nursery, NeverFull())

    return open_remote
