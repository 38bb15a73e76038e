"""A mode's steady state in one step: a line from either peer decoded, classified and routed by
one method, with no `Inbound` made and no layer in between.

Must not decide anything the full path (`Bridge._on_client_line`/`_on_server` ->
`jsonrpc.parse_inbound` -> the mode's `on_client`/`dispatch.from_server` -> `Router`) does
not: a lane takes only the shapes `parse_inbound` takes in its own one pass (a request from
the client; from the server, a result, a request or a notification), hands each to the method
of the mode the full path ends in, and returns the whole classification of anything else for
the full path to route. The Bridge uses a lane only while nothing else may see a message first
(no detour, no open batch; for the server's, no abandoned ids and no probe awaited).
`tests/core/test_lanes.py` holds every mode's lane to its full path.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core.codec import DecodeError, Message, decode
from bridge.core.dispatch import ServerFace
from bridge.core.events import SERVER
from bridge.core.jsonrpc import ABSENT, Inbound, classified, parse_inbound

ASKED_AT_MOST = 4096
"""Requests filed for an observer at once; past it, new ones go unfiled (a client that never
reads its answers must not grow the table)."""


class LaneHost(ServerFace, Protocol):
    """A mode as its lane sees it: the requests of its client, and its server's messages."""

    client_batching: bool  # whether the client's revision may batch (2025-03-26)

    def on_client_request(self, message: Message) -> None:
        """A request of the client's, as the mode's `on_client` takes one."""


class Lane:
    """The steady-state route of one mode's messages.

    One method per peer, its hot shapes inlined (no call per step): this is the path every
    call and answer takes, where each Python call costs more than the step it makes. So each
    method (and RelayLane's) reads its line itself: the same few lines three times, where a
    shared helper would cost a frame per line, 1-2% of a call (measured).
    """

    __slots__ = ("asked", "ctx", "host", "inline", "router", "to_server")

    def __init__(self, host: LaneHost) -> None:
        self.host = host
        self.ctx = host.ctx
        self.router = host.router
        # The router keeps this dict for its whole life (fail_all empties it in place).
        self.to_server = host.router.pending[SERVER]
        # Whether the router's take may be inlined: with no request timeout to cancel and no
        # debug line to log (both fixed by the configuration).
        self.inline = not (host.router.timed or host.ctx.log_enabled)
        # Where an observing Bridge (observe.py) has each request filed, else None; the
        # mode's exchange may take the filing back (claim it) and count its answer itself.
        self.asked: dict[object, tuple[Message, float]] | None = None

    def from_client(self, line: bytes) -> Inbound | None:
        """Route a client's request; None when done, else the line's classification, for
        the full path (not the shape taken here)."""
        if type(line) is not bytes:  # text (no shell sends it): kept as no Inbound.line
            return parse_inbound(line, batching=self.host.client_batching)
        try:
            message = decode(line)
        except DecodeError:
            return parse_inbound(line, batching=self.host.client_batching)
        if type(message) is dict and message.get("jsonrpc") == "2.0":
            id_kind = type(message.get("id"))
            if (id_kind is str or id_kind is int) and type(message.get("method")) is str:
                params = message.get("params", ABSENT)
                if params is ABSENT or type(params) is dict:
                    asked = self.asked
                    if asked is not None and len(asked) < ASKED_AT_MOST:
                        asked[message["id"]] = (message, self.ctx.now)
                    self.host.on_client_request(message)
                    return None
        return classified(line, message, self.host.client_batching)

    def from_server(self, line: bytes, probe_id: str | None) -> Inbound | None:
        """Route a server's line (`probe_id`: the probe's id, whose late answer is the
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
                        self.host.on_server_request(message)
                        return None
                    if id_ is ABSENT:
                        self.host.on_server_notification(message)
                        return None
        return classified(line, message)
