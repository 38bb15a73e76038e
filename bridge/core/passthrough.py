"""Mode P: client and server speak the same era; messages cross untouched but for ids.

Must not translate anything. It remaps request ids (the bridge probed the server with its
own) and the ids named by `notifications/cancelled`, and learns a 2025-03-26 handshake's
batching from the `initialize` answer it relays.
"""

from __future__ import annotations

from typing import Any

from bridge.core.context import Context
from bridge.core.eras import BATCHING_VERSION, META_SUBSCRIPTION_ID, Era
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.jsonrpc import Inbound
from bridge.core.router import Pending, Router, other


class PassThrough:
    """Relays both ways; the only mode with no opinion about methods."""

    mode = "P"

    def __init__(self, ctx: Context, era: Era) -> None:
        self.ctx = ctx
        self.era = era
        self.router = Router(ctx)
        self.batching = False

    @property
    def client_batching(self) -> bool:
        return self.batching

    def on_client(self, inbound: Inbound) -> None:
        self._relay(CLIENT, inbound)

    def on_server(self, inbound: Inbound) -> None:
        self._relay(SERVER, inbound)

    def _relay(self, side: Side, inbound: Inbound) -> None:
        kind = inbound.kind
        message = inbound.message
        if kind == "request":
            self.router.forward(other(side), message)
        elif kind == "response":
            self._return(side, message)
        elif kind == "notification":
            if message["method"] == "notifications/cancelled":
                self._relay_cancel(side, message)
            else:
                if side == SERVER:
                    self._retag(message.get("params"))
                self.ctx.send(other(side), message)
        else:
            self.ctx.reject(side, inbound)

    def _return(self, side: Side, message: dict[str, Any]) -> None:
        row = self.router.take(side, message)
        if row is None:
            return
        if row.method == "initialize" and "result" in message:
            version = message["result"].get("protocolVersion")
            self.batching = version == BATCHING_VERSION
        if row.method == "subscriptions/listen":
            self._retag(message.get("result"), row)
        message["id"] = row.origin_id
        self.ctx.send(other(side), message)

    def _retag(self, params: Any, row: Pending | None = None) -> None:
        """A listen stream's tag names the bridge's id; the client knows its own (§11.12).

        subscriptions.mdx: the subscriptionId is the listen request's id, with its type.
        """
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is not dict or META_SUBSCRIPTION_ID not in meta:
            return
        if row is None:
            tag = meta[META_SUBSCRIPTION_ID]
            row = self.router.pending[SERVER].get(tag) if isinstance(tag, str) else None
        if row is not None:
            params["_meta"] = {**meta, META_SUBSCRIPTION_ID: row.origin_id}

    def _relay_cancel(self, side: Side, message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        target = params.get("requestId")
        ended = self.router.pending[SERVER].pop(target, None) \
            if side == SERVER and isinstance(target, str) else None
        if ended is not None:
            # cancellation.mdx (2026-07-28): a server ends a listen stream it tears down.
            self.ctx.send(CLIENT, {**message, "params": {**params, "requestId": ended.origin_id}})
            return
        bid = self.router.find(other(side), target)
        if bid is None:
            self.ctx.debug("cancel.unmatched", side=side)
            return
        self.router.pending[other(side)].pop(bid)
        self.ctx.cancel_timer(("timeout", bid))
        self.ctx.send(other(side), {**message, "params": {**params, "requestId": bid}})

    def on_timer(self, key: Any) -> None:
        if key[0] == "timeout":
            self.router.expire(key[1])

    def busy(self) -> bool:
        return self.router.busy()

    def fail_pending(self, reason: str) -> None:
        self.router.fail_all(reason)
