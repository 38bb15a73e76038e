"""What a session is given: a client side and a server side.

Must not do anything: these are the shapes the session and the driver rely on. Client sides:
two fds (`fd_client.py`: stdio, a daemon's Unix connection), the HTTP front's modern
requests (`http/front.py`), one legacy HTTP session (`http/legacy.py`). Server sides: a
supervised child (`supervisor.py`) or a remote endpoint (`remote/upstream.py`), chosen in
`server_side.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from bridge.errors import ServerUnavailable
from bridge.shell.fdio.pump import Throttle
from bridge.shell.servers.child import Child
from bridge.shell.session.driver import Driver, Outbox, Server


class ClientSide(Outbox, Protocol):
    """Where a session's client is. It hands the driver what the client says
    (`Driver.lines`, as MessageReceived), and takes what the core sends the client (its
    `batch`, or `send`). Opened, then listened to once the server side is there."""

    def open(self, driver: Driver, nursery: trio.Nursery) -> None:
        """Its writing end (its tasks in the session's `nursery`)."""

    @property
    def throttle(self) -> Throttle:
        """Congested while the client takes no more for now: the server's reader waits."""

    def listen(self, server: Throttle) -> None:
        """Read the client from now on, waiting while `server` is congested."""

    async def drain(self, stall_timeout: float) -> None:
        """The core has stopped: deliver what it owes, giving up after `stall_timeout`
        seconds without progress (the session cancels it when hurried)."""

    def close(self) -> None:
        """Drop whatever is left, at once (the session's last step, whatever happened)."""


class ServerSide(Server, Protocol):
    """Where a session's server is: what the driver writes the server's lines to, and what
    it restarts. It hands the driver the server's lines, its start and its exit."""

    @property
    def congested(self) -> bool: ...
    async def relieved(self) -> None: ...
    def serve(self, child: Child | ServerUnavailable | None = None) -> None: ...
    def hurry(self) -> None: ...
    async def stop(self) -> None: ...
    def kill_all(self) -> None: ...


OpenServer = Callable[[Driver, trio.Nursery, Throttle], ServerSide]
"""Opens a session's server side once its nursery is open; the throttle is the client side,
which paces the reading of the server."""


class NeverFull:
    """The throttle of a client side that queues each answer within its own bound (the HTTP
    front's, `route.py`): one slow client never holds the server's reader back."""

    congested = False

    async def relieved(self) -> None:  # pragma: no cover - never congested
        return


NEVER_FULL = NeverFull()
