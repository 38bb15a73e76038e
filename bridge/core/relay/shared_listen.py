"""Mode P between modern peers in a fleet: the bridge's own listen stream at its server, whose
changes go to the client's listen streams on the fleet's other nodes (`ShareChange`); and the
changes those nodes send (`ChangeRelayed`), told to the client's streams relayed here.

Must not show the client any of its own stream: its listen request goes out under an id the
router minted (a client's ids reach the server renamed by the same router, so none can be
it), and its acknowledgement, notifications and end stay here. Nor may it deliver what its own
stream hears to this core's client: the client's own listens are relayed to this same server,
which tells them itself. Rules: 2026-07-28 basic/patterns/subscriptions.mdx.

Why a stream of its own: a modern server sends a change only on a stream opened at it
(§Receiving Notifications), and a client's listen is relayed to one node's server, so a change
another node's server makes would reach no stream at all. It asks for the three list changes
only (§Notification Filter): a resource update is asked for by URI, and which URIs the other
nodes' clients listen to is not known here. What it shares is what the acknowledgement
honoured (§Acknowledgment); one that honours nothing ends it (a server that changes no list).
"""

from __future__ import annotations

from enum import Enum
from typing import Final, TypeGuard

from bridge.core.capabilities import LIST_CHANGES
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.envelope import stamp_envelope
from bridge.core.events import CLIENT, SERVER, ShareChange
from bridge.core.exchange import NO_REQUEST, Exchange, served_request
from bridge.core.jsonrpc import WireId, notification
from bridge.core.methods import ACKNOWLEDGED, UPDATED
from bridge.core.relay.exchanges import RelayedListen
from bridge.core.router import Router
from bridge.core.stream_tags import tagged, untagged
from bridge.core.timers import Deadline

ASKED: Final = {flag: True for flag, _ in LIST_CHANGES.values()}
"""The bridge's own filter: every list change (§Notification Filter)."""
IDS_KEPT: Final = 8
"""The ids of its past listen requests a stream remembers: what the server still sends under
one of them is the bridge's, never the client's."""


class SharedDue(Enum):
    """The stream's one deadline: the back-off before it is opened again."""

    REOPEN = "shared listen reopen"


class SharedListen(Exchange):
    """The stream's `subscriptions/listen` request: answered only when the server ends the
    stream (a result, §Graceful Closure) or refuses it (an error). Nobody waits on it: not
    timed, not awaited (the drain does not wait for it), and a lost server leaves it be (the
    core that follows opens its own)."""

    __slots__ = ("stream",)

    def __init__(self, stream: ChangeStream) -> None:
        super().__init__(NO_REQUEST, "subscriptions/listen")
        self.stream = stream

    def answered(self, message: Message, line: bytes | None) -> None:
        self.stream.ended(self.id, message.get("error"))


