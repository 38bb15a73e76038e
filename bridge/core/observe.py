"""An observing bridge: a `Bridge` that also counts each client request it answered (its
method, tool, mode and eras, how long it took, the class of its error) into a `Tally`, and
for spans reports each as an `Answered` action with the trace context its `_meta` carried.

Must not change what the bridge sends: it watches the requests a mode takes and the answers
the client gets, and counts or reports after them; what the counts and facts become
(metrics, spans) is the shell's. A plain `Bridge` pays nothing for this: the shell makes an
`ObservedBridge` only when someone watches.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from bridge.core.bridge import Bridge
from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.eras import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from bridge.core.errors import NO_ANSWER_WITHIN, SERVER_ERROR
from bridge.core.events import CLIENT, Action, Answered, Asked, Event, Send
from bridge.core.handler import Handler
from bridge.core.lane import Lane

# The classes of an error answer (OpenTelemetry's `error.type`, in the bridge's words):
# "timeout" (request_timeout ran out), "transport" (the server went while it held the
# request), "refused" (the bridge would not take it: a limit, shutting down), "client" (the
# client asked wrongly: JSON-RPC's and MCP's codes for that), "bridge" (another error of the
# bridge's own making) and "server" (the server's own error, relayed).
ERROR_TYPES = ("timeout", "transport", "refused", "server", "bridge", "client")

_CLIENT_CODES = frozenset({PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS,
                           MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
_OWN_PREFIX = "mcp-rosetta"
# The requests a client sends a server in either era (schema.ts of each revision): a metric's
# label takes only these, any other method is "other" (a peer must not mint label values).
CLIENT_METHODS = frozenset({
    "initialize", "ping", "server/discover", "subscriptions/listen", "tools/list",
    "tools/call", "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
    "completion/complete", "logging/setLevel", "tasks/get", "tasks/list", "tasks/result",
    "tasks/cancel"})
OTHER = "other"
ASKED_AT_MOST = 4096
"""Requests awaiting their answer that are watched at once; past it, new ones go unwatched
(a client that never reads its answers must not grow the table)."""

# W3C Trace Context in `_meta` (where OpenTelemetry's conventions for MCP carry it).
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_Entry = tuple[Asked, float, "tuple[str, str | None] | None"]
"""A request awaiting its answer: what it is, when it came, its trace context."""


def error_type(error: object) -> str:
    """The class of the error object an answer carries (ERROR_TYPES)."""
    if type(error) is not dict:
        return "server"
    code, text, data = error.get("code"), error.get("message"), error.get("data")
    if code in _CLIENT_CODES:
        return "client"
    own = (type(data) is dict and data.get("source") == _OWN_PREFIX) \
        or (type(text) is str and text.startswith(_OWN_PREFIX))
    if not own:
        return "server"
    if type(text) is str and text.startswith(NO_ANSWER_WITHIN):
        return "timeout"
    if type(data) is dict and "exitStatus" in data:
        return "transport"
    if code == SERVER_ERROR or text == "mcp-rosetta is shutting down":
        return "refused"
    return "bridge"


def _trace(message: Message) -> tuple[str, str | None] | None:
    """The W3C trace context in a request's `_meta`, if it has one."""
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is not dict:
        return None
    parent, state = meta.get(TRACEPARENT), meta.get(TRACESTATE)
    if type(parent) is not str:
        return None
    return parent, state if type(state) is str else None


BINS_AT_MOST = 2048
"""Kinds of request a Tally counts apart; past it, a new tool's calls count as tool "other"."""
Bin = tuple[Asked, "str | None"]
"""A kind of request, and how it ended (its error class, None for a result)."""


class Tally:
    """Answered requests counted, per kind and ending (`Bin`): a histogram of their durations,
    as counts per bucket of `bounds` (the last: past them all), then the durations' sum.

    Shared by the sessions of a process (the shell reads it when scraped); each answer costs
    one lookup and two increments, and nothing is made per answer.
    """

    __slots__ = ("bins", "bounds")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.bins: dict[Bin, list[float]] = {}

    def count(self, asked: Asked, error_type: str | None, seconds: float) -> None:
        counts = self.bins.get((asked, error_type))
        if counts is None:
            counts = self._bin(asked, error_type)
        counts[bisect_left(self.bounds, seconds)] += 1
        counts[-1] += seconds

    def _bin(self, asked: Asked, error_type: str | None) -> list[float]:
        if len(self.bins) >= BINS_AT_MOST and asked[1]:
            asked = (asked[0], OTHER, *asked[2:])
        return self.bins.setdefault((asked, error_type), [0] * (len(self.bounds) + 2))


