"""An observing bridge: a `Bridge` that also reports, as `Answered` actions, each client
request it answered (its method, tool, times, the class of its error, its trace context).

Must not change what the bridge sends: it watches the requests a mode takes and the answers
the client gets, and adds facts after them; what the facts become (metrics, spans) is the
shell's. A plain `Bridge` pays nothing for this: the shell makes an `ObservedBridge` only
when someone watches.
"""

from __future__ import annotations

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
from bridge.core.events import CLIENT, Action, Answered, Event, Send
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

# W3C Trace Context in `_meta` (the MCP conventions of OpenTelemetry put it there).
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_Asked = tuple[str, "str | None", float, "str | None", "str | None"]


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


def _asked(message: Message, now: float) -> _Asked:
    """What is kept of a request until its answer: method (a known one, else "other"),
    tool, start, trace context."""
    params = message.get("params")
    tool = parent = state = None
    if type(params) is dict:
        if message["method"] == "tools/call":
            name = params.get("name")
            tool = name if type(name) is str else None
        meta = params.get("_meta")
        if type(meta) is dict:
            value = meta.get(TRACEPARENT)
            parent = value if type(value) is str else None
            value = meta.get(TRACESTATE)
            state = value if type(value) is str else None
    method = message["method"]
    return method if method in CLIENT_METHODS else OTHER, tool, now, parent, state


class ObservedBridge(Bridge):
    """A Bridge that reports each answered client request as an `Answered` action."""

    def __init__(self, config: CoreConfig | None = None, *,
                 mint_id: Callable[[], str] | None = None, secret: bytes = b"") -> None:
        super().__init__(config, mint_id=mint_id, secret=secret)
        self._asked: dict[object, _Asked] = {}
        self._tapped: Handler | None = None

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
            take: Callable[[Message], None] = handler.on_client_request  # type: ignore[attr-defined]
            asked, ctx = self._asked, self.ctx

            def tapped(message: Message) -> None:
                id_ = message["id"]  # before the mode renames it
                if id_ not in asked and len(asked) < ASKED_AT_MOST:
                    asked[id_] = _asked(message, ctx.now)
                take(message)

            setattr(handler, "on_client_request", tapped)  # noqa: B010 (an instance's own)
            self._lane = Lane(handler)  # type: ignore[arg-type]
        super()._release()

    def handle(self, event: Event, now: float) -> list[Action]:
        actions = super().handle(event, now)
        if self._asked:
            facts: list[Action] = []
            for action in actions:
                if type(action) is Send and action.side == CLIENT:
                    message = action.message
                    if type(message) is dict:
                        self._answered(message, now, facts)
                    else:  # a batch's answers
                        for item in message:
                            if type(item) is dict:
                                self._answered(item, now, facts)
            actions.extend(facts)
        return actions

    def _answered(self, message: Message, now: float, facts: list[Action]) -> None:
        if "method" in message:
            return
        asked = self._asked.pop(message.get("id"), None)
        if asked is None:
            return
        method, tool, started, parent, state = asked
        error = message.get("error")
        handler = self.handler
        server_era = self.supervision.probe.era
        facts.append(Answered(
            method, tool, started, now, None if error is None else error_type(error),
            handler.mode if handler is not None else (self.lost_mode or ""),
            self.client_era or "", server_era or "", parent, state))