class ChangeStream:
    """The bridge's listen stream at its server, over as many requests as keep it open."""

    def __init__(self, ctx: Context, router: Router) -> None:
        self.ctx = ctx
        self.router = router
        self.id: str | None = None
        """The minted id of the listen request open now; None between two."""
        self.ids: list[str] = []
        """Every id it opened under, the last IDS_KEPT (`owns`)."""
        self.honored: frozenset[str] = frozenset()
        """The change methods the server acknowledged (§Acknowledgment: none before it)."""
        self.attempts = 0

    def open(self) -> None:
        params = stamp_envelope({"notifications": dict(ASKED)}, client_capabilities={},
                                client_info=self.ctx.config.bridge_info)
        self.honored = frozenset()
        self.id = self.router.issue(SERVER, "subscriptions/listen", params, SharedListen(self))
        self.ids = [*self.ids[1 - IDS_KEPT:], self.id]

    def owns(self, tag: object) -> TypeGuard[str]:
        """Whether a subscription id (or a cancelled request id) names this stream."""
        return tag in self.ids

    def heard(self, tag: str, message: Message, params: Message) -> None:
        """A notification the server sent on the stream under `tag`, one of its ids
        (`owns`): until the open request is acknowledged, nothing is shared."""
        method = message["method"]
        if method == ACKNOWLEDGED and tag != self.id:
            self.ctx.debug("notification.dropped", side=SERVER, method=method,
                           reason="the acknowledgement of an ended listen of the bridge's")
        elif method == ACKNOWLEDGED:
            honored = params.get("notifications")
            honored = honored if isinstance(honored, dict) else {}
            self.honored = frozenset(change for change, (flag, _) in LIST_CHANGES.items()
                                     if honored.get(flag) is True)
            self.attempts = 0
            self.ctx.log("info", "listen.shared", changes=sorted(self.honored))
            if not self.honored:  # the server changes no list: the stream would carry nothing
                self.close("the server tells no list change")
        elif method in self.honored:
            self.ctx.actions.append(ShareChange(notification(method, untagged(params))))
        else:
            self.ctx.debug("notification.dropped", side=SERVER, method=method,
                           reason="not asked for on the bridge's own stream")

    def ended(self, request_id: str, error: object) -> None:
        """The server ended the stream (a result, or its `notifications/cancelled`): opened
        again after a back-off; or refused it (`error`): the server shares nothing."""
        if request_id != self.id:
            return
        self.id = None
        self.honored = frozenset()
        if isinstance(error, dict):
            self.ctx.log("warning", "listen.shared_refused", code=error.get("code"),
                         effect="changes this server makes reach no listen stream on the "
                                "fleet's other nodes")
            return
        first, largest = self.ctx.config.listen_backoff
        delay = min(largest, first * 2 ** self.attempts)
        self.attempts += 1
        self.ctx.log("info", "listen.shared_ended", reopen_in=delay)
        self.ctx.schedule(Deadline(None, SharedDue.REOPEN), delay)

    def cancelled(self, request_id: str) -> None:
        """The server's `notifications/cancelled` named a listen request of the stream's
        (cancellation.mdx: how a server ends a listen stream it tears down): ended, as by a
        result."""
        self.router.pending[SERVER].pop(request_id, None)
        self.ended(request_id, None)

    def close(self, reason: str = "mcp-rosetta is stopping") -> None:
        """The stream ends at the server for good (§Cancellation, on stdio a
        `notifications/cancelled` naming the listen request): the core stops, or the stream
        would carry nothing."""
        self.ctx.cancel_timer(Deadline(None, SharedDue.REOPEN))
        if self.id is not None and self.id in self.router.pending[SERVER]:
            self.router.cancel(SERVER, self.id, reason)
        self.id = None


def deliver(ctx: Context, pending: dict[str, Exchange], change: Message) -> bool:
    """Tell a change another node's server made to the client's listen streams relayed here
    whose acknowledged filter asks for it, each on its own stream as its server would
    (§Receiving Notifications: tagged with the listen request's id); False if none asks."""
    method = change["method"]
    params = change.get("params")
    params = untagged(params) if isinstance(params, dict) else None
    told = False
    for exchange in pending.values():
        if type(exchange) is RelayedListen and _asks(exchange.stream.acknowledged, method,
                                                     params):
            origin: WireId = exchange.origin
            ctx.send(CLIENT, notification(method, tagged(params, origin)), None,
                     served_request(exchange))
            told = True
    return told


def _asks(honored: Message | None, method: str, params: Message | None) -> bool:
    """Whether a stream whose acknowledgement honored `honored` takes `method` (§Notification
    Filter); none before its acknowledgement (§Acknowledgment)."""
    if honored is None:
        return False
    if method in LIST_CHANGES:
        return honored.get(LIST_CHANGES[method][0]) is True
    uris = honored.get("resourceSubscriptions")
    return method == UPDATED and isinstance(uris, list) and params is not None \
        and params.get("uri") in uris
