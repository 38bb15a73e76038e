"""Mode B's listen streams: `subscriptions/listen` served from legacy change notifications.

Must not let anything unrequested through: a stream gets only what its acknowledged filter
names, every notification on it carries its subscriptionId, and legacy notifications no
stream asked for are dropped. Rules: subscriptions.mdx; TRANSLATION.md §6.5, §11.12-13.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core import errors
from bridge.core.capabilities import LIST_CHANGES, has_flag
from bridge.core.codec import Message
from bridge.core.context import Asking, Context
from bridge.core.eras import META_SERVER_INFO, META_SUBSCRIPTION_ID
from bridge.core.events import CLIENT, SERVER, ShareChange
from bridge.core.exchange import NO_REQUEST, Exchange
from bridge.core.handover import ListenStream, acknowledged_list_changes, announce
from bridge.core.jsonrpc import TypedId, WireId, is_request_id, notification
from bridge.core.jsonrpc import typed_id as typed
from bridge.core.methods import ACKNOWLEDGED, UPDATED
from bridge.core.modern_server_legacy_client.exchanges import Housekeeping
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta
from bridge.core.router import Router
from bridge.core.stream_tags import tagged


class StreamsHost(Protocol):
    """What the listen streams need of their mode: the legacy server they subscribe at."""

    ctx: Context
    router: Router
    server_caps: Message
    server_info: Message | None


class ClientStream:
    """One open listen request: the flags it was granted and the URIs it is subscribed to."""

    __slots__ = ("asked", "asking", "flags", "id", "request", "told", "uris", "waiting")

    def __init__(self, request: Message, flags: list[str], asked: list[str]) -> None:
        self.request = request  # the client's listen request, as it came
        # Its request as an observer filed it, claimed while the stream is open (observe.py):
        # a stream held for a whole session leaves nothing filed to look for in every event.
        self.asking: Asking | None = None
        self.id = request["id"]  # exact JSON type: it is the subscriptionId
        self.flags = flags
        self.asked = asked  # URIs asked for, in order, without repeats
        self.uris: list[str] = []  # URIs whose resources/subscribe succeeded
        self.waiting: set[str] = set()  # URIs whose resources/subscribe is unanswered
        self.told: Message | None = None  # the filter its acknowledgement named, once sent


class ResourceSubscription:
    """One URI subscribed at the legacy server, shared by every stream that asked for it."""

    __slots__ = ("confirmed", "refs", "uri")

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.refs = 0
        self.confirmed = False  # the server answered its resources/subscribe with a result


class SubscribeRequest(Exchange):
    """The bridge's resources/subscribe for one URI: its answer opens the streams that wait
    for it; a lost server loses nothing (the streams are handed over and subscribe again)."""

    __slots__ = ("streams", "subscription")

    def __init__(self, streams: ClientStreams, subscription: ResourceSubscription) -> None:
        super().__init__(NO_REQUEST, "resources/subscribe")
        self.streams = streams
        self.subscription = subscription

    def answered(self, message: Message, line: bytes | None) -> None:
        self.streams.subscribed(self.subscription, message)


class ClientStreams:
    """All open streams, and the reference-counted legacy subscriptions behind them."""

    def __init__(self, mode: StreamsHost) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.streams: dict[TypedId, ClientStream] = {}
        self.subscriptions: dict[str, ResourceSubscription] = {}

    # Opening ------------------------------------------------------------------------------

    def listen(self, message: Message, meta: RequestMeta) -> None:
        stream = self._open(message)
        if stream is not None and not stream.waiting:
            self._acknowledge(stream)

    def _open(self, message: Message) -> ClientStream | None:
        """A stream for the listen request `message`, its subscriptions asked for; None if
        the request is refused (it is answered with the error)."""
        wanted = (message.get("params") or {}).get("notifications")
        uris = wanted.get("resourceSubscriptions", []) if isinstance(wanted, dict) else None
        if not isinstance(wanted, dict) or not isinstance(uris, list) or not _is_uri_list(uris):
            self.ctx.fail(CLIENT, message["id"], errors.listen_filter_invalid())
            return None
        if typed(message["id"]) in self.streams:
            self.ctx.fail(CLIENT, message["id"], errors.subscription_id_taken())
            return None
        caps = self.mode.server_caps
        flags = [flag for flag, area in LIST_CHANGES.values()
                 if wanted.get(flag) is True and has_flag(caps, area, "listChanged")]
        stream = ClientStream(message, flags, list(dict.fromkeys(uris)))
        self.streams[typed(stream.id)] = stream
        if self.ctx.observer is not None:
            stream.asking = self.ctx.observer.claim(stream.id)
        if has_flag(caps, "resources", "subscribe"):
            for uri in stream.asked:
                self._hold(stream, uri)
        return stream

    def _hold(self, stream: ClientStream, uri: str) -> None:
        """Take a reference on `uri` for `stream`; subscribe at the server on 0 -> 1."""
        sub = self.subscriptions.get(uri)
        if sub is None:
            sub = self.subscriptions[uri] = ResourceSubscription(uri)
            self.mode.router.issue(SERVER, "resources/subscribe", {"uri": uri},
                                   SubscribeRequest(self, sub))
        sub.refs += 1
        if sub.confirmed:
            stream.uris.append(uri)
        else:
            stream.waiting.add(uri)

    def subscribed(self, sub: ResourceSubscription, message: Message) -> None:
        """The legacy server answered a resources/subscribe the bridge sent."""
        ok = "result" in message
        if self.subscriptions.get(sub.uri) is not sub:
            # Every stream that wanted it closed meanwhile; undo it unless a newer one exists.
            if ok and sub.uri not in self.subscriptions:
                self._unsubscribe(sub.uri)
            return
        if ok:
            sub.confirmed = True
        else:
            del self.subscriptions[sub.uri]
            self.ctx.log("info", "subscribe.refused", uri=sub.uri,
                         code=message["error"].get("code"))
        for stream in list(self.streams.values()):
            if sub.uri in stream.waiting:
                stream.waiting.discard(sub.uri)
                if ok:
                    stream.uris.append(sub.uri)
                if not stream.waiting and stream.told is None:
                    self._acknowledge(stream)

    def _acknowledge(self, stream: ClientStream) -> None:
        # subscriptions.mdx §Acknowledgment: the first message of the stream, naming the subset
        # honoured; types the server cannot deliver are omitted.
        honored: Message = dict.fromkeys(stream.flags, True)
        if stream.uris:
            stream.uris.sort(key=stream.asked.index)
            honored["resourceSubscriptions"] = list(stream.uris)
        stream.told = honored
        self.ctx.send(CLIENT, notification(ACKNOWLEDGED, {
            "_meta": {META_SUBSCRIPTION_ID: stream.id}, "notifications": honored}),
            request=stream.id)
        self.ctx.log("info", "listen.opened", subscription=stream.id, honored=sorted(honored))

    # Delivering ---------------------------------------------------------------------------

    def on_notification(self, message: Message) -> bool:
        """A legacy change notification this core's server raised: fanned out to the streams
        that asked and, with `share_changes`, shared with the client's other cores (a pool's
        first process holds its streams; a fleet's other nodes hold theirs); False if not
        one."""
        if not self.deliver(message):
            return False
        if self.ctx.config.share_changes:
            self.ctx.actions.append(ShareChange(message))
        return True

    def deliver(self, message: Message) -> bool:
        """Fan a change notification out to this core's streams that asked (its own server's,
        or one another core shared: `ChangeRelayed`); False if it is none."""
        method = message["method"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method in LIST_CHANGES:
            flag = LIST_CHANGES[method][0]
            targets = [s for s in self.streams.values()
                       if s.told is not None and flag in s.flags]
        elif method == UPDATED:
            uri = params.get("uri")
            targets = [s for s in self.streams.values()
                       if s.told is not None and isinstance(uri, str)
                       and any(_covers(u, uri) for u in s.uris)]
        else:
            return False
        for stream in targets:
            self.ctx.send(CLIENT, notification(method, tagged(params, stream.id)),
                          request=stream.id)
        if not targets:
            self.ctx.debug("notification.dropped", side=SERVER, method=method, reason="no stream")
        return True

    # Closing ------------------------------------------------------------------------------

    def cancel(self, request_id: object) -> bool:
        """The client cancelled a listen request: end the stream silently. False if not one."""
        if not is_request_id(request_id):
            return False
        stream = self.streams.pop(typed(request_id), None)
        if stream is None:
            return False
        for uri in stream.uris + sorted(stream.waiting):
            self._release(uri)
        self.ctx.log("info", "listen.closed", subscription=stream.id, by="client")
        return True

    def _release(self, uri: str) -> None:
        sub = self.subscriptions.get(uri)
        if sub is None:
            return
        sub.refs -= 1
        if sub.refs > 0:
            return
        del self.subscriptions[uri]
        if sub.confirmed:  # an unconfirmed one is undone when its answer arrives
            self._unsubscribe(uri)

    def _unsubscribe(self, uri: str) -> None:
        self.mode.router.issue(SERVER, "resources/unsubscribe", {"uri": uri},
                               Housekeeping(self.ctx, "resources/unsubscribe"))

    def close_all(self) -> None:
        """Shutdown: end every stream gracefully with its listen result (subscriptions.mdx)."""
        for stream in self.streams.values():
            self._give_back(stream)
            self.end(stream.id)
        self.streams.clear()

    def end(self, subscription_id: WireId) -> None:
        """A stream's end: its listen request's result."""
        meta: Message = {META_SUBSCRIPTION_ID: subscription_id}
        if self.mode.server_info is not None:
            meta[META_SERVER_INFO] = self.mode.server_info
        self.ctx.reply(CLIENT, subscription_id, {"resultType": "complete", "_meta": meta})

    # A restarted server -------------------------------------------------------------------

    def handed_over(self) -> list[ListenStream]:
        """Every open stream, for the handler of the next server (which claims it again)."""
        records = []
        for stream in self.streams.values():
            self._give_back(stream)
            records.append(ListenStream(stream.request, stream.told))
        return records

    def _give_back(self, stream: ClientStream) -> None:
        """The stream is answered or handed over: its request is filed again, for the
        observer to count the answer among the actions."""
        if stream.asking is not None and self.ctx.observer is not None:
            self.ctx.observer.give_back(stream.id, stream.asking)
            stream.asking = None

    def restore(self, record: ListenStream) -> None:
        """A stream the client opened before the server restarted: subscribed again at this
        server, and not acknowledged twice; then told that every list it was promised
        changes may have changed, since this server may offer others."""
        stream = self._open(record.request)
        if stream is None:
            return
        stream.told = record.acknowledged
        if stream.told is None:
            if not stream.waiting:
                self._acknowledge(stream)
            return
        announce(self.ctx, acknowledged_list_changes(record), stream.id)


def _is_uri_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _covers(subscribed: str, uri: str) -> bool:
    """Whether an update for `uri` concerns `subscribed`: the same, or a sub-resource of it.

    resources.mdx (legacy): the updated uri "might be a sub-resource of the one that the
    client actually subscribed to"; a prefix counts only at a path boundary.
    """
    if uri == subscribed:
        return True
    if not uri.startswith(subscribed):
        return False
    return subscribed.endswith("/") or uri[len(subscribed)] in "/?#"
