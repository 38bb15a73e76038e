"""Correlation: requests in flight on each face, each an `Exchange` filed under the id the
bridge minted.

Must not translate: it rewrites ids and hands each answer to the exchange that waits for it,
nothing else. Every mode remaps ids on both faces because the bridge injects requests of its
own (TRANSLATION.md §11.1); the peer's original id is restored with its JSON type.
"""

from __future__ import annotations

from collections import OrderedDict
from enum import StrEnum
from typing import cast

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.exchange import Exchange, served_request
from bridge.core.jsonrpc import WireId, notification
from bridge.core.timers import Deadline

CANCELLED_KEPT = 256
"""Ids the router remembers having cancelled, per side, to tell a late answer (expected)
from an unmatched one (a peer's mistake)."""

__all__ = ["Due", "Router", "other"]


class Due(StrEnum):
    """The router's deadlines, owned by a minted request id. (A StrEnum: hashed as its str,
    in C, where a plain Enum member hashes in Python: a forwarded request hashes its
    deadline three times.)"""

    REQUEST_TIMEOUT = "request timeout"


def other(side: Side) -> Side:
    return SERVER if side == CLIENT else CLIENT


class Router:
    """Exchanges keyed by the id the bridge used toward each side."""

    __slots__ = ("_cancelled", "ctx", "pending", "timed")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.pending: dict[Side, dict[str, Exchange]] = {CLIENT: {}, SERVER: {}}
        self._cancelled: dict[Side, OrderedDict[str, None]] = {CLIENT: OrderedDict(),
                                                               SERVER: OrderedDict()}
        """The last CANCELLED_KEPT ids cancelled per side: their late answers are expected."""
        self.timed = ctx.config.request_timeout > 0  # forwarded requests get a timeout

    def forward(self, to: Side, message: Message, exchange: Exchange,
                request: WireId | None = None) -> str:
        """Send a peer's request on to `to` under a fresh id, filed with `exchange`, which
        takes its answer. `request`: toward the client, the client request it belongs to."""
        ctx = self.ctx
        bid = ctx.mint_id()
        exchange.id = bid
        exchange.sent = ctx.now
        self.pending[to][bid] = exchange
        message["id"] = bid
        ctx.send(to, message, None, request)
        if self.timed and to == SERVER and exchange.timed:
            ctx.schedule(Deadline(bid, Due.REQUEST_TIMEOUT), ctx.config.request_timeout)
        if ctx.log_enabled:
            ctx.debug("request.forwarded", to=to, method=message["method"],
                      client_id=served_request(exchange), server_id=bid,
                      exchange=type(exchange).__name__)
        return bid

    def issue(self, to: Side, method: str, params: Message | None,
              exchange: Exchange, request: WireId | None = None) -> str:
        """Send a request of the bridge's own making to `to`, filed with `exchange` (as in
        `forward`)."""
        ctx = self.ctx
        bid = ctx.mint_id()
        exchange.id = bid
        exchange.sent = ctx.now
        self.pending[to][bid] = exchange
        message: Message = {"jsonrpc": "2.0", "id": bid, "method": method}
        if params is not None:
            message["params"] = params
        ctx.send(to, message, None, request)
        ctx.debug("request.issued", to=to, method=method, id=bid,
                  exchange=type(exchange).__name__)
        return bid

    def take(self, side: Side, message: Message) -> Exchange | None:
        """The exchange a response from `side` answers, removed with its timeout; None
        (logged) if unknown."""
        bid = message["id"]
        exchange = self.pending[side].pop(bid, None) if isinstance(bid, str) else None
        if exchange is None:
            if isinstance(bid, str) and bid in self._cancelled[side]:
                # cancellation.mdx §Behavior Requirements: the sender of the cancellation
                # ignores a response that arrives afterwards (the peer had answered already)
                self.ctx.debug("response.after_cancel", side=side, id=bid)
            else:
                self.ctx.log("warning", "response.unmatched", side=side, id=bid)
            return None
        if self.timed and exchange.timed:
            self.ctx.cancel_timer(Deadline(bid, Due.REQUEST_TIMEOUT))
        if self.ctx.log_enabled:
            self._matched(side, exchange, bid, "error" in message)
        return exchange

    def _matched(self, side: Side, exchange: Exchange, bid: str, failed: bool) -> None:
        self.ctx.debug("response.matched", side=side, method=exchange.method, server_id=bid,
                       client_id=served_request(exchange), exchange=type(exchange).__name__,
                       error=failed,
                       elapsed_ms=round((self.ctx.now - exchange.sent) * 1000, 3))

    def find(self, to: Side, origin_id: object) -> str | None:
        """The bridge id of the request `origin_id` made toward `to` (for cancellation).

        A scan, not an index: cancellations are rare and the hot path stays one dict op.
        """
        kind = type(origin_id)
        for bid, exchange in self.pending[to].items():
            if type(exchange.origin) is kind and exchange.origin == origin_id:
                return bid
        return None

    def withdraw(self, to: Side, bid: str) -> Exchange | None:
        """Forget the exchange of `bid` at `to`, which is being cancelled: its timeout goes,
        and an answer `to` sends for it all the same is expected, not a mistake."""
        exchange = self.pending[to].pop(bid, None)
        if exchange is not None and exchange.timed:
            self.ctx.cancel_timer(Deadline(bid, Due.REQUEST_TIMEOUT))
        cancelled = self._cancelled[to]
        cancelled[bid] = None
        if len(cancelled) > CANCELLED_KEPT:
            cancelled.popitem(last=False)
        return exchange

    def cancel(self, to: Side, bid: str, reason: str | None = None) -> Exchange | None:
        """Forget an exchange and tell `to` to stop working on it (cancellation.mdx)."""
        exchange = self.withdraw(to, bid)
        params: Message = {"requestId": bid}
        if reason:
            params["reason"] = reason
        self.ctx.send(to, notification("notifications/cancelled", params))
        return exchange

    def stop_clock(self, bid: str) -> None:
        """Stop request_timeout for `bid` while its peer waits on the client (a parked call)."""
        if self.timed:
            self.ctx.cancel_timer(Deadline(bid, Due.REQUEST_TIMEOUT))

    def start_clock(self, bid: str) -> None:
        """Give `bid` a whole request_timeout again: its peer is back at work on it."""
        if self.timed:
            self.ctx.schedule(Deadline(bid, Due.REQUEST_TIMEOUT), self.ctx.config.request_timeout)

    def on_deadline(self, key: Deadline) -> None:
        """The request timeout the router scheduled (`Due.REQUEST_TIMEOUT`) has come."""
        self.expire(cast(str, key.owner))  # a minted id: forward() made the key

    def expire(self, bid: str) -> Exchange | None:
        """A forwarded request outlived request_timeout: answer its origin, cancel it."""
        exchange = self.pending[SERVER].get(bid)
        if exchange is None:
            return None
        self.cancel(SERVER, bid, "mcp-rosetta request timeout")
        exchange.expired(self.ctx)
        self.ctx.log("warning", "request.timed_out", method=exchange.method, server_id=bid)
        return exchange

    def busy(self) -> bool:
        """Whether a client request still waits on the server (listen streams do not count)."""
        return any(exchange.awaited for exchange in self.pending[SERVER].values())

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """The server is gone: every exchange waiting on it is `lost`, so whoever waits gets
        `reason` (`data`, default: the bridge as the source, gains the method)."""
        pending = self.pending[SERVER]
        exchanges = list(pending.values())
        pending.clear()  # in place: relay/lane.py holds this dict
        for exchange in exchanges:
            exchange.lost(self.ctx, reason, data)
