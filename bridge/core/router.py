"""Correlation: requests in flight on each face, each an `Exchange` filed under the id the
bridge minted.

Must not translate: it rewrites ids and hands each answer to the exchange that waits for it,
nothing else. Every mode remaps ids on both faces because the bridge injects requests of its
own (TRANSLATION.md §11.1); the peer's original id is restored with its JSON type.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from bridge.core.context import Context
from bridge.core.errors import SOURCE, server_lost, timed_out
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.exchange import NO_REQUEST, Exchange
from bridge.core.jsonrpc import notification
from bridge.core.timers import Deadline

# The origin of a request the bridge made itself (the name the modes still use).
BRIDGE = NO_REQUEST

__all__ = ["BRIDGE", "SOURCE", "Due", "Pending", "Router", "answer_timed_out", "other"]


class Due(StrEnum):
    """The router's deadlines, owned by a minted request id. (A StrEnum: hashed as its str,
    in C, where a plain Enum member hashes in Python: a forwarded request hashes its
    deadline three times.)"""

    REQUEST_TIMEOUT = "request timeout"


class Pending(Exchange):
    """An exchange told apart by a `purpose` string, for a mode that still keeps a table of
    answers by purpose; its `data` is whatever that mode kept."""

    __slots__ = ("awaited", "data", "purpose", "timed")

    def __init__(self, origin_id: Any, method: str, purpose: str, data: Any = None,
                 sent: float = 0.0) -> None:
        super().__init__(origin_id, method)
        self.purpose = purpose
        self.data = data
        self.sent = sent
        self.timed = purpose == "forward"
        self.awaited = purpose in ("forward", "round")

    @property
    def origin_id(self) -> Any:
        return self.origin


def other(side: Side) -> Side:
    return SERVER if side == CLIENT else CLIENT


class Router:
    """Exchanges keyed by the id the bridge used toward each side."""

    __slots__ = ("ctx", "pending", "timed")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # Exchange values (typed Any while modes still read Pending rows).
        self.pending: dict[Side, dict[str, Any]] = {CLIENT: {}, SERVER: {}}
        self.timed = ctx.config.request_timeout > 0  # forwarded requests get a timeout

    def forward(
        self, to: Side, message: dict[str, Any], purpose: str | Exchange = "forward",
        data: Any = None, origin_id: Any = None,
    ) -> str:
        """Send a peer's request on to `to` under a fresh id, filed under `purpose`: the
        exchange that takes its answer (or a `Pending` row of that purpose, whose origin is the
        id the request came with unless `origin_id` names another)."""
        ctx = self.ctx
        if isinstance(purpose, Exchange):
            exchange = purpose
        else:
            exchange = Pending(message["id"] if origin_id is None else origin_id,
                               message["method"], purpose, data)
        bid = ctx.mint_id()
        exchange.id = bid
        exchange.sent = ctx.now
        self.pending[to][bid] = exchange
        message["id"] = bid
        ctx.send(to, message)
        if self.timed and to == SERVER and exchange.timed:
            ctx.schedule(self._deadline(exchange, bid), ctx.config.request_timeout)
        if ctx.log_enabled:
            ctx.debug("request.forwarded", to=to, method=message["method"],
                      client_id=exchange.origin, server_id=bid, exchange=_name(exchange))
        return bid

    def issue(
        self,
        to: Side,
        method: str,
        params: dict[str, Any] | None,
        purpose: str | Exchange,
        data: Any = None,
        origin_id: Any = BRIDGE,
    ) -> str:
        """Send a request of the bridge's own making to `to`, filed under `purpose` (as in
        `forward`)."""
        exchange = purpose if isinstance(purpose, Exchange) else Pending(origin_id, method,
                                                                         purpose, data)
        bid = self._file(to, exchange)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": bid, "method": method}
        if params is not None:
            message["params"] = params
        self.ctx.send(to, message)
        self.ctx.debug("request.issued", to=to, method=method, id=bid, exchange=_name(exchange))
        return bid

    def _file(self, to: Side, exchange: Exchange) -> str:
        bid = self.ctx.mint_id()
        exchange.id = bid
        exchange.sent = self.ctx.now
        self.pending[to][bid] = exchange
        return bid

    @staticmethod
    def _deadline(exchange: Exchange, bid: str) -> Any:
        # A Pending row keeps the tuple key its mode's timer table reads.
        return ("timeout", bid) if isinstance(exchange, Pending) else Deadline(
            bid, Due.REQUEST_TIMEOUT)

    def take(self, side: Side, message: dict[str, Any]) -> Any:  # Exchange | None
        """The exchange a response from `side` answers, removed with its timeout; None
        (logged) if unknown."""
        bid = message["id"]
        exchange = self.pending[side].pop(bid, None) if isinstance(bid, str) else None
        if exchange is None:
            self.ctx.log("warning", "response.unmatched", side=side, id=bid)
            return None
        if self.timed and exchange.timed:
            self.ctx.cancel_timer(self._deadline(exchange, bid))
        if self.ctx.log_enabled:
            self._matched(side, exchange, bid, "error" in message)
        return exchange

    def _matched(self, side: Side, exchange: Exchange, bid: str, failed: bool) -> None:
        origin = None if exchange.origin is BRIDGE else exchange.origin
        self.ctx.debug("response.matched", side=side, method=exchange.method, server_id=bid,
                       client_id=origin, exchange=_name(exchange), error=failed,
                       elapsed_ms=round((self.ctx.now - exchange.sent) * 1000, 3))

    def find(self, to: Side, origin_id: Any) -> str | None:
        """The bridge id of the request `origin_id` made toward `to` (for cancellation).

        A scan, not an index: cancellations are rare and the hot path stays one dict op.
        """
        kind = type(origin_id)
        for bid, exchange in self.pending[to].items():
            if type(exchange.origin) is kind and exchange.origin == origin_id:
                return bid
        return None

    def cancel(self, to: Side, bid: str, reason: str | None = None) -> Any:  # Exchange | None
        """Forget an exchange and tell `to` to stop working on it (cancellation.mdx)."""
        exchange = self.pending[to].pop(bid, None)
        if exchange is not None and exchange.timed:
            self.ctx.cancel_timer(self._deadline(exchange, bid))
        params: dict[str, Any] = {"requestId": bid}
        if reason:
            params["reason"] = reason
        self.ctx.send(to, notification("notifications/cancelled", params))
        return exchange

    def expire(self, bid: str) -> Any:  # Exchange | None
        """A forwarded request outlived request_timeout: answer its origin, cancel it."""
        exchange = self.pending[SERVER].get(bid)
        if exchange is None:
            return None
        self.cancel(SERVER, bid, "mcp-rosetta request timeout")
        if isinstance(exchange, Pending):
            answer_timed_out(self.ctx, exchange.origin, exchange.method)
        else:
            exchange.expired(self.ctx)
        self.ctx.log("warning", "request.timed_out", method=exchange.method, server_id=bid)
        return exchange

    def busy(self) -> bool:
        """Whether a client request still waits on the server (listen streams do not count)."""
        return any(exchange.awaited for exchange in self.pending[SERVER].values())

    def fail_all(self, reason: str, data: dict[str, Any] | None = None,
                 purposes: tuple[str, ...] = ("forward",)) -> None:
        """The server is gone: every exchange waiting on it is `lost`, so whoever waits gets
        `reason` (`data`, default: the bridge as the source, gains the method). A `Pending`
        row answers its client if its purpose is one of `purposes`."""
        exchanges = self.pending[SERVER]
        self.pending[SERVER] = {}
        for exchange in exchanges.values():
            if not isinstance(exchange, Pending):
                exchange.lost(self.ctx, reason, data)
            elif exchange.origin is not BRIDGE and exchange.purpose in purposes:
                self.ctx.fail(CLIENT, exchange.origin, server_lost(reason, data, exchange.method))


def _name(exchange: Exchange) -> str:
    return exchange.purpose if isinstance(exchange, Pending) else type(exchange).__name__


def answer_timed_out(ctx: Context, origin_id: Any, method: str) -> None:
    """The error a client request gets when request_timeout ends its wait."""
    ctx.fail(CLIENT, origin_id, timed_out(ctx.config.request_timeout, method))
