"""Mode P: client and server speak the same era; messages cross untouched but for ids.

Must not translate anything. It remaps request ids (the bridge probed the server with its
own) and the ids named by `notifications/cancelled`, learns a 2025-03-26 handshake's
batching from the `initialize` answer it relays, and keeps, as they pass, what a restarted
server needs to give the client the same session: a legacy client's handshake, level and
subscriptions; a modern client's open listen streams (handover.py). Each request in flight is
one of the exchanges of `relay/exchanges.py`, which owns its answer. In a fleet, between
modern peers, it keeps a listen stream of its own at the server, whose changes reach the
client's streams on other nodes, and tells its client's streams theirs (shared_listen.py).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Literal

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.dispatch import from_server, refuse_modern_request
from bridge.core.eras import (
    BATCHING_VERSION,
    META_LOG_LEVEL,
    META_SUBSCRIPTION_ID,
    Era,
)
from bridge.core.events import CLIENT, SERVER, Side
from bridge.core.exchange import Exchange, served_request
from bridge.core.handover import (
    ClientSession,
    Handover,
    LegacyClientSession,
    ListenStream,
    ModernClientSession,
    acknowledged_list_changes,
    announce,
    told_list_changes,
)
from bridge.core.jsonrpc import Inbound, WireId, notification
from bridge.core.methods import ACKNOWLEDGED
from bridge.core.relay.exchanges import (
    ProgressKey,
    RelayedCall,
    RelayedInitialize,
    RelayedListen,
    RelayedServerRequest,
    RelayedSetLevel,
    RelayedSubscribe,
    RelayedTracedCall,
    RelayedUnsubscribe,
    ReplayedInitialize,
    ReplayedSetLevel,
    ReplayedSubscribe,
    progress_key,
)
from bridge.core.relay.lane import RelayLane
from bridge.core.relay.revision_gap import RevisionGap, needs_shaping
from bridge.core.relay.shared_listen import ChangeStream, SharedDue, deliver
from bridge.core.restarts import Outage
from bridge.core.router import Due, Router, other
from bridge.core.timers import Deadline


class RelayDue(Enum):
    """The relay's own deadline (the router's, Due.REQUEST_TIMEOUT, ends relayed calls)."""

    RESUME = "the replayed initialize's answer"


class ModeP:
    """Relays both ways; the only mode with no opinion about methods."""

    mode: Literal["P"] = "P"

    def __init__(self, ctx: Context, era: Era) -> None:
        self.ctx = ctx
        self.era = era
        self.router = Router(ctx)
        self.client_batching = False  # a plain attribute: read for every client line
        self.legacy: LegacyClientSession | None = None  # once the client's initialize is answered
        # A restarted legacy server that negotiated a newer revision than the client's: what
        # it sends is shaped for the client's (revision_gap.py).
        self.gap: RevisionGap | None = None
        self._resuming = False
        # The client requests in flight that named a progress token (by typed token), and
        # those of a modern client that named a logLevel: what the server sends for them
        # names them (events.Send.request).
        self._progress: dict[ProgressKey, RelayedTracedCall] = {}
        self._logging: set[RelayedTracedCall] = set()
        # The client requests that shape its session, relayed as exchanges that keep what
        # they settle; every other request passes with nothing kept.
        self.tracked: dict[str, Callable[[Message], Exchange]] = {
            "initialize": self._initialize,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscription,
            "resources/unsubscribe": self._subscription,
        } if era == "legacy" else {"subscriptions/listen": self._listen}
        # By the deadline's kind; each handler takes its owner (a minted id, or None).
        self._on_due: dict[Enum, Callable[[Any], object]] = {
            Due.REQUEST_TIMEOUT: self.router.expire,
            RelayDue.RESUME: self._resume_unanswered,
        }
        # The steady state's one-step route, which the Bridge takes while nothing else may
        # see a message first.
        self.lane = RelayLane(self)
        # In a fleet, between modern peers: the bridge's own listen stream at the server,
        # whose changes the other nodes' streams hear (shared_listen.py); else None.
        self.changes: ChangeStream | None = None
        if era == "modern" and ctx.config.share_changes:
            changes = self.changes = ChangeStream(ctx, self.router)
            self._on_due[SharedDue.REOPEN] = lambda _: changes.open()
            changes.open()

    @property
    def resuming(self) -> bool:
        return self._resuming

    # The client's messages ----------------------------------------------------------------

    def on_client(self, inbound: Inbound) -> None:
        kind = inbound.kind
        if kind == "request":
            self.on_client_request(inbound.message)
        elif kind == "response":
            self.on_client_response(inbound.message, inbound.line)
        elif kind == "notification":
            self.on_client_notification(inbound.message)
        else:
            self.ctx.reject(CLIENT, inbound)

    def on_client_request(self, message: Message) -> None:
        track = self.tracked.get(message["method"])
        exchange = self.call(message) if track is None else track(message)
        observer = self.ctx.observer
        if observer is not None and exchange.claims:  # it counts its result (observe.py)
            exchange.asking = observer.claim(message["id"])
        self.router.forward(SERVER, message, exchange)

    def on_client_response(self, message: Message, line: bytes | None) -> None:
        exchange = self.router.take(CLIENT, message)
        if exchange is not None:
            exchange.answered(message, line)

    def on_client_notification(self, message: Message) -> None:
        method = message["method"]
        if method == "notifications/cancelled":
            self._relay_cancel(CLIENT, message)
            return
        if method == "notifications/initialized" and self.legacy is not None:
            self.legacy.initialized = True
        self.ctx.send(SERVER, message)

    def call(self, message: Message) -> RelayedCall:
        """The exchange of a request relayed as it is: traced if it names a progress token
        or (modern) a logLevel, so what the server sends for it can name it."""
        params = message.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is not dict:
            return RelayedCall(message["id"], message["method"], self)
        token = meta.get("progressToken")
        logs = self.era == "modern" and META_LOG_LEVEL in meta
        if token is None and not logs:
            return RelayedCall(message["id"], message["method"], self)
        call = RelayedTracedCall(message["id"], message["method"], self, progress_key(token),
                                 logs)
        if call.token is not None:
            self._progress[call.token] = call
        if logs:
            self._logging.add(call)
        return call

    def untrace(self, call: RelayedTracedCall) -> None:
        if call.token is not None and self._progress.get(call.token) is call:
            del self._progress[call.token]
        self._logging.discard(call)

    # The server's messages ----------------------------------------------------------------

    # The server dispatch modes A and P share, as the method itself (no frame of its own).
    on_server = from_server

    def on_server_request(self, message: Message) -> None:
        if self.era == "modern":  # neither end speaks a revision with server requests
            refuse_modern_request(self.ctx, message)
            return
        if self.gap is not None:
            self._shaped_request(message)
            return
        # Sent to the client naming no request of its own (Send.request None): a legacy
        # server's request carries no link to the call behind it.
        self.router.forward(CLIENT, message,
                            RelayedServerRequest(message["id"], message["method"], self))

    def _shaped_request(self, message: Message) -> None:
        """A request of the newer server to the client: shaped for the client's revision, or
        refused to the server with the reason when that revision has no form for it."""
        assert self.gap is not None
        problem = self.gap.request_problem(message)
        if problem is None:
            self.router.forward(CLIENT, self.gap.request(message),
                                RelayedServerRequest(message["id"], message["method"], self))
            return
        self.ctx.log("warning", "request.unfit", side=SERVER, method=message["method"],
                     version=self.gap.version, problem=problem)
        self.ctx.fail(SERVER, message["id"], errors.unfit_for_client(self.gap.version, problem))

    def on_server_notification(self, message: Message) -> None:
        if self.gap is not None:
            shaped = self.gap.notification(message)
            if shaped is None:
                self.ctx.debug("notification.dropped", side=SERVER, method=message["method"],
                               reason=f"revision {self.gap.version} has no such notification")
                return
            message = shaped
        method = message["method"]
        if method == "notifications/cancelled":
            self._relay_cancel(SERVER, message)
            return
        params = message.get("params")
        if type(params) is dict:
            meta = params.get("_meta")
            if type(meta) is dict and META_SUBSCRIPTION_ID in meta:
                self._on_stream(message, params, meta)
                return
        if method == "notifications/progress":
            self.ctx.send(CLIENT, message, None, self._progress_owner(params))
        elif method == "notifications/message" and self.era == "modern":
            self.ctx.send(CLIENT, message, None, self._log_owner())
        else:
            # Nothing names a request: a list_changed or resource update to a legacy client,
            # a legacy log line (its level is the session's, set by logging/setLevel).
            self.ctx.send(CLIENT, message)

    def _progress_owner(self, params: object) -> WireId | None:
        """The client request whose progressToken the progress names, if it is in flight."""
        key = progress_key(params.get("progressToken")) if type(params) is dict else None
        if key is None:
            return None
        call = self._progress.get(key)
        return None if call is None else call.origin

    def _log_owner(self) -> WireId | None:
        """The request a modern server's log line belongs to. logging.mdx: a server logs only
        for a request that set a logLevel, but over stdio the line names none; with exactly
        one such request in flight it is that one's, else it cannot be told (None)."""
        if len(self._logging) != 1:
            return None
        (call,) = self._logging
        return call.origin

    def _on_stream(self, message: Message, params: Message, meta: Message) -> None:
        """A notification tagged with a stream: it goes on the client's listen stream, under
        the client's id for it (subscriptions.mdx); an acknowledgement the client had
        already (a stream re-opened at a restarted server) is for the bridge alone."""
        tag = meta[META_SUBSCRIPTION_ID]
        exchange = self.router.pending[SERVER].get(tag) if isinstance(tag, str) else None
        if not isinstance(exchange, RelayedListen):
            if self.changes is not None and self.changes.owns(tag):
                self.changes.heard(tag, message, params)  # the bridge's: never the client's
            else:
                self.ctx.send(CLIENT, message)  # names no stream of this client's
            return
        if message["method"] == ACKNOWLEDGED and not exchange.first_acknowledgement(params):
            return
        params["_meta"] = {**meta, META_SUBSCRIPTION_ID: exchange.origin}
        self.ctx.send(CLIENT, message, None, served_request(exchange))

    def _relay_cancel(self, side: Side, message: Message) -> None:
        params = message.get("params") or {}
        target = params.get("requestId")
        ended = self.router.pending[SERVER].get(target) \
            if side == SERVER and isinstance(target, str) else None
        if isinstance(ended, RelayedListen):
            # cancellation.mdx (2026-07-28): a server ends a listen stream it tears down, and
            # "MUST NOT send notifications/cancelled for any other purpose": one naming a call
            # of the client's is not relayed, and the call still gets its answer.
            del self.router.pending[SERVER][ended.id]
            self._ended(ended)
            self.ctx.send(CLIENT, {**message, "params": {**params, "requestId": ended.origin}},
                          None, served_request(ended))
            return
        if side == SERVER and self.changes is not None and self.changes.owns(target):
            self.changes.cancelled(target)  # the server ended the bridge's own stream
            return
        to = other(side)
        bid = self.router.find(to, target)
        if bid is None:
            self.ctx.debug("cancel.unmatched", side=side)
            return
        self._ended(self.router.withdraw(to, bid))
        # To the client: the server withdraws a request of its own, which names no request
        # of the client's.
        self.ctx.send(to, {**message, "params": {**params, "requestId": bid}})

    def _ended(self, exchange: Exchange | None) -> None:
        """A request cancelled in flight: what the server still sends for it names nothing."""
        if isinstance(exchange, RelayedTracedCall):
            self.untrace(exchange)

    # The client's session, kept as it passes ---------------------------------------------

    def _initialize(self, message: Message) -> Exchange:
        params = message.get("params")
        return RelayedInitialize(message["id"], self, params if isinstance(params, dict) else {})

    def _set_level(self, message: Message) -> Exchange:
        level = (message.get("params") or {}).get("level")
        if not isinstance(level, str):
            return self.call(message)
        return RelayedSetLevel(message["id"], self, level)

    def _subscription(self, message: Message) -> Exchange:
        uri = (message.get("params") or {}).get("uri")
        if not isinstance(uri, str):
            return self.call(message)
        if message["method"] == "resources/subscribe":
            return RelayedSubscribe(message["id"], self, uri)
        return RelayedUnsubscribe(message["id"], self, uri)

    def _listen(self, message: Message) -> Exchange:
        return RelayedListen(self, ListenStream(dict(message)))  # the copy keeps the client's id

    def client_session(self) -> ClientSession | None:
        if self.era == "legacy":
            return self.legacy
        return ModernClientSession([exchange.stream
                                    for exchange in self.router.pending[SERVER].values()
                                    if isinstance(exchange, RelayedListen)])

    # A restarted server ------------------------------------------------------------------

    def lose_server(self, outage: Outage) -> Handover:
        """Calls in flight get the error; listen streams stay open (handed over); whatever
        the server was still asking the client is withdrawn."""
        reason, data = outage.error()
        session = self.client_session()
        pending = self.router.pending[SERVER]
        for bid in [bid for bid, exchange in pending.items()
                    if isinstance(exchange, RelayedListen)]:
            pending.pop(bid).give_back(self.ctx)  # handed over in the session, not lost
        self.router.fail_all(reason, data)
        for bid in list(self.router.pending[CLIENT]):
            self.router.cancel(CLIENT, bid, "the server restarted")
        return Handover(session)

    def resume(self, session: ClientSession) -> None:
        if isinstance(session, LegacyClientSession):
            self._resume_legacy(session)
        else:
            self._resume_modern(session)

    def _resume_modern(self, session: ModernClientSession) -> None:
        """Re-open the client's listen streams under new ids, mapped to the client's own."""
        observer = self.ctx.observer
        for stream in session.streams:
            listen = RelayedListen(self, stream)
            if observer is not None:  # filed again when the last handler handed it over
                listen.asking = observer.claim(stream.request["id"])
            self.router.forward(SERVER, dict(stream.request), listen)
        for stream in session.streams:
            if stream.acknowledged is not None:
                announce(self.ctx, acknowledged_list_changes(stream), stream.request["id"])
        self.ctx.log("info", "session.resumed", mode="P", streams=len(session.streams))

    def _resume_legacy(self, session: LegacyClientSession) -> None:
        """Replay the client's own initialize; the rest follows its answer."""
        self.legacy = session
        self.client_batching = session.version == BATCHING_VERSION  # as the client negotiated
        self._resuming = True
        self.router.issue(SERVER, "initialize", session.initialize, ReplayedInitialize(self))
        self.ctx.schedule(Deadline(None, RelayDue.RESUME), self.ctx.config.handshake_timeout)

    def replay_answered(self, message: Message) -> None:
        if not self._resuming:
            return  # answered after handshake_timeout: the session went on without it
        self.ctx.cancel_timer(Deadline(None, RelayDue.RESUME))
        version = (message.get("result") or {}).get("protocolVersion")
        if self.legacy is not None and version not in (None, self.legacy.version):
            self._version_changed(self.legacy.version, version)
        self._reopen_legacy()

    def _version_changed(self, client: str, server: object) -> None:
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
            self.router.issue(SERVER, "resources/subscribe", {"uri": uri},
                              ReplayedSubscribe(self, uri))
        if session.log_level is not None:
            self.router.issue(SERVER, "logging/setLevel", {"level": session.log_level},
                              ReplayedSetLevel(self))
        announce(self.ctx, told_list_changes(session.capabilities))
        self.ctx.log("info", "session.resumed", mode="P", subscriptions=len(session.subscriptions),
                     log_level=session.log_level)

    def _resume_unanswered(self, _: None) -> None:
        if self._resuming:
            self.ctx.log("warning", "session.resume_unanswered",
                         waited_s=self.ctx.config.handshake_timeout)
            self._reopen_legacy()

    # Lifecycle ----------------------------------------------------------------------------

    def on_timer(self, key: Deadline) -> None:
        self._on_due[key.kind](key.owner)

    def on_change(self, message: Message) -> None:
        """A change another node's server made: to a modern client's listen streams that
        asked (their own server never heard it); a legacy client's session hears its own
        server only."""
        if self.era == "modern" and deliver(self.ctx, self.router.pending[SERVER], message):
            return
        self.ctx.debug("notification.dropped", side=SERVER, method=message.get("method"),
                       reason="no listen stream here asked for it")

    def busy(self) -> bool:
        return self.router.busy()

    def fail_pending(self, reason: str, data: Message | None = None) -> None:
        """The bridge stops: every client request the server took, listen streams too, gets
        `reason`; the bridge's own listen stream ends at the server."""
        if self.changes is not None:
            self.changes.close()
        self.router.fail_all(reason, data)
