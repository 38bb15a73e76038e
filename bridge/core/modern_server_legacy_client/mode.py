"""Mode B: a modern client in front of a legacy server; the bridge is a modern server.

Must not hold the parking of input requests or the listen streams itself (inputs.py and
listen.py do); this module performs the legacy handshake, checks every modern request's
envelope, answers what the legacy era lacks (server/discover), strips the envelope on the way
in, makes results modern on the way out, and scopes logs and progress to their requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from enum import Enum
from typing import Literal

from bridge.core import dispatch, errors
from bridge.core.capabilities import server_caps_to_modern
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.envelope import build_request
from bridge.core.eras import (
    BATCHING_VERSION,
    LATEST_LEGACY_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    LOG_SEVERITY,
    MODERN_PROTOCOL_VERSION,
)
from bridge.core.events import CLIENT, SERVER
from bridge.core.handover import ClientSession, Handover, ListenStream, ModernClientSession
from bridge.core.jsonrpc import Inbound, WireId, classify, notification
from bridge.core.jsonrpc import typed_id as typed
from bridge.core.lane import Lane
from bridge.core.methods import ELIGIBLE, INPUT_METHODS
from bridge.core.modern_server_legacy_client.exchanges import (
    Housekeeping,
    LegacyForward,
    LegacyInitialize,
    SettlingPing,
)
from bridge.core.modern_server_legacy_client.inputs import Parking
from bridge.core.modern_server_legacy_client.listen import ClientStreams
from bridge.core.modern_server_legacy_client.parked_call import CallDue, ParkedCall
from bridge.core.modern_server_legacy_client.placement import Load
from bridge.core.modern_server_legacy_client.progress import ProgressRelay
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta, read_meta, usable_info
from bridge.core.modern_server_legacy_client.roots_sync import RootsDue
from bridge.core.probe import Probe
from bridge.core.restarts import Outage
from bridge.core.router import Due, Router
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline
from bridge.core.upgrade import error_for_modern, result_for_modern, with_server_info

# §5.8.1: legacy capabilities are fixed for the session while modern ones vary per request,
# so the bridge declares every input kind it can route and gates each question per request.
# roots gains listChanged when the client declares roots (roots.py).
LEGACY_CLIENT_CAPABILITIES: Message = {
    "roots": {},
    "sampling": {"tools": {}, "context": {}},
    "elicitation": {"form": {}, "url": {}},
}
# Removed in 2026-07-28 (TRANSLATION.md §4.1): a modern server knows none of them.
REMOVED_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "resources/unsubscribe"})
CACHE_SCOPE = "private"  # caching.mdx: the safe scope when nothing says a result is public


class HandshakePhase(Enum):
    """The bridge's own legacy handshake (§5.8.1), started by the client's first request."""

    NEW = "new"  # no request yet
    INITIALIZING = "initializing"  # initialize sent
    SETTLING = "settling"  # initialized, the settling ping out (§11.5)
    READY = "ready"  # requests are served
    FAILED = "failed"  # the server refused or never answered initialize: requests are refused


_HANDSHAKE_MOVES: dict[HandshakePhase, frozenset[HandshakePhase]] = {
    HandshakePhase.NEW: frozenset({HandshakePhase.INITIALIZING}),
    HandshakePhase.INITIALIZING: frozenset({HandshakePhase.SETTLING, HandshakePhase.FAILED}),
    HandshakePhase.SETTLING: frozenset({HandshakePhase.READY}),
    HandshakePhase.READY: frozenset(),
    # An answer to initialize after handshake_timeout still counts: a result revives the
    # session (requests refused meanwhile stay refused), an error repeats the failure.
    HandshakePhase.FAILED: frozenset({HandshakePhase.SETTLING, HandshakePhase.FAILED}),
}


class HandshakeDue(Enum):
    """Mode B's own deadline: handshake_timeout, for initialize and then for the ping."""

    HANDSHAKE = "handshake"


HANDSHAKE_DEADLINE = Deadline(None, HandshakeDue.HANDSHAKE)
# Read for every request: a global, since an Enum class attribute costs five times as much.
_PHASE_READY = HandshakePhase.READY


