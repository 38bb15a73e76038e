"""The client's session state a mode handler hands on when its server is lost, so the handler
made for the next server (of either era) re-opens the same session with it.

Must not decide anything: each mode builds the record from its own state and resumes from
it; the helpers here only read the records. What a session needs again depends only on the
client's era: a legacy client settled its handshake, level and subscriptions; a modern client
keeps nothing but its open listen streams (each request carries the rest).
"""

from __future__ import annotations

from dataclasses import field

from bridge.core.capabilities import LIST_CHANGES, has_flag
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import META_SUBSCRIPTION_ID
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import Inbound, WireId, notification
from bridge.core.record import record


@record()
class LegacyClientSession:
    """What a legacy client settled with the server it had (lifecycle.mdx)."""

    initialize: Message
    """The params of the client's own initialize, replayed to a legacy server."""
    version: str
    """The revision the client was answered with; everything it gets is shaped for it."""
    capabilities: Message
    """The server capabilities the client was told: what it expects to keep getting."""
    initialized: bool = False
    """Whether the client sent notifications/initialized."""
    log_level: str | None = None
    """The level of the client's last logging/setLevel, if it sent one."""
    subscriptions: list[str] = field(default_factory=list)
    """The URIs of its resources/subscribe that succeeded and were not unsubscribed."""


@record()
class ListenStream:
    """A modern client's open subscriptions/listen request (subscriptions.mdx)."""

    request: Message
    """The listen request as the client sent it: its id (exact JSON type) and params."""
    acknowledged: Message | None = None
    """The filter its acknowledgement named, once the client has one (it gets only one)."""


@record()
class ModernClientSession:
    """What a modern client keeps open at the server."""

    streams: list[ListenStream] = field(default_factory=list)


ClientSession = LegacyClientSession | ModernClientSession


@record()
class Handover:
    """What a handler leaves when its server is lost."""

    session: ClientSession | None
    """None if the client had settled nothing yet (no initialize answered, no stream)."""
    unsent: list[Inbound] = field(default_factory=list)
    """Client requests the handler held and never sent: they wait for the next server."""


def open_requests(session: ClientSession) -> list[WireId]:
    """The ids of the client's requests a session keeps open (its listen streams): each is
    still owed its one answer if the session ends before a handler resumes it."""
    if isinstance(session, LegacyClientSession):
        return []
    return [stream.request["id"] for stream in session.streams]


def told_list_changes(capabilities: Message) -> list[str]:
    """The list_changed notifications a legacy client was told it would get."""
    return [method for method, (_, area) in LIST_CHANGES.items()
            if has_flag(capabilities, area, "listChanged")]


def acknowledged_list_changes(stream: ListenStream) -> list[str]:
    """The list_changed notifications a listen stream's acknowledgement promised."""
    honored = stream.acknowledged or {}
    return [method for method, (flag, _) in LIST_CHANGES.items() if honored.get(flag) is True]


def announce(ctx: Context, methods: list[str], subscription_id: WireId | None = None) -> None:
    """Tell the client its lists may have changed: the new server may offer others. On a
    listen stream (`subscription_id`, the listen request's id), each carries the stream's
    tag (basic/index.mdx) and belongs to that request; a legacy client's belong to none."""
    params = None if subscription_id is None else {"_meta": {META_SUBSCRIPTION_ID:
                                                             subscription_id}}
    for method in methods:
        ctx.send(CLIENT, notification(method, params), None, subscription_id)
