"""Mode P's requests in flight: one class per kind, each owning what its answer means.

Must not route: the router files each under the id it minted and hands it back with its
answer (`answered`); what an answer changes in the relay (the client's session, the resume)
goes through `RelayHost`, the part of the relay an exchange may touch. A relayed answer goes
back under the id its request came with, and is otherwise untouched; unless the relay looks
into it, it differs from the line that brought it only by that id, so the line is forwarded
with the id spliced (splice.py).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import (
    BATCHING_VERSION,
    META_SUBSCRIPTION_ID,
    ProgressToken,
    is_progress_token,
)
from bridge.core.errors import server_lost
from bridge.core.events import CLIENT, SERVER, Send
from bridge.core.exchange import NO_REQUEST, ClientRequest, Exchange
from bridge.core.handover import LegacyClientSession, ListenStream
from bridge.core.jsonrpc import WireId
from bridge.core.relay.revision_gap import RevisionGap
from bridge.core.splice import SPLICE_MIN, with_id

# A progress token as a dict key that keeps its JSON type (1 and "1" differ).
ProgressKey = tuple[type, ProgressToken]


def progress_key(token: object) -> ProgressKey | None:
    """A progressToken as a key; None if it is none (basic/utilities/progress.mdx: a string
    or a number)."""
    return (type(token), token) if token is not None and is_progress_token(token) else None


class RelayHost(Protocol):
    """The relay as its exchanges see it."""

    ctx: Context
    gap: RevisionGap | None
    legacy: LegacyClientSession | None
    client_batching: bool

    def untrace(self, call: RelayedTracedCall) -> None:
        """Forget a call's progress token and log level: it is no longer in flight."""

    def replay_answered(self, message: Message) -> None:
        """The server answered the client's initialize the relay replayed to it."""


# The client's requests -------------------------------------------------------------------


class RelayedCall(ClientRequest):
    """A client request relayed to the server: the client waits for its answer, which goes
    back as it came but for its id (shaped for the client's revision behind a `gap`)."""

    __slots__ = ("relay",)

    def __init__(self, origin: WireId, method: str, relay: RelayHost) -> None:
        # Set directly, not through Exchange.__init__: one call less per request relayed.
        self.origin = origin
        self.method = method
        self.id = ""
        self.sent = 0.0
        self.relay = relay
        self.asking = None

    def answered(self, message: Message, line: bytes | None) -> None:
        relay = self.relay
        if self.asking is not None:  # claimed (observe.py)
            observer = relay.ctx.observer
            if observer is None or "error" in message:
                self.give_back(relay.ctx)
            else:
                observer.result(self.asking, relay.ctx.now)
        bid = message["id"]
        origin = message["id"] = self.origin
        if relay.gap is not None and "result" in message:
            message["result"] = relay.gap.result(self.method, message["result"])
            line = None
        # Send made here, not through ctx.send: every relayed answer takes this path.
        spliced = with_id(line, bid, origin) if line is not None and len(line) >= SPLICE_MIN \
            else None
        relay.ctx.actions.append(Send(CLIENT, message, spliced, origin))


class RelayedTracedCall(RelayedCall):
    """A relayed client request the server may send progress or log lines for: it names a
    `progressToken` (`token`, as a typed key) or, from a modern client, a logLevel (`logs`).
    The relay names it as the request those messages belong to while it is in flight."""

    __slots__ = ("logs", "token")

    def __init__(self, origin: WireId, method: str, relay: RelayHost,
                 token: ProgressKey | None, logs: bool) -> None:
        super().__init__(origin, method, relay)
        self.token = token
        self.logs = logs

    def answered(self, message: Message, line: bytes | None) -> None:
        self.relay.untrace(self)
        super().answered(message, line)

    def expired(self, ctx: Context) -> None:
        self.relay.untrace(self)
        super().expired(ctx)

    def lost(self, ctx: Context, reason: str, data: Message | None) -> None:
        self.relay.untrace(self)
        super().lost(ctx, reason, data)


class _SessionCall(RelayedCall):
    """A client request that shapes the session a restarted server must be given again
    (handover.py): what its result settles is kept. The relay looks into its answer, so the
    answer is encoded again, not spliced."""

    __slots__ = ()

    def answered(self, message: Message, line: bytes | None) -> None:
        result = message.get("result")
        if result is not None:
            self.settled(result)
        super().answered(message, None)

    @abstractmethod
    def settled(self, result: Message) -> None:
        """The server accepted the request with `result`."""


class RelayedInitialize(_SessionCall):
    """A legacy client's initialize: its answer opens the session (and says whether the
    client may batch, 2025-03-26 basic §Batching)."""

    __slots__ = ("params",)

    def __init__(self, origin: WireId, relay: RelayHost, params: Message) -> None:
        super().__init__(origin, "initialize", relay)
        self.params = params

    def settled(self, result: Message) -> None:
        relay = self.relay
        version = result.get("protocolVersion")
        relay.client_batching = version == BATCHING_VERSION
        caps = result.get("capabilities")
        relay.legacy = LegacyClientSession(self.params,
                                           version if isinstance(version, str) else "",
                                           caps if isinstance(caps, dict) else {})


class RelayedSetLevel(_SessionCall):
    """A legacy client's logging/setLevel: the level a new server is told again."""

    __slots__ = ("level",)

    def __init__(self, origin: WireId, relay: RelayHost, level: str) -> None:
        super().__init__(origin, "logging/setLevel", relay)
        self.level = level

    def settled(self, result: Message) -> None:
        if self.relay.legacy is not None:
            self.relay.legacy.log_level = self.level


