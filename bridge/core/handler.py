"""What the lifecycle (bridge.py) needs of a mode handler: P (relay/), A
(legacy_server_modern_client/) or B (modern_server_legacy_client/); and the one that serves a
pair of eras, made.

Must not hold behaviour: it names the face each mode shows and imports a mode's module only
when that mode is chosen, so the lifecycle depends on none until then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import Era
from bridge.core.handover import ClientSession, Handover
from bridge.core.jsonrpc import Inbound
from bridge.core.probe import Probe
from bridge.core.restarts import Outage
from bridge.core.router import Router
from bridge.core.timers import Deadline

if TYPE_CHECKING:
    from bridge.core.lane import Lane

Mode = Literal["P", "A", "B"]


class Handler(Protocol):
    @property
    def mode(self) -> Mode: ...
    router: Router

    @property
    def lane(self) -> Lane:
        """The steady state's one-step route (lane.py)."""

    @property
    def client_batching(self) -> bool: ...
    @property
    def resuming(self) -> bool:
        """Whether it is still re-opening a client's session at a new server: the bridge
        holds the client's messages until it is done."""
    def on_client(self, inbound: Inbound) -> None: ...
    def on_server(self, inbound: Inbound) -> None: ...
    def on_timer(self, key: Deadline) -> None: ...
    def on_change(self, message: Message) -> None:
        """A change another core of the client heard from its server (`ChangeRelayed`)."""
    def busy(self) -> bool: ...
    def fail_pending(self, reason: str, data: Message | None = None) -> None: ...
    def lose_server(self, outage: Outage) -> Handover:
        """The server is gone: answer what it took, and hand on the client's session."""
    def resume(self, session: ClientSession) -> None:
        """Re-open at this (new) server the session a lost handler handed over."""


def new_handler(ctx: Context, client_era: Era, server_era: Era, probe: Probe,
                secret: bytes) -> Handler:
    """The handler of a client of `client_era` before a server of `server_era` (`probe`: what
    found the server's era; `secret`: mode B's requestState key)."""
    # Each mode is imported when chosen: a bridge runs one unless the server restarts as the
    # other era, and importing the others would add to every start-up.
    if client_era == server_era:
        from bridge.core.relay.mode import ModeP

        return ModeP(ctx, server_era)
    if client_era == "legacy":
        from bridge.core.legacy_server_modern_client.mode import ModeA

        return ModeA(ctx, probe)
    from bridge.core.modern_server_legacy_client.mode import ModeB

    return ModeB(ctx, probe, secret)
