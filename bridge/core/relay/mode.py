"""Mode P: client and server speak the same era; messages cross untouched but for ids.

Must not translate anything. It remaps request ids (the bridge probed the server with its
own) and the ids named by `notifications/cancelled`, learns a 2025-03-26 handshake's
batching from the `initialize` answer it relays, and keeps, as they pass, what a restarted
server needs to give the client the same session: a legacy client's handshake, level and
subscriptions; a modern client's open listen streams (handover.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bridge.core.context import Context
from bridge.core.eras import BATCHING_VERSION, INTERNAL_ERROR, META_SUBSCRIPTION_ID, Era
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.handover import (
    ClientSession,
    Handover,
    LegacySession,
    ListenStream,
    ModernSession,
    acknowledged_list_changes,
    announce,
    told_list_changes,
)
from bridge.core.jsonrpc import Inbound, notification
from bridge.core.relay.revision_gap import RevisionGap, needs_shaping
from bridge.core.restarts import Outage
from bridge.core.router import BRIDGE, SOURCE, Pending, Router, other
from bridge.core.splice import SPLICE_MAX, SPLICE_MIN, with_id

Message = dict[str, Any]

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
RESUME = ("resume",)


class PassThrough:
    """Relays both ways; the only mode with no opinion about methods."""

    mode = "P"

    def __init__(self, ctx: Context, era: Era) -> None:
        self.ctx = ctx
        self.era = era
        self.router = Router(ctx)
        self.batching = False
        self.legacy: LegacySession | None = None  # once the client's initialize is answered
        # A restarted legacy server that negotiated a newer revision than the client's: what
        # it sends is shaped for the client's (revision_gap.py).
        self.gap: RevisionGap | None = None
        self._resuming = False
        # The client requests that shape its session, forwarded with a row that remembers
        # what they change; every other request passes with nothing kept.
        self._tracked: dict[str, Callable[[Message], None]] = {
            "initialize": self._forward_initialize,
            "logging/setLevel": self._forward_set_level,
            "resources/subscribe": self._forward_subscription,
            "resources/unsubscribe": self._forward_subscription,
        } if era == "legacy" else {"subscriptions/listen": self._forward_listen}

    @property
    def client_batching(self) -> bool:
        return self.batching

    @property
    def resuming(self) -> bool:
        return self._resuming

    def on_client(self, inbound: Inbound) -> None:
        if inbound.kind == "request":
            message = inbound.message
            track = self._tracked.get(message["method"])
            if track is None:
                self.router.forward(SERVER, message)
            else:
                track(message)
        else:
            self._relay(CLIENT, inbound)

    def on_server(self, inbound: Inbound) -> None:
        self._relay(SERVER, inbound)

    def _relay(self, side: Side, inbound: Inbound) -> None:
        kind = inbound.kind
        message = inbound.message
        if kind == "request":
            if side == SERVER and self.gap is not None:
                self._shaped_request(message)
            else:
                self.router.forward(other(side), message)
        elif kind == "response":
            self._return(side, message, inbound.line)
        elif kind == "notification":
            if side == SERVER and self.gap is not None:
                message = self.gap.notification(message)
                if message is None:
                    self.ctx.debug("notification.dropped", side=SERVER, method=inbound.message[
                        "method"], reason=f"revision {self.gap.version} has no such notification")
                    return
            method = message["method"]
            if method == "notifications/cancelled":
                self._relay_cancel(side, message)
            elif side == CLIENT:
                if method == "notifications/initialized" and self.legacy is not None:
                    self.legacy.initialized = True
                self.ctx.send(SERVER, message)
            elif self._retag(message):
                self.ctx.send(CLIENT, message)
        else:
            self.ctx.reject(side, inbound)

    def _return(self, side: Side, message: Message, line: bytes | None) -> None:
        """An answer goes back under the id its request came with. Unless the bridge looks
        into it (a tracked request's, or one shaped for an older revision), it differs from
        the line that brought it only by that id: the line is forwarded with the id spliced."""
        row = self.router.take(side, message)
        if row is None:
            return
        if row.data is not None:  # a tracked request, or one of the bridge's own
            if row.origin_id is BRIDGE:
                self._on_own_answer(row, message)
                return
            self._on_tracked_answer(row, message)
            line = None
        bid = message["id"]
        message["id"] = row.origin_id
        if side == SERVER and self.gap is not None and "result" in message:
            message["result"] = self.gap.result(row.method, message["result"])
            line = None
        if line is not None and SPLICE_MIN <= len(line) <= SPLICE_MAX:
            self.ctx.send(other(side), message, with_id(line, bid, row.origin_id))
        else:
            self.ctx.send(other(side), message)

    def _shaped_request(self, message: Message) -> None:
        """A request of the newer server to the client: shaped for the client's revision, or
        refused to the server with the reason when that revision has no form for it."""
        assert self.gap is not None
        problem = self.gap.request_problem(message)
        if problem is None:
            self.router.forward(CLIENT, self.gap.request(message))
            return
        self.ctx.log("warning", "request.unfit", side=SERVER, method=message["method"],
                     version=self.gap.version, problem=problem)
        self.ctx.reply_error(SERVER, message["id"], INTERNAL_ERROR,
                             f"mcp-rosetta: the client speaks {self.gap.version}: {problem}",
                             SOURCE)

    def _retag(self, message: Message, row: Pending | None = None) -> bool:
        """A listen stream's tag names the bridge's id; the client knows its own (§11.12).
        False if the message is for the bridge alone: an acknowledgement the client has had.

        subscriptions.mdx: the subscriptionId is the listen request's id, with its type.
        """
        params = message.get("params" if row is None else "result")
        if type(params) is not dict:
            return True
        meta = params.get("_meta")
        if type(meta) is not dict or META_SUBSCRIPTION_ID not in meta:
            return True
        if row is None:
            tag = meta[META_SUBSCRIPTION_ID]
            row = self.router.pending[SERVER].get(tag) if isinstance(tag, str) else None
            if row is not None and message.get("method") == ACKNOWLEDGED \
                    and not self._first_acknowledgement(row, params):
                return False
        if row is not None:
            params["_meta"] = {**meta, META_SUBSCRIPTION_ID: row.origin_id}
        return True

    def _first_acknowledgement(self, row: Pending, params: Message) -> bool:
        """Whether a stream's acknowledgement is news to the client (subscriptions.mdx: one
        per stream); a stream re-opened at a restarted server had its own already."""
        stream = row.data
        if not isinstance(stream, ListenStream):
            return True
        if stream.acknowledged is not None:
            return False
        honored = params.get("notifications")
        stream.acknowledged = honored if isinstance(honored, dict) else {}
        return True

    def _relay_cancel(self, side: Side, message: Message) -> None:
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

    # The client's session, kept as it passes ---------------------------------------------

    def _forward_initialize(self, message: Message) -> None:
        params = message.get("params")
        self.router.forward(SERVER, message, data=params if isinstance(params, dict) else {})

    def _forward_set_level(self, message: Message) -> None:
        level = (message.get("params") or {}).get("level")
        self.router.forward(SERVER, message, data=level if isinstance(level, str) else None)

    def _forward_subscription(self, message: Message) -> None:
        uri = (message.get("params") or {}).get("uri")
        self.router.forward(SERVER, message, data=uri if isinstance(uri, str) else None)

    def _forward_listen(self, message: Message) -> None:
        # A stream, not a call: no request_timeout, and the drain does not wait for it.
        stream = ListenStream(dict(message))  # the copy keeps the client's id
        self.router.forward(SERVER, message, "listen", data=stream)

    def _on_tracked_answer(self, row: Pending, message: Message) -> None:
        """The server accepted (or refused) a request that shapes the client's session."""
        method = row.method
        if method == "subscriptions/listen":
            self._retag(message, row)  # the stream's end: its result names the stream
            return
        result = message.get("result")
        if result is None:
            return
        if method == "initialize":
            version = result.get("protocolVersion")
            self.batching = version == BATCHING_VERSION
            caps = result.get("capabilities")
            self.legacy = LegacySession(row.data, version if isinstance(version, str) else "",
                                        caps if isinstance(caps, dict) else {})
        elif self.legacy is None:
            return
        elif method == "logging/setLevel":
            self.legacy.log_level = row.data
        elif method == "resources/subscribe":
            if row.data not in self.legacy.subscriptions:
                self.legacy.subscriptions.append(row.data)
        elif method == "resources/unsubscribe" and row.data in self.legacy.subscriptions:
            self.legacy.subscriptions.remove(row.data)

    def client_session(self) -> ClientSession | None:
        if self.era == "legacy":
            return self.legacy
        return ModernSession([row.data for row in self.router.pending[SERVER].values()
                              if isinstance(row.data, ListenStream)])

    # A restarted server ------------------------------------------------------------------

    def lose_server(self, outage: Outage) -> Handover:
        """Calls in flight get the error; listen streams stay open (handed over); whatever
        the server was still asking the client is withdrawn."""
        reason, data = outage.error()
        session = self.client_session()
        self.router.fail_all(reason, data)
        for bid in list(self.router.pending[CLIENT]):
            self.router.cancel(CLIENT, bid, "the server restarted")
        return Handover(session)

    def resume(self, session: ClientSession) -> None:
        if isinstance(session, LegacySession):
            self._resume_legacy(session)
        else:
            self._resume_modern(session)

    def _resume_modern(self, session: ModernSession) -> None:
        """Re-open the client's listen streams under new ids, mapped to the client's own."""
        for stream in session.streams:
            self.router.forward(SERVER, dict(stream.request), "listen", data=stream)
        for stream in session.streams:
            if stream.acknowledged is not None:
                announce(self.ctx, acknowledged_list_changes(stream), stream.request["id"])
        self.ctx.log("info", "session.resumed", mode="P", streams=len(session.streams))

    def _resume_legacy(self, session: LegacySession) -> None:
        """Replay the client's own initialize; the rest follows its answer."""
        self.legacy = session
        self.batching = session.version == BATCHING_VERSION  # as the client negotiated
        self._resuming = True
        self.router.issue(SERVER, "initialize", session.initialize, "resume", data=session)
        self.ctx.schedule(RESUME, self.ctx.config.handshake_timeout)

    def _on_own_answer(self, row: Pending, message: Message) -> None:
        if "error" in message:
            error = message["error"]
            self.ctx.log("warning", "session.resume_refused", method=row.method,
                         code=error.get("code"), message=error.get("message"))
            if row.method == "resources/subscribe" and self.legacy is not None \
                    and row.data in self.legacy.subscriptions:
                self.legacy.subscriptions.remove(row.data)
        if row.method == "initialize" and self._resuming:
            self.ctx.cancel_timer(RESUME)
            version = (message.get("result") or {}).get("protocolVersion")
            if self.legacy is not None and version not in (None, self.legacy.version):
                self._version_changed(self.legacy.version, version)
            self._reopen_legacy()

    def _version_changed(self, client: str, server: Any) -> None:
        """The new server negotiated another revision than the client was answered with: the
        client keeps seeing its own (TRANSLATION.md §11.25)."""
        shaped = needs_shaping(client, server)
        if shaped:
            self.gap = RevisionGap(client)
        self.ctx.log("warning", "session.version_changed", client=client, server=server,
                     outcome=f"shaped for {client}" if shaped else "relayed as it is (older)")

    def _reopen_legacy(self) -> None:
        """The replayed initialize is answered: the rest of the session, then the client."""
        session = self.legacy
        assert session is not None
        self._resuming = False
        if session.initialized:
            self.ctx.send(SERVER, notification("notifications/initialized"))
        for uri in session.subscriptions:
            self.router.issue(SERVER, "resources/subscribe", {"uri": uri}, "resume", data=uri)
        if session.log_level is not None:
            self.router.issue(SERVER, "logging/setLevel", {"level": session.log_level},
                              "resume", data=session.log_level)
        announce(self.ctx, told_list_changes(session.capabilities))
        self.ctx.log("info", "session.resumed", mode="P", subscriptions=len(session.subscriptions),
                     log_level=session.log_level)

    # Lifecycle ----------------------------------------------------------------------------

    def on_timer(self, key: Any) -> None:
        if key[0] == "timeout":
            self.router.expire(key[1])
        elif key == RESUME and self._resuming:
            self.ctx.log("warning", "session.resume_unanswered",
                         waited_s=self.ctx.config.handshake_timeout)
            self._reopen_legacy()

    def busy(self) -> bool:
        return self.router.busy()

    def fail_pending(self, reason: str, data: Message | None = None) -> None:
        self.router.fail_all(reason, data, purposes=("forward", "listen"))
