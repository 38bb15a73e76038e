"""What a Bridge given an `Observer` counts: each client request it answered (its method,
tool, mode and eras, how long it took, the class of its error) into a `Tally`, and for
spans each as an `Answered` action with the trace context its `_meta` carried.

Must not change what the bridge sends: it watches the requests a mode (or the lifecycle)
takes and the answers the client gets, and counts or reports after them; what the counts and
facts become (metrics, spans) is the shell's. A Bridge with no observer pays a few tests for
this (see `Observer`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import reduce
from operator import add
from typing import TYPE_CHECKING

from bridge.core.codec import Message
from bridge.core.context import Asking
from bridge.core.eras import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from bridge.core.errors import NO_ANSWER_WITHIN, SERVER_ERROR, SHUTTING_DOWN
from bridge.core.events import CLIENT, Action, Answered, Send
from bridge.core.jsonrpc import Inbound, is_request_id
from bridge.core.lane import ASKED_AT_MOST

if TYPE_CHECKING:
    from bridge.core.context import Context
    from bridge.core.handler import Handler

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
# W3C Trace Context in `_meta` (where OpenTelemetry's conventions for MCP carry it).
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"


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
    if code == SERVER_ERROR or (type(text) is str and text.startswith(SHUTTING_DOWN)):
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


def _tool(request: Message) -> str:
    """A `tools/call`'s tool name ("" for any other request)."""
    if request["method"] != "tools/call":
        return ""
    params = request.get("params")
    name = params.get("name") if type(params) is dict else None
    return name if type(name) is str else ""


BINS_AT_MOST = 2048
"""Kinds of request a Tally counts apart; past it, new ones count as method and tool
"other" (a peer that invents methods or names cannot grow it)."""
FOLD_AT = 128
"""Durations a kind holds unfolded: past it they are folded into its counts at once (a
process nobody scrapes holds no more than this per kind: 4 KiB, 8 MiB at BINS_AT_MOST)."""
Face = tuple[str, str, str]
"""The mode, client era and server era that served a request."""
Bin = tuple[str, str, "str | None", Face]
"""A kind of request and how it ended: its method, its tool ("" but for `tools/call`), its
error class (None for a result), and the face that served it."""


class Tally:
    """Answered requests counted, per `Bin`: a histogram of their durations, as counts per
    bucket of `bounds` (the last: past them all), then the durations' sum.

    Shared by the sessions of a process. An answer costs one append of its duration to its
    kind's list (`durations`); finding the buckets is left to `counts`, when scraped, which
    sorts a kind's durations once and finds each bound in them (or to the append that fills
    a list). Nothing is made for an answer but its duration.
    """

    __slots__ = ("bounds", "folded", "pending")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.pending: dict[Bin, list[float]] = {}
        """Each kind's durations not yet folded; a list, once made, is kept (emptied in
        place), so an observer may hold on to it."""
        self.folded: dict[Bin, list[float]] = {}

    def count(self, key: Bin, seconds: float) -> None:
        durations = self.durations(key)
        durations.append(seconds)
        if len(durations) >= FOLD_AT:
            self.fold()

    def durations(self, key: Bin) -> list[float]:
        """The list `key`'s durations are appended to (made when first needed)."""
        durations = self.pending.get(key)
        if durations is None:
            if len(self.pending) >= BINS_AT_MOST:
                key = (OTHER, OTHER if key[1] else "", key[2], key[3])
            durations = self.pending.setdefault(key, [])
        return durations

    def counts(self) -> dict[Bin, list[float]]:
        """Every kind's counts per bucket, then the sum of its durations, as of now."""
        self.fold()
        return self.folded

    def fold(self) -> None:
        """Fold every pending duration into its kind's counts."""
        bounds = self.bounds
        for key, durations in self.pending.items():  # folding adds no kind
            if not durations:
                continue
            counts = self.folded.get(key)
            if counts is None:
                counts = self.folded[key] = [0] * (len(bounds) + 2)
            # Added in the order they came, as a running total would have them.
            counts[-1] = reduce(add, durations, counts[-1])
            durations.sort()
            below = 0
            for bucket, bound in enumerate(bounds):
                at_most = bisect_right(durations, bound)
                counts[bucket] += at_most - below
                below = at_most
            counts[-2] += len(durations) - below
            durations.clear()


