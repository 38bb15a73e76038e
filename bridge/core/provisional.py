"""A legacy verdict the server may still overturn: the client's messages kept since the probe
went unanswered, and the late answers that show the server is modern after all.

Must not act: the verdict (verdict.py) keeps messages here and asks what a server's answer
shows; the server side (supervision.py) drops the handler and replays what was kept.
stdio.mdx §Backward Compatibility takes silence "within a reasonable timeout" as legacy, but
a modern server that is only slow to start answers the probe later, and then its era is
known for certain.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import MODERN_PROTOCOL_VERSION, UNSUPPORTED_PROTOCOL_VERSION
from bridge.core.events import CLIENT, Action, Send
from bridge.core.handover import ClientSession
from bridge.core.jsonrpc import Inbound, TypedId, is_request_id, typed_id
from bridge.core.record import record

# Client messages kept at most; past it the verdict is taken as final (a server silent for
# that long while a client talks to it is not a slow modern server).
KEEP_AT_MOST = 1024


@record(frozen=True)
class Overturn:
    """A late answer showed the server is modern: with its DiscoverResult or modern error,
    or with neither (only a -32022 naming the modern version: ask server/discover again)."""

    why: str
    discover: Message | None = None
    error: Message | None = None


def names_modern_version(error: object) -> bool:
    """A -32022 whose `data.supported` holds the modern version: the server speaks it."""
    if not isinstance(error, dict) or error.get("code") != UNSUPPORTED_PROTOCOL_VERSION:
        return False
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    return isinstance(supported, list) and MODERN_PROTOCOL_VERSION in supported


def refused_initialize(message: Message, method: str | None) -> Overturn | None:
    """The server refused a legacy `initialize` the way only a modern server does."""
    error = message.get("error")
    if method != "initialize" or not names_modern_version(error):
        return None
    return Overturn(f"it answered initialize with error {UNSUPPORTED_PROTOCOL_VERSION} "
                    f"naming {MODERN_PROTOCOL_VERSION} as supported")


class Provisional:
    """From the probe's timeout until the server answers like a legacy server (or is lost)."""

    __slots__ = ("_answered", "_kept", "session", "since")

    def __init__(self, since: float) -> None:
        self.since = since
        # The session a restarted server's handler was given to re-open: the handler of the
        # true era re-opens it instead.
        self.session: ClientSession | None = None
        self._kept: list[Inbound] = []
        self._answered: set[TypedId] = set()

    def keep(self, inbound: Inbound) -> bool:
        """Keep a client message for a replay; False once too many were kept."""
        if len(self._kept) >= KEEP_AT_MOST:
            return False
        kind = inbound.kind
        inbound.line = None  # kept, the decoded message is enough: not its bytes as well
        if kind == "request":
            self._answered.discard(typed_id(inbound.message["id"]))  # an id used again
        elif kind != "notification":
            return True
        self._kept.append(Inbound(kind, _copy(inbound.message), id=inbound.id))
        return True

    def note_answers(self, actions: list[Action]) -> None:
        """The client requests answered already (by the handler the verdict chose): a replay
        must not answer them twice."""
        for action in actions:
            if type(action) is Send and action.side == CLIENT:
                sent = action.message
                for message in sent if isinstance(sent, list) else (sent,):
                    if isinstance(message, dict) and "method" not in message \
                            and is_request_id(message.get("id")):
                        self._answered.add(typed_id(message["id"]))

    def replay(self) -> list[Inbound]:
        """What the client said since, in order, but for the requests already answered and
        its answers to the server (whose questions went with the handler)."""
        answered = self._answered
        return [inbound for inbound in self._kept if inbound.kind == "notification"
                or typed_id(inbound.message["id"]) not in answered]


def _copy(message: Message) -> Message:
    """A copy the handler's edits do not reach: it renumbers ids and re-stamps params."""
    copy = dict(message)
    params = copy.get("params")
    if isinstance(params, dict):
        copy["params"] = dict(params)
    return copy