class ModeB:
    """The modern server a modern client sees, made of a legacy server."""

    mode: Literal["B"] = "B"
    client_batching = False  # batches are a 2025-03-26 thing; a modern client sends none

    def __init__(self, ctx: Context, probe: Probe, secret: bytes) -> None:
        # The probe only told us the server is legacy; nothing else of its answer is needed.
        # `secret` keys the requestState HMAC (request_state.py); the shell draws it at start.
        self.ctx = ctx
        self.secret = secret
        self.router = Router(ctx)
        self.phase = HandshakePhase.NEW
        self.failure = ""  # why the handshake failed, once it has
        self.waiting: list[tuple[Message, RequestMeta]] = []  # until the handshake is done
        # A session handed over from a lost server: its streams, until the handshake is done.
        self.restoring: list[ListenStream] | None = None
        self.version = LATEST_LEGACY_VERSION
        self.server_caps: Message = {}
        self.server_info: Message | None = None
        self.instructions: str | None = None
        self.legacy_level: str | None = None  # the level last set with logging/setLevel
        self.progress = ProgressRelay(ctx)
        self.parking = Parking(self)
        self.streams = ClientStreams(self)
        self.lane = Lane(self)
        self._local: dict[str, Callable[[Message, RequestMeta], None]] = {
            "server/discover": self._discover,
            "subscriptions/listen": self.streams.listen,
        }
        self._timers: dict[Enum, Callable[[Deadline], None]] = {
            Due.REQUEST_TIMEOUT: self.router.on_deadline,
            HandshakeDue.HANDSHAKE: self._on_handshake_timeout,
            CallDue.GATHER: self.parking.on_timer,
            CallDue.PARKED: self.parking.on_timer,
            CallDue.URL: self.parking.on_timer,
            RootsDue.RESYNC: self.parking.sync.on_timer,
        }

    def load(self) -> Load:
        """Its calls, for a pool's placement (`placement.py`); the requests its handshake
        holds are calls to come."""
        parking, waiting = self.parking, len(self.waiting)
        free = not (parking.holder or parking.queue or waiting or parking.roots.resyncing)
        return Load(own_free=free and parking.shared == 0, shared_free=free,
                    calls=len(parking.calls) + waiting)

    def _move(self, to: HandshakePhase) -> None:
        if to not in _HANDSHAKE_MOVES[self.phase]:
            raise IllegalMove("handshake", self.phase, to)
        self.phase = to

    # From the client ----------------------------------------------------------------------

    def on_client(self, inbound: Inbound) -> None:
        kind = inbound.kind
        message = inbound.message
        if kind == "request":
            self.on_client_request(message)
        elif kind == "notification":
            if message["method"] == "notifications/cancelled":
                self._cancel(message.get("params") or {})
            elif message["method"] == "notifications/roots/list_changed":
                self.parking.own.roots_changed()
            else:  # ClientNotification (2026-07-28) is notifications/cancelled alone
                self.ctx.debug("notification.dropped", side=CLIENT, method=message["method"])
        elif kind == "response":
            # The bridge never sends a modern client a request, so nothing can be answered.
            self.ctx.log("warning", "response.unexpected", side=CLIENT, id=message.get("id"))
        else:
            self.ctx.reject(CLIENT, inbound)

    def on_client_request(self, message: Message) -> None:
        if self.parking.rounds:  # no live call, no round to forget: skip the call
            self.parking.forget_round(message["id"])
        meta = read_meta(message)
        if type(meta) is RequestMeta and self.phase is _PHASE_READY \
                and message["method"] in ELIGIBLE:
            self.parking.call(message, meta)  # nearly every request: no frame in between
        else:
            self._on_request(message, meta)

    def _on_request(self, message: Message, meta: RequestMeta | errors.OwnError) -> None:
        """A request on_client_request did not hand to the parking itself, its envelope read."""
        if not isinstance(meta, RequestMeta):
            self.ctx.fail(CLIENT, message["id"], meta)
        elif self.phase is _PHASE_READY:
            self._serve(message, meta)
        elif self.phase is HandshakePhase.FAILED:
            self._refuse_unavailable(message["id"])
        else:
            self.waiting.append((message, meta))
            if self.phase is HandshakePhase.NEW:
                self._initialize(meta)

    def _serve(self, message: Message, meta: RequestMeta) -> None:
        method = message["method"]
        if method in ELIGIBLE:  # the common case first: none is local, removed or tasks/
            self.parking.call(message, meta)
            return
        local = self._local.get(method)
        if local is not None:
            local(message, meta)
        elif method in REMOVED_METHODS or method.startswith("tasks/"):
            # Tasks are not bridged (TRANSLATION.md §4.3); the rest left the protocol.
            self.ctx.fail(CLIENT, message["id"], errors.method_not_served(method))
        else:
            self._forward(message, meta)

    def _forward(self, message: Message, meta: RequestMeta) -> None:
        forward = LegacyForward(self, message["id"], message["method"], meta)
        observer = self.ctx.observer
        if observer is not None:  # it counts its result itself (observe.py)
            forward.asking = observer.claim(message["id"])
        if meta.progress_token is not None:
            forward.token = self.progress.track(forward)
        self.prepare_logs(meta)
        # The legacy server gets no envelope, no MRTR fields, and the bridge's token (§9.3).
        request = build_request(message["id"], message["method"], message.get("params"),
                                era="legacy", version=self.version, progress_token=forward.token)
        self.router.forward(SERVER, request, forward)

    def _cancel(self, params: Message) -> None:
        request_id = params.get("requestId")
        reason = params.get("reason") if isinstance(params.get("reason"), str) else None
        if self.streams.cancel(request_id) or self.parking.cancel(request_id, reason):
            return
        queued = [e for e in self.waiting if typed(e[0]["id"]) == (type(request_id), request_id)]
        if queued:
            self.waiting.remove(queued[0])
            return
        bid = self.router.find(SERVER, request_id)
        if bid is not None:
            exchange = self.router.cancel(SERVER, bid, reason)
            # Only a forwarded request has a client id as its origin (a call's are NO_REQUEST).
            if isinstance(exchange, LegacyForward):
                exchange.cancelled()

    # The bridge's own legacy handshake (§5.8.1) -------------------------------------------

    def _initialize(self, meta: RequestMeta) -> None:
        self._move(HandshakePhase.INITIALIZING)
        info = meta.client_info if usable_info(meta.client_info) else self.ctx.config.bridge_info
        caps = {**LEGACY_CLIENT_CAPABILITIES,
                "roots": self.parking.roots.capability(meta.capabilities)}
        params = {"protocolVersion": LATEST_LEGACY_VERSION, "capabilities": caps,
                  "clientInfo": info}
        self.router.issue(SERVER, "initialize", params, LegacyInitialize(self))
        self.ctx.schedule(HANDSHAKE_DEADLINE, self.ctx.config.handshake_timeout)

    def initialized(self, message: Message) -> None:
        """The legacy server answered the bridge's initialize."""
        self.ctx.cancel_timer(HANDSHAKE_DEADLINE)
        result = message.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if result is None:
            error = message["error"]
            self._give_up(f"it answered initialize with error {error.get('code')}: "
                          f"{error.get('message')}")
            return
        if version not in LEGACY_PROTOCOL_VERSIONS:
            self._give_up(f"it answered initialize with protocol version {version!r}")
            return
        self._adopt(result)
        self.ctx.send(SERVER, notification("notifications/initialized"))
        # §11.5: servers often ask roots/list as soon as they are initialized. A ping is
        # answered in order, so such questions arrive while no call runs and are answered
        # here rather than attached to the client's first call.
        self._move(HandshakePhase.SETTLING)
        self.router.issue(SERVER, "ping", None, SettlingPing(self))
        self.ctx.schedule(HANDSHAKE_DEADLINE, self.ctx.config.handshake_timeout)

    def _adopt(self, result: Message) -> None:
        self.version = result["protocolVersion"]
        caps = result.get("capabilities")
        self.server_caps = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    def settled(self) -> None:
        """The settling ping was answered (late, if the handshake timed out first)."""
        if self.phase is HandshakePhase.SETTLING:
            self.ctx.cancel_timer(HANDSHAKE_DEADLINE)
            self._ready()

    def _ready(self) -> None:
        self._move(HandshakePhase.READY)
        self.ctx.log("info", "server.initialized", mode="B", version=self.version,
                     server=(self.server_info or {}).get("name"))
        if self.restoring is not None:
            streams, self.restoring = self.restoring, None
            for stream in streams:
                self.streams.restore(stream)
            self.ctx.log("info", "session.resumed", mode="B", streams=len(streams))
        waiting, self.waiting = self.waiting, []
        for message, meta in waiting:
            self._serve(message, meta)

    def _give_up(self, reason: str) -> None:
        self._move(HandshakePhase.FAILED)
        self.failure = reason
        self.ctx.log("error", "handshake.failed", reason=reason)
        waiting, self.waiting = self.waiting, []
        for message, _ in waiting:
            self._refuse_unavailable(message["id"])
        streams, self.restoring = self.restoring or [], None
        for stream in streams:  # no server to serve them: each ends with its one answer
            self._refuse_unavailable(stream.request["id"])

    def _refuse_unavailable(self, request_id: WireId) -> None:
        self.ctx.fail(CLIENT, request_id, errors.legacy_server_unavailable(self.failure))

    def _on_handshake_timeout(self, key: Deadline) -> None:
        seconds = self.ctx.config.handshake_timeout
        if self.phase is HandshakePhase.INITIALIZING:
            self._give_up(f"no answer to initialize within {seconds:g} s")
        elif self.phase is HandshakePhase.SETTLING:
            self.ctx.log("warning", "handshake.no_ping_answer", waited_s=seconds)
            self._ready()

    # server/discover, answered here (server/discover.mdx, TRANSLATION.md §7.4) -------------

    def _discover(self, message: Message, meta: RequestMeta) -> None:
        # Every list-change kind and resource subscription the legacy server offers is
        # delivered on listen streams (listen.py), so its capabilities carry over (§7.3).
        result: Message = {"supportedVersions": [MODERN_PROTOCOL_VERSION],
                           "capabilities": server_caps_to_modern(self.server_caps)}
        if self.instructions is not None:
            result["instructions"] = self.instructions
        self.ctx.reply(CLIENT, message["id"], self.modern_result("server/discover", result))

    # Results and errors toward the client -------------------------------------------------

    def modern_result(self, method: str, result: Message, *, retried: bool = False) -> Message:
        """A legacy result as a modern server sends it (§7.1, sharp edge 14)."""
        shape = _MODERN_RESULTS.get(method)
        if shape is not None:
            result = shape(result)
        ttl = 0 if retried else self.ctx.config.cache_ttl_ms
        return result_for_modern(result, method, self.server_info, ttl, CACHE_SCOPE)

    def with_server_info(self, result: Message) -> Message:
        return with_server_info(result, self.server_info)

    def relay_error(self, request_id: WireId | None, error: Message) -> None:
        """The legacy server's error for client request `request_id`, as a modern one."""
        self.ctx.send(CLIENT, {"jsonrpc": "2.0", "id": request_id,
                               "error": error_for_modern(error)}, request=request_id)

    # From the server ----------------------------------------------------------------------

    def on_server(self, inbound: Inbound) -> None:
        """A server's message on the full path (the lane routes the common shapes itself)."""
        message = inbound.message
        if isinstance(message, list) and self.version == BATCHING_VERSION:
            # 2025-03-26 basic §Batching: that revision may batch; the elements are handled
            # one by one, and answered one by one (the bridge never sends batches, §10.3).
            for item in classify(message, batching=True).items or []:
                dispatch.from_server(self, item)
        else:
            dispatch.from_server(self, inbound)

    def on_change(self, message: Message) -> None:
        """A change another core of the client heard from its server: to the streams here."""
        if not self.streams.deliver(message):
            self.ctx.debug("notification.dropped", side=SERVER, method=message.get("method"))

    def on_server_request(self, message: Message) -> None:
        method = message["method"]
        if method == "ping":  # legacy ping.mdx: answer promptly; modern clients know no ping
            self.ctx.reply(SERVER, message["id"], {})
        elif method in INPUT_METHODS:
            self.parking.on_server_request(message)
        else:
            self.ctx.fail(SERVER, message["id"], errors.method_not_served(method))

    def on_server_notification(self, message: Message) -> None:
        method = message["method"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/progress":
            self.progress.relay(params)
        elif method == "notifications/message":
            self._relay_log(message, params)
        elif method == "notifications/cancelled":
            self.parking.on_server_cancelled(params.get("requestId"))
        elif method == "notifications/elicitation/complete":
            self.parking.own.elicitation_complete(params.get("elicitationId"))
        elif not self.streams.on_notification(message):
            self.ctx.debug("notification.dropped", side=SERVER, method=method)

    # Logging (logging.mdx, TRANSLATION.md §8) ---------------------------------------------

    def _logs_in_flight(self) -> Iterator[tuple[str, WireId]]:
        """The logLevel and id of each client request the legacy server is working on that
        asked for logs (a parked call's round has had its answer: it asks for none)."""
        for exchange in self.router.pending[SERVER].values():
            if isinstance(exchange, (LegacyForward, ParkedCall)):
                level = exchange.meta.log_level
                if level is not None and exchange.serving is not None:
                    yield level, exchange.serving

    def prepare_logs(self, meta: RequestMeta) -> None:
        """Before a request goes out: set the legacy level to the most verbose one needed."""
        if meta.log_level is None or "logging" not in self.server_caps:
            return
        levels = [level for level, _ in self._logs_in_flight()]
        wanted = min([*levels, meta.log_level], key=LOG_SEVERITY.__getitem__)
        if wanted != self.legacy_level:
            self.legacy_level = wanted
            self.router.issue(SERVER, "logging/setLevel", {"level": wanted},
                              Housekeeping(self.ctx, "logging/setLevel"))

    def _relay_log(self, message: Message, params: Message) -> None:
        # logging.mdx: no notifications/message for a request without logLevel, and only at
        # or above its level; a legacy message names no request, so it goes as the log of
        # the first request in flight that asked for its level.
        level = params.get("level")
        severity = LOG_SEVERITY.get(level, -1) if isinstance(level, str) else -1
        for wanted, request in self._logs_in_flight():
            if severity >= LOG_SEVERITY[wanted]:
                self.ctx.send(CLIENT, message, request=request)
                return
        self.ctx.debug("log.dropped", level=params.get("level"))

    # Lifecycle ----------------------------------------------------------------------------

    def on_timer(self, key: Deadline) -> None:
        self._timers[key.kind](key)

    def busy(self) -> bool:
        """Whether the client is still owed an answer (open listen streams and parked calls
        owe it nothing until shutdown, which answers them at once)."""
        return bool(self.waiting) or self.parking.busy() or self.router.busy()

    def fail_pending(self, reason: str, data: Message | None = None) -> None:
        self.router.fail_all(reason, data)
        self.parking.fail_all(reason, data)
        self.streams.close_all()
        for stream in self.restoring or []:
            self.streams.end(stream.request["id"])
        self.restoring = None
        waiting, self.waiting = self.waiting, []
        for message, _ in waiting:
            self.ctx.fail(CLIENT, message["id"], errors.session_ended(reason, data))

    # A restarted server (handover.py) ----------------------------------------------------

    @property
    def resuming(self) -> bool:
        return self.restoring is not None

    def lose_server(self, outage: Outage) -> Handover:
        """Calls in flight get the error; parked ones end, so their requestState no longer
        resumes anything; the listen streams stay open, handed on; requests waiting for the
        handshake never reached the server, so they wait for the next one."""
        streams = self.streams.handed_over() + (self.restoring or [])
        unsent = [Inbound("request", message, id=message["id"]) for message, _ in self.waiting]
        self.waiting = []
        reason, data = outage.error()
        self.router.fail_all(reason, data)
        self.parking.fail_all(reason, data)
        return Handover(ModernClientSession(streams) if streams else None, unsent)

    def resume(self, session: ClientSession) -> None:
        """The client's listen streams at a new legacy server: the bridge's handshake first,
        at once (the streams need their subscriptions again), then each stream re-opened.
        With no stream, the handshake waits for the first request, as at the first start."""
        assert isinstance(session, ModernClientSession)
        if not session.streams:
            return
        self.restoring = session.streams
        self._initialize(_envelope_of(session.streams))


def _envelope_of(streams: list[ListenStream]) -> RequestMeta:
    """The envelope the client's listen requests carried (each carries a whole one): what the
    bridge's handshake says of the client. A stream passed through from a modern server was
    never checked here, so one that reads as no envelope stands for an anonymous client."""
    for stream in streams:
        meta = read_meta(stream.request)
        if isinstance(meta, RequestMeta):
            return meta
    return RequestMeta({}, None, None, None)


def _tools_without_execution(result: Message) -> Message:
    # Tool.execution belongs to legacy tasks, which are not bridged (TRANSLATION.md §4.3).
    tools = result.get("tools")
    if not isinstance(tools, list) or not any(isinstance(t, dict) and "execution" in t
                                              for t in tools):
        return result
    stripped = [{k: v for k, v in t.items() if k != "execution"} if isinstance(t, dict) else t
                for t in tools]
    return {**result, "tools": stripped}


_MODERN_RESULTS: dict[str, Callable[[Message], Message]] = {
    "tools/list": _tools_without_execution,
}
