"""Mode P's steady state in one step: a line from either peer decoded, classified and relayed
by one method, with no `Inbound` made and no layer in between.

Must not decide anything the full path (`Bridge._on_client_line`/`_on_server` ->
`jsonrpc.parse_inbound` -> `PassThrough.on_client`/`dispatch.from_server` -> `Router`)
does not: the lane only takes the shapes `parse_inbound` takes in its own one pass, and does
for them what the relay's per-kind methods do, inlining only the two steps every call takes
(a plain call forwarded, its result answered) while no request timeout and no debug log is
on; everything else it hands to those methods, or, for any other shape, returns the whole
classification for the full path to route. The Bridge uses it only while nothing else may see
a message first (no detour, no open batch; for the server's, no abandoned ids and no probe
awaited). `tests/core/test_relay_lane.py` holds its actions to the full path's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bridge.core.codec import DecodeError, Message, decode
from bridge.core.events import SERVER, Send
from bridge.core.exchange import Exchange
from bridge.core.jsonrpc import ABSENT, Inbound, classified, parse_inbound
from bridge.core.relay.exchanges import RelayedCall, RelayHost
from bridge.core.router import Router


class LaneHost(RelayHost, Protocol):
    """The relay (`PassThrough`) as its lane sees it: the per-kind methods of its full path
    (and, as a RelayHost, what its exchanges see)."""

    router: Router
    tracked: dict[str, Callable[[Message], Exchange]]

    def call(self, message: Message) -> Exchange:
        """The exchange of an untracked request relayed as it is."""
    def on_client_notification(self, message: Message) -> None: ...
    def on_client_response(self, message: Message, line: bytes | None) -> None: ...
    def on_server_request(self, message: Message) -> None: ...
    def on_server_notification(self, message: Message) -> None: ...


class RelayLane:
    """The steady-state route of one `PassThrough`'s messages.

    One method per peer, its hot shapes inlined (no call per step): this is the path every
    relayed call and answer takes, where each Python call costs more than the step it makes.
    """

    __slots__ = ("ctx", "inline", "relay", "router", "to_server")

    def __init__(self, relay: LaneHost) -> None:
        self.relay = relay
        self.ctx = relay.ctx
        self.router = relay.router
        # The router keeps this dict for its whole life (fail_all empties it in place).
        self.to_server = relay.router.pending[SERVER]
        # Whether the router's forward and take may be inlined: with no request timeout to
        # schedule or cancel and no debug line to log (both fixed by the configuration).
        self.inline = not (relay.router.timed or relay.ctx.log_enabled)

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
                        # PassThrough.on_client_request, Router.forward inlined if it may be.
                        relay = self.relay
                        track = relay.tracked.get(method)
                        if track is not None:
                            exchange = track(message)
                        elif type(params) is not dict or type(params.get("_meta")) is not dict:
                            exchange = RelayedCall(id_, method, relay)  # as relay.call makes it
                        else:
                            exchange = relay.call(message)
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
                    if id_ is ABSENT:
                        self.relay.on_client_notification(message)
                        return None
            elif method is ABSENT and id_ is not ABSENT and type(id_) is not float \
                    and type(message.get("result")) is dict and "error" not in message:
                self.relay.on_client_response(message, line)
                return None
        return classified(line, message, self.relay.client_batching)

    def from_server(self, line: bytes, probe_id: str | None) -> Inbound | None:
        """Relay a server's line (`probe_id`: the probe's id, whose late answer is the
        lifecycle's); None when done, else its classification, for the full path."""
        if type(line) is not bytes:  # text (no shell sends it): kept as no Inbound.line
            return parse_inbound(line)
        try:
            message = decode(line)
        except DecodeError:
            return parse_inbound(line)
        if type(message) is dict and message.get("jsonrpc") == "2.0":
            id_ = message.get("id", ABSENT)
            method = message.get("method", ABSENT)
            if method is ABSENT:
                if type(id_) is str and id_ != probe_id \
                        and type(message.get("result")) is dict and "error" not in message:
                    # dispatch.from_server's response, Router.take inlined if it may be: an
                    # id not found (unmatched, or cancelled) is the router's to log.
                    exchange = self.to_server.pop(id_, None) if self.inline else None
                    if exchange is None:
                        exchange = self.router.take(SERVER, message)
                    if exchange is not None:
                        exchange.answered(message, line)
                    return None
            elif type(method) is str:
                params = message.get("params", ABSENT)
                if params is ABSENT or type(params) is dict:
                    id_kind = type(id_)
                    if id_kind is str or id_kind is int:
                        self.relay.on_server_request(message)
                        return None
                    if id_ is ABSENT:
                        self.relay.on_server_notification(message)
                        return None
        return classified(line, message)