class RelayedSubscribe(_SessionCall):
    """A legacy client's resources/subscribe: a URI a new server is subscribed to again."""

    __slots__ = ("uri",)

    def __init__(self, origin: WireId, relay: RelayHost, uri: str) -> None:
        super().__init__(origin, "resources/subscribe", relay)
        self.uri = uri

    def settled(self, result: Message) -> None:
        session = self.relay.legacy
        if session is not None and self.uri not in session.subscriptions:
            session.subscriptions.append(self.uri)


class RelayedUnsubscribe(_SessionCall):
    """A legacy client's resources/unsubscribe: a URI no longer subscribed again."""

    __slots__ = ("uri",)

    def __init__(self, origin: WireId, relay: RelayHost, uri: str) -> None:
        super().__init__(origin, "resources/unsubscribe", relay)
        self.uri = uri

    def settled(self, result: Message) -> None:
        session = self.relay.legacy
        if session is not None and self.uri in session.subscriptions:
            session.subscriptions.remove(self.uri)


class RelayedListen(Exchange):
    """A modern client's subscriptions/listen: a stream, not a call. No request_timeout, the
    drain does not wait for it, and a restart hands it over (`stream`) instead of failing
    it; a bridge that stops answers it. Its notifications and its end name the client's id
    for it (subscriptions.mdx: the subscriptionId is the listen request's id, with its type).

    It claims its request for an observer, so that a stream held open for a whole session
    leaves nothing filed to look for among every event's actions; it gives the request back
    when the stream ends with an answer or is handed over (the next handler claims it again)."""

    __slots__ = ("relay", "stream")

    origin: WireId  # the listen request's id

    claims = True

    def __init__(self, relay: RelayHost, stream: ListenStream) -> None:
        super().__init__(stream.request["id"], "subscriptions/listen")
        self.relay = relay
        self.stream = stream

    def answered(self, message: Message, line: bytes | None) -> None:
        # The stream's end: its result names the stream by the bridge's id.
        ctx = self.relay.ctx
        self.give_back(ctx)
        retag(message.get("result"), self.origin)
        message["id"] = self.origin
        ctx.send(CLIENT, message, None, self.origin)

    def lost(self, ctx: Context, reason: str, data: Message | None) -> None:
        self.give_back(ctx)
        ctx.fail(CLIENT, self.origin, server_lost(reason, data, self.method))

    def first_acknowledgement(self, params: Message) -> bool:
        """Whether the stream's acknowledgement is news to the client (subscriptions.mdx:
        one per stream); a stream re-opened at a restarted server had its own already."""
        stream = self.stream
        if stream.acknowledged is not None:
            return False
        honored = params.get("notifications")
        stream.acknowledged = honored if isinstance(honored, dict) else {}
        return True


def retag(params: object, origin: WireId) -> None:
    """Name the client's id where `params` (a notification's params or a result) names a
    stream by the bridge's (TRANSLATION.md §11.12)."""
    if type(params) is not dict:
        return
    meta = params.get("_meta")
    if type(meta) is dict and META_SUBSCRIPTION_ID in meta:
        params["_meta"] = {**meta, META_SUBSCRIPTION_ID: origin}


# The server's requests -------------------------------------------------------------------


class RelayedServerRequest(Exchange):
    """A server's request relayed to the client (legacy: sampling, elicitation, roots).
    `origin` is the id the server gave it. Nobody waits on the client's side: a lost
    server withdraws it (the relay tells the client), a stop leaves it."""

    __slots__ = ("relay",)

    origin: WireId  # the server's id for it

    def __init__(self, origin: WireId, method: str, relay: RelayHost) -> None:
        super().__init__(origin, method)
        self.relay = relay

    def answered(self, message: Message, line: bytes | None) -> None:
        bid = message["id"]
        origin = message["id"] = self.origin
        if line is not None and len(line) >= SPLICE_MIN:
            self.relay.ctx.send(SERVER, message, with_id(line, bid, origin))
        else:
            self.relay.ctx.send(SERVER, message)


# The relay's own requests: a legacy session re-opened at a restarted server ----------------


class _Replayed(Exchange):
    """A request of the client's session the relay sends again to a new server; nobody
    waits for its answer, and a refusal is only logged."""

    __slots__ = ("relay",)

    def __init__(self, method: str, relay: RelayHost) -> None:
        super().__init__(NO_REQUEST, method)
        self.relay = relay

    def answered(self, message: Message, line: bytes | None) -> None:
        error = message.get("error")
        if error is not None:
            self.relay.ctx.log("warning", "session.resume_refused", method=self.method,
                               code=error.get("code"), message=error.get("message"))
            self.refused()
        self.done(message)

    def refused(self) -> None:
        """What a refusal changes in the session (nothing, unless said)."""

    def done(self, message: Message) -> None:
        """What any answer changes (nothing, unless said)."""


class ReplayedInitialize(_Replayed):
    """The client's own initialize, replayed: its answer lets the rest of the session follow."""

    __slots__ = ()

    def __init__(self, relay: RelayHost) -> None:
        super().__init__("initialize", relay)

    def done(self, message: Message) -> None:
        self.relay.replay_answered(message)


class ReplayedSubscribe(_Replayed):
    """A resources/subscribe of the client's, sent again: refused, the URI is dropped from
    the session."""

    __slots__ = ("uri",)

    def __init__(self, relay: RelayHost, uri: str) -> None:
        super().__init__("resources/subscribe", relay)
        self.uri = uri

    def refused(self) -> None:
        session = self.relay.legacy
        if session is not None and self.uri in session.subscriptions:
            session.subscriptions.remove(self.uri)


class ReplayedSetLevel(_Replayed):
    """The client's last logging/setLevel, sent again."""

    __slots__ = ()

    def __init__(self, relay: RelayHost) -> None:
        super().__init__("logging/setLevel", relay)
