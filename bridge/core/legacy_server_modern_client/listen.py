"""Mode A's listen streams: legacy unsolicited notifications made of `subscriptions/listen`.

Must not let the legacy client see any of it: the listen requests, acknowledgements, stream
ends and subscription tags stay between the bridge and the server. Rules: subscriptions.mdx,
cancellation.mdx; TRANSLATION.md §6.4.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Final, Protocol

from bridge.core import errors
from bridge.core.capabilities import LIST_CHANGES, has_flag
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.envelope import stamp_envelope
from bridge.core.eras import META_SUBSCRIPTION_ID
from bridge.core.events import CLIENT, SERVER
from bridge.core.exchange import NO_REQUEST, Exchange
from bridge.core.jsonrpc import WireId, is_request_id, notification, typed_id
from bridge.core.methods import ACKNOWLEDGED, UPDATED
from bridge.core.router import Router
from bridge.core.states import IllegalMove
from bridge.core.stream_tags import untagged
from bridge.core.timers import Deadline

# The stream for list changes in timer keys, as opposed to one per resource URI.
SESSION_STREAM: Final = "session"


class UpstreamHost(Protocol):
    """What the listener needs of its mode: the modern server, the client it speaks for, and
    the initialize that may be waiting on the session stream."""

    ctx: Context
    router: Router
    client_caps: Message
    client_info: Message | None

    @property
    def initializing(self) -> bool:
        """Whether the client's initialize waits on the session stream's acknowledgement."""
    @property
    def server_caps(self) -> Message: ...
    def answer_initialize(self) -> None: ...
    def local_result(self, method: str) -> Message: ...


class UpstreamDue(Enum):
    """The listener's deadlines, owned by a stream's name (its URI, or SESSION_STREAM)."""

    ACK = "listen acknowledgement"  # subscriptions.mdx: the acknowledgement comes first
    REOPEN = "listen reopen"  # the back-off before a stream the server ended is re-opened


class UpstreamState(Enum):
    """Where one stream is in its life at the server."""

    NEW = "new"  # not sent yet
    OPENING = "opening"  # its listen request is out; the acknowledgement is awaited
    OPEN = "open"  # acknowledged: what the server honoured is delivered
    LAPSED = "lapsed"  # ended after its acknowledgement: what it granted stands; re-opened
    BACKING_OFF = "backing off"  # ended (or unacknowledged) before any; re-opened later
    CLOSED = "closed"  # dropped: refused, unsubscribed, or never acknowledged


_STREAM_MOVES: Final[dict[UpstreamState, frozenset[UpstreamState]]] = {
    UpstreamState.NEW: frozenset({UpstreamState.OPENING}),
    UpstreamState.OPENING: frozenset({UpstreamState.OPEN, UpstreamState.BACKING_OFF,
                                      UpstreamState.CLOSED}),
    # A second acknowledgement is taken as the first was.
    UpstreamState.OPEN: frozenset({UpstreamState.OPEN, UpstreamState.LAPSED,
                                   UpstreamState.CLOSED}),
    UpstreamState.LAPSED: frozenset({UpstreamState.OPENING, UpstreamState.CLOSED}),
    UpstreamState.BACKING_OFF: frozenset({UpstreamState.OPENING, UpstreamState.CLOSED}),
    UpstreamState.CLOSED: frozenset(),
}
_ACKNOWLEDGED_STATES: Final = frozenset({UpstreamState.OPEN, UpstreamState.LAPSED})


class UpstreamStream:
    """One stream at the server, over as many listen requests as it takes to keep it open:
    what it asks for, what the server honoured, who waits on it."""

    __slots__ = ("asked", "attempts", "granted", "honored", "id", "state", "uri", "waiters")

    def __init__(self, uri: str | None, asked: Message) -> None:
        self.uri = uri
        self.asked = asked  # the listen filter sent
        self.id: str | None = None  # the minted id of its listen request
        self.state = UpstreamState.NEW
        self.granted = False  # a URI's stream: the client was told it is subscribed
        self.honored: Message = {}  # the filter the server acknowledged
        self.attempts = 0
        self.waiters: list[WireId] = []  # client ids of resources/subscribe awaiting the ack

    @property
    def name(self) -> str:
        """The stream's name in timer keys: its URI, or the session's."""
        return self.uri if self.uri is not None else SESSION_STREAM

    @property
    def acknowledged(self) -> bool:
        """Whether the server acknowledged its latest listen request."""
        return self.state in _ACKNOWLEDGED_STATES

    def move(self, state: UpstreamState) -> None:
        if state not in _STREAM_MOVES[self.state]:
            raise IllegalMove(f"listen stream {self.name}", self.state, state)
        self.state = state


class UpstreamListen(Exchange):
    """One `subscriptions/listen` request: answered only when the server ends the stream (a
    result) or refuses it (an error). request_timeout does not end it and no client request
    waits on it (so neither does the drain); a lost server leaves it to `fail_all`."""

    __slots__ = ("listener", "stream")

    def __init__(self, listener: UpstreamListener, stream: UpstreamStream) -> None:
        super().__init__(NO_REQUEST, "subscriptions/listen")
        self.listener = listener
        self.stream = stream

    def answered(self, message: Message, line: bytes | None) -> None:
        self.listener.on_closed(self.stream, message)


class UpstreamListener:
    """The session stream (list changes) and one stream per subscribed URI (no gaps)."""

    def __init__(self, mode: UpstreamHost) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.session: UpstreamStream | None = None
        self.by_uri: dict[str, UpstreamStream] = {}
        self.by_id: dict[str, UpstreamStream] = {}
        self.subscribe_ok = False

    def timers(self) -> dict[Enum, Callable[[Deadline], None]]:
        """What each of the listener's deadlines does when it passes."""
        return {UpstreamDue.ACK: self._on_ack_due, UpstreamDue.REOPEN: self._on_reopen_due}

    # The session stream, opened while initialize waits ------------------------------------

    def open_session(self) -> bool:
        """Open the session stream if the server has anything to stream. True: wait for ack."""
        caps = self.mode.server_caps
        wanted = {flag: True for flag, area in LIST_CHANGES.values()
                  if has_flag(caps, area, "listChanged")}
        if not wanted and not has_flag(caps, "resources", "subscribe"):
            return False
        self.session = UpstreamStream(None, wanted)
        self._open(self.session)
        return True

    def advertise(self, caps: Message) -> None:
        """Put back into the legacy capabilities what the acknowledged streams deliver."""
        session = self.session
        if session is None or not session.acknowledged:
            return
        for flag, area in LIST_CHANGES.values():
            if session.honored.get(flag) is True and isinstance(caps.get(area), dict):
                caps[area] = {**caps[area], "listChanged": True}
        if self.subscribe_ok and isinstance(caps.get("resources"), dict):
            caps["resources"] = {**caps["resources"], "subscribe": True}

    def _open(self, stream: UpstreamStream) -> None:
        params = stamp_envelope({"notifications": stream.asked},
                                client_capabilities=self.mode.client_caps,
                                client_info=self.mode.client_info)
        stream.move(UpstreamState.OPENING)
        stream.id = self.mode.router.issue(SERVER, "subscriptions/listen", params,
                                           UpstreamListen(self, stream))
        self.by_id[stream.id] = stream
        # subscriptions.mdx: the ack comes first. Every open is timed, not only the session's
        # during initialize: an unacknowledged subscribe would otherwise never be answered.
        self.ctx.schedule(Deadline(stream.name, UpstreamDue.ACK), self.ctx.config.probe_timeout)

    def _on_ack(self, stream: UpstreamStream, params: Message) -> None:
        honored = params.get("notifications")
        honored = honored if isinstance(honored, dict) else {}
        stream.move(UpstreamState.OPEN)
        stream.attempts = 0
        self.ctx.cancel_timer(Deadline(stream.name, UpstreamDue.ACK))
        if stream.uri is None:
            self._on_session_ack(stream, honored)
        else:
            self._on_uri_ack(stream, honored)

    def _on_session_ack(self, stream: UpstreamStream, honored: Message) -> None:
        # The server may honour less than asked (subscriptions.mdx): deliver only that, and
        # ask only for that when the stream is re-opened.
        stream.honored = {k: True for k, v in honored.items() if v is True and k in stream.asked}
        stream.asked = stream.honored
        if self.mode.initializing:
            self.subscribe_ok = has_flag(self.mode.server_caps, "resources", "subscribe")
            self.mode.answer_initialize()

    def _on_uri_ack(self, stream: UpstreamStream, honored: Message) -> None:
        uris = honored.get("resourceSubscriptions")
        waiters, stream.waiters = stream.waiters, []
        if isinstance(uris, list) and stream.uri in uris:
            stream.granted = True
            for waiter in waiters:
                self.ctx.reply(CLIENT, waiter, self.mode.local_result("resources/subscribe"))
            return
        self._drop(stream)
        # The listen request stays open on the server though it carries nothing: end it.
        self._cancel(stream)
        for waiter in waiters:
            self.ctx.fail(CLIENT, waiter, errors.updates_not_offered(stream.uri))

    # resources/subscribe and resources/unsubscribe, answered here --------------------------

    def subscribe(self, message: Message) -> None:
        uri = (message.get("params") or {}).get("uri")
        if not self.subscribe_ok:
            self.ctx.fail(CLIENT, message["id"], errors.subscriptions_not_offered())
        elif not isinstance(uri, str):
            self.ctx.fail(CLIENT, message["id"], errors.uri_not_string())
        elif uri in self.by_uri:
            stream = self.by_uri[uri]
            if stream.acknowledged:
                # Subscribing twice changes nothing.
                self.ctx.reply(CLIENT, message["id"], self.mode.local_result("resources/subscribe"))
            else:
                stream.waiters.append(message["id"])
        else:
            # One stream per URI: adding a URI never closes a stream, so no update is missed.
            stream = UpstreamStream(uri, {"resourceSubscriptions": [uri]})
            stream.waiters.append(message["id"])
            self.by_uri[uri] = stream
            self._open(stream)

    def unsubscribe(self, message: Message) -> None:
        uri = (message.get("params") or {}).get("uri")
        stream = self.by_uri.get(uri) if isinstance(uri, str) else None
        if stream is not None:
            for waiter in stream.waiters:
                self.ctx.fail(CLIENT, waiter, errors.unsubscribed(stream.uri))
            # cancellation.mdx: this ends the stream. One the server already ended (waiting
            # to be re-opened) is not cancelled: only requests in progress may be.
            self._cancel(stream)
            self._drop(stream)
        self.ctx.reply(CLIENT, message["id"], self.mode.local_result("resources/unsubscribe"))

    def cancel(self, request_id: object) -> bool:
        """The client cancelled a resources/subscribe still waiting for its stream's
        acknowledgement: it is owed no answer (cancellation.mdx). The stream stays: the
        subscription may take effect, as at a server that had begun on it. False if none."""
        if not is_request_id(request_id):
            return False
        key = typed_id(request_id)
        for stream in self.by_uri.values():
            for waiter in stream.waiters:
                if typed_id(waiter) == key:
                    stream.waiters.remove(waiter)
                    return True
        return False

    def _drop(self, stream: UpstreamStream) -> None:
        if stream.uri is not None:
            self.by_uri.pop(stream.uri, None)
        if stream.id is not None:
            self.by_id.pop(stream.id, None)
        stream.move(UpstreamState.CLOSED)
        self.ctx.cancel_timer(Deadline(stream.name, UpstreamDue.REOPEN))
        self.ctx.cancel_timer(Deadline(stream.name, UpstreamDue.ACK))

    def _cancel(self, stream: UpstreamStream) -> None:
        """End the stream's listen request on the server, if it is still open there."""
        if stream.id is not None and stream.id in self.mode.router.pending[SERVER]:
            self.mode.router.cancel(SERVER, stream.id)

    # What the server sends on the streams -------------------------------------------------

    def on_notification(self, message: Message) -> bool:
        """Handle a stream notification from the server; False if it is not one."""
        method = message["method"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/cancelled":
            target = params.get("requestId")
            stream = self.by_id.get(target) if isinstance(target, str) else None
            if stream is not None:
                self.mode.router.pending[SERVER].pop(stream.id or "", None)
                self._ended(stream)
            return True
        meta = params.get("_meta")
        sub_id = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        stream = self.by_id.get(sub_id) if isinstance(sub_id, str) else None
        if stream is None:
            return method in LIST_CHANGES or method.startswith("notifications/subscriptions") \
                or method == UPDATED  # untagged or stale: dropped
        if method == ACKNOWLEDGED:
            self._on_ack(stream, params)
        elif method in LIST_CHANGES:
            if stream.uri is None and stream.honored.get(LIST_CHANGES[method][0]) is True:
                self._tell(method, params)
        elif method == UPDATED and stream.uri is not None and stream.uri in self.by_uri:
            self._tell(method, params)
        return True

    def _tell(self, method: str, params: Message) -> None:
        """Pass a stream's notification on, untagged. A legacy client has no stream to put it
        on: it is unsolicited, of the session, and belongs to no request (request None)."""
        self.ctx.send(CLIENT, notification(method, untagged(params)), request=None)

    def on_closed(self, stream: UpstreamStream, message: Message) -> None:
        """The listen request got its answer: the server ended the stream, or refused it."""
        if stream.id is None or self.by_id.get(stream.id) is not stream:
            return
        if "error" in message:
            self._refused(stream, message["error"])
        else:
            self._ended(stream)

    def _refused(self, stream: UpstreamStream, error: Message) -> None:
        self.ctx.log("info", "listen.refused", uri=stream.uri, code=error.get("code"))
        self._drop(stream)
        if stream.uri is None:
            # No listen support: the legacy client gets no listChanged, not an error loop.
            if self.mode.initializing:
                self.mode.answer_initialize()
            self.session = None
            return
        for waiter in stream.waiters:
            self.ctx.fail(CLIENT, waiter, errors.subscription_refused(error))

    def _ended(self, stream: UpstreamStream) -> None:
        """Re-open a stream the server ended, with back-off; the client never knows."""
        if stream.id is not None:
            self.by_id.pop(stream.id, None)
        stream.move(UpstreamState.LAPSED if stream.acknowledged else UpstreamState.BACKING_OFF)
        self.ctx.cancel_timer(Deadline(stream.name, UpstreamDue.ACK))
        first, largest = self.ctx.config.listen_backoff
        delay = min(largest, first * 2**stream.attempts)
        stream.attempts += 1
        self.ctx.log("info", "listen.ended", uri=stream.uri, reopen_in=delay)
        self.ctx.schedule(Deadline(stream.name, UpstreamDue.REOPEN), delay)

    def _on_ack_due(self, key: Deadline) -> None:
        stream = self._named(key.owner)
        if stream is not None:
            self._ack_timeout(stream)

    def _on_reopen_due(self, key: Deadline) -> None:
        stream = self._named(key.owner)
        if stream is not None:
            self._open(stream)

    def _named(self, name: object) -> UpstreamStream | None:
        """The live stream a timer names (it may have been dropped since it was set)."""
        if name == SESSION_STREAM:
            return self.session
        return self.by_uri.get(name) if isinstance(name, str) else None

    def _ack_timeout(self, stream: UpstreamStream) -> None:
        """No acknowledgement in time: whoever waits on the stream is answered; never a hang."""
        self.ctx.log("warning", "listen.no_ack", uri=stream.uri)
        self._cancel(stream)
        if stream.uri is None and self.mode.initializing:
            # initialize waits on it: answer without what the stream would have delivered.
            self._drop(stream)
            self.session = None
            self.mode.answer_initialize()
        elif stream.waiters:
            # A first subscribe: the client is told, and not subscribed.
            waiters, stream.waiters = stream.waiters, []
            self._drop(stream)
            for waiter in waiters:
                self.ctx.fail(CLIENT, waiter, errors.subscription_unacknowledged(stream.uri))
        else:
            # A re-open of a stream the client counts on: try again later, with back-off.
            self._ended(stream)

    def busy(self) -> bool:
        """Whether a resources/subscribe still waits for its stream's acknowledgement."""
        return any(stream.waiters for stream in self.by_uri.values())

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """Every resources/subscribe still waiting is answered with an error."""
        for stream in self.by_uri.values():
            waiters, stream.waiters = stream.waiters, []
            for waiter in waiters:
                self.ctx.fail(CLIENT, waiter, errors.subscription_lost(reason, data))

    # A restarted server -------------------------------------------------------------------

    def subscribed(self) -> list[str]:
        """The URIs the client was told it is subscribed to (and has not unsubscribed)."""
        return [uri for uri, stream in self.by_uri.items() if stream.granted]

    def resume(self, changes: list[str], uris: list[str], *, subscribe: bool) -> None:
        """Re-open, at a new server, the streams of a client's session: one for the list
        changes it was told of (`changes`) that this server offers, one per URI."""
        caps = self.mode.server_caps
        wanted = {flag: True for method, (flag, area) in LIST_CHANGES.items()
                  if method in changes and has_flag(caps, area, "listChanged")}
        if wanted:
            self.session = UpstreamStream(None, wanted)
            self._open(self.session)
        self.subscribe_ok = subscribe and has_flag(caps, "resources", "subscribe")
        for uri in uris:
            if not self.subscribe_ok:
                self.ctx.log("warning", "subscription.lost", uri=uri,
                             reason="the new server offers no resource subscriptions")
                continue
            stream = self.by_uri[uri] = UpstreamStream(uri, {"resourceSubscriptions": [uri]})
            stream.granted = True
            self._open(stream)
