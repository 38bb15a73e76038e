"""Correlation rows: requests in flight on each face, under ids the bridge minted.

Must not translate: it rewrites ids and remembers where an answer must go, nothing else.
Every mode remaps ids on both faces because the bridge injects requests of its own
(TRANSLATION.md §11.1); the peer's original id is restored with its JSON type.
"""

from __future__ import annotations

from typing import Any

from bridge.core.context import Context
from bridge.core.eras import INTERNAL_ERROR
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.jsonrpc import notification

# The origin of a request the bridge made itself: no peer waits for its answer.
BRIDGE = object()
# The data of an error the bridge makes itself (TRANSLATION.md §3.4).
SOURCE: dict[str, Any] = {"source": "mcp-rosetta"}


class Pending:
    """One request in flight: who asked (`origin_id`), what, and why (`purpose`, `data`),
    and when it was sent (`sent`, the core's clock)."""

    __slots__ = ("data", "method", "origin_id", "purpose", "sent")

    def __init__(self, origin_id: Any, method: str, purpose: str, data: Any = None,
                 sent: float = 0.0) -> None:
        self.origin_id = origin_id
        self.method = method
        self.purpose = purpose
        self.data = data
        self.sent = sent


def other(side: Side) -> Side:
    return SERVER if side == CLIENT else CLIENT


class Router:
    """Rows keyed by the id the bridge used toward each side."""

    __slots__ = ("ctx", "pending", "timed")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.pending: dict[Side, dict[str, Pending]] = {CLIENT: {}, SERVER: {}}
        self.timed = ctx.config.request_timeout > 0  # forwarded requests get a timeout

    def forward(
        self, to: Side, message: dict[str, Any], purpose: str = "forward", data: Any = None,
        origin_id: Any = None,
    ) -> str:
        """Send a peer's request on to `to` under a fresh id; the row remembers who waits for
        the answer: the id the request came with, unless `origin_id` names another."""
        ctx = self.ctx
        bid = ctx.mint_id()
        origin = message["id"] if origin_id is None else origin_id
        self.pending[to][bid] = Pending(origin, message["method"], purpose, data, ctx.now)
        message["id"] = bid
        ctx.send(to, message)
        if self.timed and to == SERVER and purpose == "forward":
            ctx.schedule(("timeout", bid), ctx.config.request_timeout)
        if ctx.log_enabled:
            ctx.debug("request.forwarded", to=to, method=message["method"], client_id=origin,
                      server_id=bid, purpose=purpose)
        return bid

    def issue(
        self,
        to: Side,
        method: str,
        params: dict[str, Any] | None,
        purpose: str,
        data: Any = None,
        origin_id: Any = BRIDGE,
    ) -> str:
        """Send a request of the bridge's own making to `to`."""
        ctx = self.ctx
        bid = ctx.mint_id()
        self.pending[to][bid] = Pending(origin_id, method, purpose, data, ctx.now)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": bid, "method": method}
        if params is not None:
            message["params"] = params
        ctx.send(to, message)
        ctx.debug("request.issued", to=to, method=method, id=bid, purpose=purpose)
        return bid

    def take(self, side: Side, message: dict[str, Any]) -> Pending | None:
        """The row a response from `side` answers, removed with its timeout; None (logged) if
        unknown."""
        bid = message["id"]
        row = self.pending[side].pop(bid, None) if isinstance(bid, str) else None
        if row is None:
            self.ctx.log("warning", "response.unmatched", side=side, id=bid)
            return None
        if self.timed and row.purpose == "forward":
            self.ctx.cancel_timer(("timeout", bid))
        if self.ctx.log_enabled:
            self._matched(side, row, bid, "error" in message)
        return row

    def _matched(self, side: Side, row: Pending, bid: str, failed: bool) -> None:
        origin = None if row.origin_id is BRIDGE else row.origin_id
        self.ctx.debug("response.matched", side=side, method=row.method, server_id=bid,
                       client_id=origin, purpose=row.purpose, error=failed,
                       elapsed_ms=round((self.ctx.now - row.sent) * 1000, 3))

    def find(self, to: Side, origin_id: Any) -> str | None:
        """The bridge id of the request `origin_id` made toward `to` (for cancellation).

        A scan, not an index: cancellations are rare and the hot path stays one dict op.
        """
        kind = type(origin_id)
        for bid, row in self.pending[to].items():
            if type(row.origin_id) is kind and row.origin_id == origin_id:
                return bid
        return None

    def cancel(self, to: Side, bid: str, reason: str | None = None) -> Pending | None:
        """Forget a row and tell `to` to stop working on it (cancellation.mdx)."""
        row = self.pending[to].pop(bid, None)
        self.ctx.cancel_timer(("timeout", bid))
        params: dict[str, Any] = {"requestId": bid}
        if reason:
            params["reason"] = reason
        self.ctx.send(to, notification("notifications/cancelled", params))
        return row

    def expire(self, bid: str) -> Pending | None:
        """A forwarded request outlived request_timeout: answer its origin, cancel it."""
        row = self.pending[SERVER].get(bid)
        if row is None:
            return None
        self.cancel(SERVER, bid, "mcp-rosetta request timeout")
        answer_timed_out(self.ctx, row.origin_id, row.method)
        self.ctx.log("warning", "request.timed_out", method=row.method, server_id=bid)
        return row

    def busy(self) -> bool:
        """Whether a client request still waits on the server (listen streams do not count)."""
        return any(row.purpose in ("forward", "round") for row in self.pending[SERVER].values())

    def fail_all(self, reason: str, data: dict[str, Any] | None = None,
                 purposes: tuple[str, ...] = ("forward",)) -> None:
        """Answer every client request still waiting on the server with an error: the rows
        of `purposes` (those a client waits on); `data` (default: the bridge as the source)
        gains the method."""
        rows = self.pending[SERVER]
        self.pending[SERVER] = {}
        base = data if data is not None else SOURCE
        for row in rows.values():
            if row.origin_id is not BRIDGE and row.purpose in purposes:
                self.ctx.reply_error(CLIENT, row.origin_id, INTERNAL_ERROR, reason,
                                     {**base, "method": row.method})


def answer_timed_out(ctx: Context, origin_id: Any, method: str) -> None:
    """The error a client request gets when request_timeout ends its wait."""
    ctx.reply_error(CLIENT, origin_id, INTERNAL_ERROR,
                    f"mcp-rosetta: no answer from the server within "
                    f"{ctx.config.request_timeout:g} s",
                    {"source": "mcp-rosetta", "method": method})