class Observer:
    """What a Bridge given one counts: each client request its handler takes, and each
    answer the client gets, into `tally`; when `traced`, each answer is also an `Answered`
    action for a span.

    Must not change what the bridge sends. Two paths count:

    - An exchange counts its own result. Unless traced, the observer is the context's
      (`Context.observer`), and an exchange that sends the client the server's answer
      (ClientRequest, mode B's ParkedCall) or holds a listen stream open (mode P's
      RelayedListen, mode B's ClientStream) *claims* its request when made: it takes the
      request's filing (`claim`) and, when it relays a result, counts it (`result`): one
      append to its kind's list, found by its method alone (or a call's tool name alone;
      the mode and eras are the observer's own, so no key is built for it).
    - Every other answer is met among the actions: a request is filed in `asked` by the
      lane, or by a tap on the handler's full path and on the lifecycle's intake (what the
      bridge answers itself: a refusal while it stops, a ping before the mode is known, a
      request held while the server restarts), unless claimed; and a claim that ends
      otherwise than with a result (an error, request_timeout, a lost server, an input
      round, a stream's end) is filed again (`give_back`) in the event it answers; a
      stream handed over at a restart is filed again too, until the next handler claims
      it. `Bridge.handle` scans an event's actions only while a filed request waits, so
      nothing may stay filed that will not be answered: a request the client cancels is
      forgotten (`withdrawn`).

    A plain Bridge pays a test per event (of the table of filed requests, which it has
    none of), of `Lane.asked` per request, and of `Context.observer` per answer relayed.
    """

    __slots__ = ("asked", "by_method", "by_tool", "face", "handler", "tally", "traced")

    def __init__(self, tally: Tally, traced: bool = False) -> None:
        self.tally = tally
        self.traced = traced
        self.asked: dict[object, Asking] = {}
        self.face: Face = ("", "", "")
        """The handler's mode, the client's era and the server's."""
        self.handler: Handler | None = None
        # The tally's lists of results, by method (but tools/call) and by tool name.
        self.by_method: dict[str, list[float]] = {}
        self.by_tool: dict[str, list[float]] = {}

    @property
    def parked(self) -> int:
        """Calls parked now (mode B's rounds awaiting the client's retry)."""
        parking = getattr(self.handler, "parking", None)
        return 0 if parking is None else len(parking.rounds)

    def watch(self, handler: Handler, ctx: Context, client_era: str, server_era: str) -> None:
        """A new handler: its lane files each request it routes, a request taking the full
        path (`on_client`, where the lane does not route it) is filed by a tap, and, unless
        traced, its exchanges claim the requests they serve."""
        self.handler = handler
        face = (handler.mode, client_era, server_era)
        if face != self.face:  # another mode: results count under other labels
            self.face = face
            self.by_method, self.by_tool = {}, {}
        ctx.observer = None if self.traced else self
        handler.lane.asked = self.asked
        setattr(handler, "on_client", self.tap(handler.on_client, ctx))  # noqa: B010 (its own)

    def tap(self, take: Callable[[Inbound], None], ctx: Context) -> Callable[[Inbound], None]:
        """`take` (a handler's full path, or the lifecycle's while no handler takes the
        client's messages), with each request filed before it and each request a
        cancellation names forgotten after it."""
        asked = self.asked

        def tapped(inbound: Inbound) -> None:
            kind = inbound.kind
            if kind == "request" and len(asked) < ASKED_AT_MOST:
                # setdefault: a request held before a handler took it keeps its first time.
                asked.setdefault(inbound.message["id"], (inbound.message, ctx.now))
            take(inbound)
            if kind == "notification" and inbound.message["method"] == "notifications/cancelled":
                self.withdrawn(inbound.message.get("params"), ctx)

        return tapped

    def withdrawn(self, params: object, ctx: Context) -> None:
        """The client cancelled a request: it is owed no answer (cancellation, both eras), so
        its filing goes, once the answers this event has made so far are counted (a request
        the mode answered anyway is counted as answered)."""
        request_id = params.get("requestId") if type(params) is dict else None
        if self.asked and is_request_id(request_id):
            self.answered(ctx.actions, ctx.now)
            self.asked.pop(request_id, None)

    def claim(self, request_id: object) -> Asking | None:
        """The filing of a request an exchange will count itself (None if it was not filed)."""
        return self.asked.pop(request_id, None)

    def give_back(self, request_id: object, asking: Asking) -> None:
        """A claimed request ends otherwise than with a result: counted when answered."""
        self.asked[request_id] = asking

    def result(self, asking: Asking, now: float) -> None:
        """A result relayed for a claimed request: its duration appended to its kind's list,
        found by its method alone (a call's by its tool name alone)."""
        request, started = asking
        method = request["method"]
        try:
            durations = self.by_tool[request["params"]["name"]] if method == "tools/call" \
                else self.by_method[method]
        except (KeyError, TypeError):  # the first of its kind, or a name that is none
            durations = self._results(request)
        durations.append(now - started)
        if len(durations) >= FOLD_AT:
            self.tally.fold()

    def answered(self, actions: list[Action], now: float) -> None:
        """Count each answer to a filed request among `actions` (the answers of a batch
        too); when traced, add an `Answered` after them."""
        asked = self.asked
        # An Answered appended here (traced) is met by this loop too, and passed over.
        for action in actions:
            if type(action) is Send and action.side == CLIENT:
                message = action.message
                for item in (message,) if type(message) is dict else message:
                    if type(item) is dict and "method" not in item:
                        try:
                            entry = asked.pop(item.get("id"), None)
                        except TypeError:  # an unhashable id, which no request filed can have
                            continue
                        if entry is not None:
                            self._count(entry, item, now, actions)

    def _results(self, request: Message) -> list[float]:
        """The tally's list of the results of requests like `request`, kept by name for the
        next (while the observer holds fewer than BINS_AT_MOST)."""
        method, tool = request["method"], _tool(request)
        durations = self.tally.durations((method, tool, None, self.face))
        names, name = (self.by_tool, tool) if method == "tools/call" else (self.by_method, method)
        if name and len(names) < BINS_AT_MOST:
            names[name] = durations
        return durations

    def _count(self, entry: Asking, answer: Message, now: float,
               actions: list[Action]) -> None:
        request, started = entry
        error = answer.get("error")
        ended = None if error is None else error_type(error)
        method, tool = request["method"], _tool(request)
        self.tally.count((method, tool, ended, self.face), now - started)
        if self.traced:
            known = method if method in CLIENT_METHODS else OTHER
            actions.append(Answered((known, tool, *self.face), started, now, ended,
                                    _trace(request)))