class ObservedBridge(Bridge):
    """A Bridge that counts each answered client request into `tally` and, when `traced`,
    reports it as an `Answered` action (with the trace context its `_meta` carried)."""

    def __init__(self, config: CoreConfig | None = None, *,
                 mint_id: Callable[[], str] | None = None, secret: bytes = b"",
                 tally: Tally | None = None, traced: bool = False) -> None:
        super().__init__(config, mint_id=mint_id, secret=secret)
        self.tally = tally if tally is not None else Tally(())
        self._asked: dict[object, _Entry] = {}
        self._tapped: Handler | None = None
        self._traced = traced

    @property
    def parked(self) -> int:
        """Calls parked now (mode B's rounds awaiting the client's retry)."""
        parking = getattr(self.handler, "parking", None)
        return 0 if parking is None else len(parking.rounds)

    def _release(self) -> None:
        """Before a new handler takes its first client message, its requests are tapped.

        Every mode takes a client's request through its `on_client_request` (the full path
        and the common lane alike), so the tap is there; mode P's own lane, which inlines the
        step, gives way to the common one.
        """
        handler = self.handler
        if handler is not None and handler is not self._tapped:
            self._tapped = handler
            setattr(handler, "on_client_request",  # noqa: B010 (the instance's own)
                    self._tap(handler, handler.on_client_request))  # type: ignore[attr-defined]
            self._lane = Lane(handler)  # type: ignore[arg-type]
        super()._release()

    def _tap(self, handler: Handler, take: Callable[[Message], None]
             ) -> Callable[[Message], None]:
        """`take`, noting first what each request is and when it came (one tuple each)."""
        asked, ctx, traced = self._asked, self.ctx, self._traced
        mode, client_era, server_era = handler.mode, self.client_era or "", \
            self.supervision.probe.era or ""
        known = CLIENT_METHODS

        def tapped(message: Message) -> None:
            id_ = message["id"]  # before the mode renames it
            if id_ not in asked and len(asked) < ASKED_AT_MOST:
                method = message["method"]
                tool = ""
                if method == "tools/call":
                    params = message.get("params")
                    name = params.get("name") if type(params) is dict else None
                    tool = name if type(name) is str else ""
                elif method not in known:
                    method = OTHER
                asked[id_] = ((method, tool, mode, client_era, server_era), ctx.now,
                              _trace(message) if traced else None)
            take(message)

        return tapped

    def handle(self, event: Event, now: float) -> list[Action]:
        actions = Bridge.handle(self, event, now)
        asked = self._asked
        if asked:
            # An Answered appended here (traced) is met by this loop too, and passed over.
            for action in actions:
                if type(action) is Send and action.side == CLIENT:
                    message = action.message
                    if type(message) is dict:
                        if "method" not in message:
                            entry = asked.pop(message.get("id"), None)
                            if entry is not None:
                                if "error" in message or self._traced:
                                    self._answered(entry, message, now, actions)
                                else:  # nearly every answer: Tally.count, inlined
                                    tally = self.tally
                                    counts = tally.bins.get((entry[0], None))
                                    if counts is None:
                                        counts = tally._bin(entry[0], None)
                                    seconds = now - entry[1]
                                    counts[bisect_left(tally.bounds, seconds)] += 1
                                    counts[-1] += seconds
                    else:  # a batch's answers
                        for item in message:
                            if type(item) is dict and "method" not in item:
                                entry = asked.pop(item.get("id"), None)
                                if entry is not None:
                                    self._answered(entry, item, now, actions)
        return actions

    def _answered(self, entry: _Entry, answer: Message, now: float,
                  actions: list[Action]) -> None:
        error = answer.get("error")
        ended = None if error is None else error_type(error)
        self.tally.count(entry[0], ended, now - entry[1])
        if self._traced:
            actions.append(Answered(entry[0], entry[1], now, ended, entry[2]))
