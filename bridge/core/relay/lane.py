"""Mode P's lane (core/lane.py): the client's messages relayed in one step as well.

Must not decide anything the full path (`ModeP.on_client` -> `Router`) does not: it takes
a client's request, notification or result in the shapes `parse_inbound` takes in one pass,
and does for them what the relay's per-kind methods do, inlining the step every call takes (a
plain call forwarded) while no request timeout and no debug log is on; the server's lines
take the common lane's route (`Lane.from_server`). `tests/core/test_lanes.py` holds its
actions to the full path's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bridge.core.codec import DecodeError, Message, decode
from bridge.core.events import SERVER, Send
from bridge.core.exchange import Exchange
from bridge.core.jsonrpc import ABSENT, Inbound, classified, parse_inbound
from bridge.core.lane import ASKED_AT_MOST, Lane, LaneHost
from bridge.core.relay.exchanges import RelayedCall, RelayHost


class RelayLaneHost(LaneHost, RelayHost, Protocol):
    """The relay (`ModeP`) as its lane sees it: the per-kind methods of its full path
    (and, as a RelayHost, what its exchanges see)."""

    tracked: dict[str, Callable[[Message], Exchange]]

    def call(self, message: Message) -> Exchange:
        """The exchange of an untracked request relayed as it is."""
    def on_client_notification(self, message: Message) -> None: ...
    def on_client_response(self, message: Message, line: bytes | None) -> None: ...


class RelayLane(Lane):
    """The steady-state route of one `ModeP`'s messages (`inline` covers the router's
    forward as well as its take)."""

    __slots__ = ("relay",)

    def __init__(self, relay: RelayLaneHost) -> None:
        super().__init__(relay)
        self.relay = relay

    def from_client(self, line: bytes) -> Inbound | None:
        """Relay a client's line; None when done, else its classification, for the full path
        (not one of the shapes taken here)."""
        if type(line) is not bytes:  # text (no shell sends it): kept as no Inbound.line
            return parse_inbound(line, batching=self.relay.client_batching)
        try:
            message = decode(line)
        except DecodeError:
            return parse_inbound(line, batching=self.relay.client_batching)
        if type(message) is dict and message.get("jsonrpc") == "2.0":
            id_ = message.get("id", ABSENT)
            method = message.get("method", ABSENT)
            if type(method) is str:
                params = message.get("params", ABSENT)
                if params is ABSENT or type(params) is dict:
                    id_kind = type(id_)
                    if id_kind is str or id_kind is int:
                        # ModeP.on_client_request, Router.forward inlined if it may be.
                        relay = self.relay
                        track = relay.tracked.get(method)
                        if track is not None:
                            exchange = track(message)
                        elif type(params) is not dict or type(params.get("_meta")) is not dict:
                            exchange = RelayedCall(id_, method, relay)  # as relay.call makes it
                        else:
                            exchange = relay.call(message)
                        asked = self.asked  # an observer's (observe.py)
                        if asked is not None:
                            if exchange.claims and self.ctx.observer is not None:
                                exchange.asking = (message, self.ctx.now)  # claimed
                            elif len(asked) < ASKED_AT_MOST:
                                asked[id_] = (message, self.ctx.now)
                        if not self.inline:
                            self.router.forward(SERVER, message, exchange)
                            return None
                        ctx = self.ctx
                        bid = ctx.mint_id()
                        exchange.id = bid
                        exchange.sent = ctx.now
                        self.to_server[bid] = exchange
                        message["id"] = bid
                        ctx.actions.append(Send(SERVER, message, None, None))
                        return None
                    if id_ is ABSENT and method != "notifications/cancelled":
                        # A cancellation takes the full path, where an observer sees it.
                        self.relay.on_client_notification(message)
                        return None
            elif method is ABSENT and id_ is not ABSENT and type(id_) is not float \
                    and type(message.get("result")) is dict and "error" not in message:
                self.relay.on_client_response(message, line)
                return None
        return classified(line, message, self.relay.client_batching)
