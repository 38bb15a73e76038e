"""Exchanges: every request the bridge has in flight is an object that owns its answer.

Must not send or route anything itself: the router files an exchange under the id it minted
and hands it back when the answer comes (`router.take(side, message).answered(message)`);
each mode defines one subclass per kind of request it sends, saying what an answer, a passed
`request_timeout` and a lost server mean for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, Final

from bridge.core.codec import Message
from bridge.core.errors import server_lost, timed_out
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import WireId

if TYPE_CHECKING:
    from bridge.core.context import Asking, Context


class _NoRequest(Enum):
    # An enum member, so that `origin is NO_REQUEST` narrows an Origin to a WireId.
    NO_REQUEST = "NO_REQUEST"

    def __repr__(self) -> str:
        return "NO_REQUEST"


# The origin of a request the bridge made itself: no client request waits for its answer.
NO_REQUEST: Final = _NoRequest.NO_REQUEST
# What an exchange serves: the client request's id, or NO_REQUEST.
Origin = WireId | _NoRequest


class Exchange(ABC):
    """One request in flight toward a peer under a minted id (`id`, set by the router).

    `origin` is the client request it serves, as the client spelled its id (the answer goes
    back under it, and a message sent on its behalf names it), or NO_REQUEST. `sent` is the
    core's clock when it went out.

    Class flags: `timed`, request_timeout ends it (forwarded calls, not streams or the
    bridge's own requests); `awaited`, the client waits on it, so the drain at the client's
    end of input waits for it too; `claims`, it may count its client's answer itself for an
    observer (observe.py), holding the request as the observer filed it in `asking` meanwhile
    (None while it does not).
    """

    __slots__ = ("asking", "id", "method", "origin", "sent")

    timed: bool = False
    awaited: bool = False
    claims: bool = False

    def __init__(self, origin: Origin, method: str) -> None:
        self.origin = origin
        self.method = method
        self.id = ""
        self.sent = 0.0
        self.asking: Asking | None = None

    @abstractmethod
    def answered(self, message: Message, line: bytes | None) -> None:
        """The peer answered (a result or an error: `message` is the whole response, its id
        still the minted one; `line`, the bytes it was decoded from when the shell kept them,
        for a result passed on with only its id spliced)."""

    def count_result(self, ctx: Context) -> None:
        """The server's result relayed to the client: counted by the observer, if claimed
        (callers test `asking` first, so that a plain bridge makes no call for it)."""
        if self.asking is not None and ctx.observer is not None:
            ctx.observer.result(self.asking, ctx.now)

    def give_back(self, ctx: Context) -> None:
        """It ends otherwise than with the server's result relayed (an error, a stream handed
        over): its request is filed again, for the observer to count the answer among the
        actions."""
        asking = self.asking
        if asking is not None and ctx.observer is not None:
            self.asking = None
            ctx.observer.give_back(self.origin, asking)

    def expired(self, ctx: Context) -> None:  # noqa: B027 (a default, not abstract)
        """request_timeout passed (only for `timed` exchanges); the router has already told
        the peer to stop."""

    def lost(self, ctx: Context, reason: str,  # noqa: B027 (a default, not abstract)
             data: Message | None) -> None:
        """The peer is gone (the server crashed or the bridge stops): whoever waits gets
        `reason`. Nobody does, by default."""


def served_request(exchange: Exchange) -> WireId | None:
    """The id of the client request `exchange` serves; None for the bridge's own."""
    return None if exchange.origin is NO_REQUEST else exchange.origin


class ClientRequest(Exchange):
    """A client's request the server was sent (as it came, or translated): the client waits
    for its answer, request_timeout ends it, and a lost server owes the client an error.

    It claims its request for an observer: a subclass counts the server's result it relays,
    and on any other end gives the request back."""

    __slots__ = ()

    origin: WireId  # always a client request's id

    timed = True
    awaited = True
    claims = True

    def expired(self, ctx: Context) -> None:
        self.give_back(ctx)
        ctx.fail(CLIENT, self.origin, timed_out(ctx.config.request_timeout, self.method))

    def lost(self, ctx: Context, reason: str, data: Message | None) -> None:
        self.give_back(ctx)
        ctx.fail(CLIENT, self.origin, server_lost(reason, data, self.method))
