"""Mode A: a legacy client in front of a modern server; the bridge is a legacy server.

Must not hold the input-request loop, the listen streams or what a request's answer means
itself (inputs.py, listen.py and exchanges.py do); this module answers what the modern era
removed, stamps the `_meta` envelope on every request, and normalizes answers down to the
client's revision.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Final, Literal

from bridge.core import errors
from bridge.core.capabilities import client_caps_to_modern, has_flag
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.dispatch import from_server, refuse_modern_request
from bridge.core.downgrade import error_for_legacy, progress_for_legacy, result_for_legacy
from bridge.core.envelope import EnvelopeStamp, envelope_stamp
from bridge.core.eras import (
    BATCHING_VERSION,
    LATEST_LEGACY_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    LOG_SEVERITY,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProgressToken,
    is_log_level,
    is_progress_token,
)
from bridge.core.events import CLIENT, SERVER, Spliced
from bridge.core.exchange import Exchange, served_request
from bridge.core.handover import (
    ClientSession,
    Handover,
    LegacyClientSession,
    announce,
    told_list_changes,
)
from bridge.core.handshake import legacy_result
from bridge.core.jsonrpc import Inbound, TypedId, WireId
from bridge.core.lane import Lane
from bridge.core.legacy_server_modern_client.exchanges import (
    EnvelopedRequest,
    ProgressWatermark,
    Rediscovery,
)
from bridge.core.legacy_server_modern_client.inputs import InputLoop
from bridge.core.legacy_server_modern_client.listen import UpstreamListener
from bridge.core.probe import Probe
from bridge.core.restarts import Outage
from bridge.core.router import Due, Router
from bridge.core.splice import SPLICE_MIN, removed_members, without_members
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline


class InitializeStep(Enum):
    """Where the legacy client's `initialize` is (lifecycle.mdx §InitializeStep)."""

    NEW = "new"  # none yet, or the last one failed with its server
    WAITING = "waiting"  # it waits for the session stream's acknowledgement
    ANSWERED = "answered"  # answered: the client's session is settled


_INITIALIZE_MOVES: Final[dict[InitializeStep, frozenset[InitializeStep]]] = {
    InitializeStep.NEW: frozenset({InitializeStep.WAITING, InitializeStep.ANSWERED}),
    InitializeStep.WAITING: frozenset({InitializeStep.ANSWERED, InitializeStep.NEW}),
    InitializeStep.ANSWERED: frozenset(),
}


class ModeA:
    """The legacy server a legacy client sees, made of a modern server."""

    mode: Literal["A"] = "A"
    resuming = False  # a modern server needs no handshake: the session is re-opened at once

    def __init__(self, ctx: Context, probe: Probe) -> None:
        self.ctx = ctx
        self.router = Router(ctx)
        self.discover = probe.discover
        self.probe_error = probe.error
        self.contradiction = probe.contradiction  # server_era pinned to modern, wrongly
        self.version = LATEST_LEGACY_VERSION
        self.client_batching = False  # set with version: read for every client line
        self.initialization = InitializeStep.NEW
        self.initialize_id: WireId | None = None  # while WAITING: the id the initialize came with
        self.initialize_params: Message = {}
        # The client sent notifications/initialized. Not a step of `initialization`: a client
        # may send it before its answer, and the handover still owes it to the next server.
        self.initialized = False
        self.told: Message = {}  # the capabilities the client's InitializeResult named
        self.client_caps_legacy: Message = {}
        self.client_caps: Message = {}
        self.client_info: Message | None = None
        self.client_level: str | None = None  # set by the client's logging/setLevel
        self._log_level = ctx.config.default_log_level
        self.stamp = self._restamped()  # the envelope of every request: see _restamped
        # (type, token) -> the watermark of a live token: 1 and True are different tokens.
        self.progress_seen: dict[TypedId, ProgressWatermark] = {}
        self.inputs = InputLoop(self)
        self.listener = UpstreamListener(self)
        self.lane = Lane(self)
        self._local: dict[str, Callable[[Message], None]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self.listener.subscribe,
            "resources/unsubscribe": self.listener.unsubscribe,
        }
        self._on_due: dict[Enum, Callable[[Deadline], None]] = {
            Due.REQUEST_TIMEOUT: self.router.on_deadline, **self.inputs.timers(),
            **self.listener.timers()}

    @property
    def initializing(self) -> bool:
        """Whether the client's initialize waits on the session stream's acknowledgement."""
        return self.initialization is InitializeStep.WAITING

    def _move(self, step: InitializeStep) -> None:
        if step not in _INITIALIZE_MOVES[self.initialization]:
            raise IllegalMove("initialize", self.initialization, step)
        self.initialization = step

    @property
    def log_level(self) -> str | None:
        """The level stamped on each request (logging.mdx, 2026-07-28)."""
        return self._log_level

    @log_level.setter
    def log_level(self, level: str | None) -> None:
        self._log_level = level
        self.stamp = self._restamped()

    def _restamped(self) -> EnvelopeStamp:
        """The envelope for the session as it is now. Everything in it is the session's
        (capabilities and info from initialize, the level from logging/setLevel), so it is
        built when one of those is set, not for every request."""
        return envelope_stamp(client_capabilities=self.client_caps,
                              client_info=self.client_info, log_level=self._log_level)

    @property
    def server_caps(self) -> Message:
        caps = self.discover.get("capabilities") if self.discover else None
        return caps if isinstance(caps, dict) else {}

    def envelope(self, params: Message | None) -> Message:
        """`params` as the modern server needs them: the per-request `_meta` stamped on."""
        return self.stamp.stamp(params)

    def modern_request(self, id: WireId, method: str, params: Message | None) -> Message:
        """The client's request as the modern server needs it: the envelope stamped on."""
        # As envelope.build_request builds it for the modern era, one call less per request.
        return {"jsonrpc": "2.0", "id": id, "method": method, "params": self.stamp.stamp(params)}

    def local_result(self, method: str) -> Message:
        """The result of a request the modern era removed, answered here (§4.1)."""
        result = legacy_result(self.discover or {}, method, self.version,
                               self.ctx.config.bridge_info)
        assert result is not None, method  # only those methods are answered here
        return result

    # From the client ----------------------------------------------------------------------

    def on_client(self, inbound: Inbound) -> None:
        kind = inbound.kind
        message = inbound.message
        if kind == "request":
            self.on_client_request(message)
        elif kind == "notification":
            self._on_client_notification(message)
        elif kind == "response":
            exchange = self.router.take(CLIENT, message)  # an input question (inputs.py)
            if exchange is not None:
                exchange.answered(message, inbound.line)
        else:
            self.ctx.reject(CLIENT, inbound)

    def on_client_request(self, message: Message) -> None:
        method = message["method"]
        local = self._local.get(method)
        if local is not None:
            local(message)
        elif method.startswith("tasks/"):
            self.ctx.fail(CLIENT, message["id"], errors.method_not_served(method))
        else:
            self.forward(message)

    def forward(self, message: Message) -> None:
        params = message.get("params")
        origin = message["id"]
        # Most legacy requests carry no `_meta`, so no progress token: no call for them.
        token = _progress_token(params) if isinstance(params, dict) and "_meta" in params \
            else None
        if token is not None:
            # Only tokens of live requests may carry progress to the client: once a request
            # ends or is cancelled, nothing more for it reaches the client (stdio.mdx).
            self.progress_seen.setdefault((type(token), token), ProgressWatermark(origin))
        method = message["method"]
        call = EnvelopedRequest(self, origin, method, params, token, False)
        observer = self.ctx.observer
        if observer is not None:  # the call counts its result itself (observe.py)
            call.asking = observer.claim(origin)
        # _send_call, inline: one frame less for every request forwarded.
        self.router.forward(SERVER, {"jsonrpc": "2.0", "id": origin, "method": method,
                                     "params": self.stamp.stamp(params)}, call)

    def _send_call(self, origin: WireId, method: str, params: Message | None,
                   token: ProgressToken | None, retried: bool) -> None:
        self.router.forward(SERVER, self.modern_request(origin, method, params),
                            EnvelopedRequest(self, origin, method, params, token, retried))

    def _on_client_notification(self, message: Message) -> None:
        method = message["method"]
        if method == "notifications/cancelled":
            self._cancel(message.get("params") or {})
        elif method == "notifications/initialized":
            self.initialized = True
        elif method == "notifications/roots/list_changed":
            self.inputs.roots_changed()
        else:
            # Modern clients send no other notification (ClientNotification, 2026-07-28).
            self.ctx.debug("notification.dropped", side=CLIENT, method=method)

    def _cancel(self, params: Message) -> None:
        request_id = params.get("requestId")
        if self.inputs.cancel(request_id) or self.listener.cancel(request_id):
            return
        bid = self.router.find(SERVER, request_id)
        if bid is not None:
            reason = params.get("reason")
            exchange = self.router.cancel(SERVER, bid, reason if isinstance(reason, str) else None)
            if isinstance(exchange, EnvelopedRequest):
                self.forget_progress_token(exchange.token)

    # Requests the modern era removed, answered here (TRANSLATION.md §4.1) ------------------

    def _initialize(self, message: Message) -> None:
        if self.initialization is not InitializeStep.NEW:
            self.ctx.fail(CLIENT, message["id"], errors.already_initialized())
            return
        params = message.get("params") or {}
        refusal = self._unservable(params.get("protocolVersion"))
        if refusal is not None:
            self.ctx.fail(CLIENT, message["id"], refusal)
            return
        asked = params.get("protocolVersion")
        # lifecycle.mdx §Version Negotiation: echo a supported version, else the latest.
        self._adopt_client(params, asked if asked in LEGACY_PROTOCOL_VERSIONS
                           else LATEST_LEGACY_VERSION)
        self.initialize_id = message["id"]
        self._move(InitializeStep.WAITING)
        if not self.listener.open_session():
            self.answer_initialize()

    def _adopt_client(self, params: Message, version: str) -> None:
        """The client's initialize params, and the revision it is answered with."""
        self.initialize_params = params
        self.version = version
        self.client_batching = version == BATCHING_VERSION
        caps = params.get("capabilities")
        self.client_caps_legacy = caps if isinstance(caps, dict) else {}
        self.client_caps = client_caps_to_modern(caps)
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else None
        self.stamp = self._restamped()

    def _unservable(self, asked: object) -> errors.OwnError | None:
        """Why the server cannot be offered to a legacy client at all, if it cannot."""
        if self.discover is None and self.contradiction is not None:
            return errors.unservable(f"mcp-rosetta: {self.contradiction}",
                                     {"supported": list(LEGACY_PROTOCOL_VERSIONS),
                                      "requested": asked, "serverAnswered": self.probe_error})
        if self.discover is None:
            supported = _supported_versions(self.probe_error)
            return errors.unservable(
                f"mcp-rosetta: the server speaks only protocol versions {supported}; "
                f"mcp-rosetta speaks {MODERN_PROTOCOL_VERSION} to it",
                {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": asked,
                 "serverSupportedVersions": supported})
        supported = self.discover.get("supportedVersions", [])
        if MODERN_PROTOCOL_VERSION in supported:
            return None
        return errors.unservable(
            f"mcp-rosetta: the server supports {supported}, none of which it can bridge "
            f"(it speaks {MODERN_PROTOCOL_VERSION})",
            {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": asked,
             "serverSupportedVersions": supported})

    def answer_initialize(self) -> None:
        """Reply to the pending initialize, with exactly the capabilities deliverable."""
        result = self.local_result("initialize")
        self.listener.advertise(result["capabilities"])
        self.ctx.reply(CLIENT, self.initialize_id, result)
        self.ctx.log("info", "client.initialized", mode="A", version=self.version,
                     client=(self.client_info or {}).get("name"))
        self.initialize_id = None
        self._move(InitializeStep.ANSWERED)
        self.told = result["capabilities"]

    def _ping(self, message: Message) -> None:
        self.ctx.reply(CLIENT, message["id"], self.local_result("ping"))

    def _set_level(self, message: Message) -> None:
        level = (message.get("params") or {}).get("level")
        if not is_log_level(level):
            self.ctx.fail(CLIENT, message["id"], errors.invalid_log_level(level))
        else:
            # logging.mdx (2026-07-28): the level rides on each request from now on.
            self.log_level = self.client_level = level
            self.ctx.reply(CLIENT, message["id"], self.local_result("logging/setLevel"))

    # From the server ----------------------------------------------------------------------

    # The server dispatch modes A and P share, as the method itself (no frame of its own).
    on_server = from_server

    def on_server_request(self, message: Message) -> None:
        refuse_modern_request(self.ctx, message)

    def on_server_notification(self, message: Message) -> None:
        method = message["method"]
        if method == "notifications/progress":
            self._relay_progress(message)
        elif method == "notifications/message":
            self._relay_log(message)
        elif not self.listener.on_notification(message):
            self.ctx.debug("notification.dropped", side=SERVER, method=method)

    def _relay_log(self, message: Message) -> None:
        """Forward a log at or above the client's level (legacy logging.mdx §Setting Log
        Level), even if the server sent it below the level it was asked for. With no level
        set, legacy lets the server decide what to send."""
        if self.log_level is not None:
            params = message.get("params")
            level = params.get("level") if isinstance(params, dict) else None
            severity = LOG_SEVERITY.get(level, -1) if isinstance(level, str) else -1
            if severity < LOG_SEVERITY[self.log_level]:
                self.ctx.debug("log.dropped", level=level)
                return
        self.ctx.send(CLIENT, message, request=self._log_owner())

    def _log_owner(self) -> WireId | None:
        """The client request a server's log line belongs to. logging.mdx sends it on the
        response stream of the request that set the level, but on stdio a log message names
        no request: with one request at the server it can only be that one's; with several
        the server cannot say which, so neither can the bridge (None). Every request carries
        the same level (the session's), so any of them may have asked for it."""
        owner: Exchange | None = None
        for exchange in self.router.pending[SERVER].values():
            if exchange.awaited:
                if owner is not None:
                    return None
                owner = exchange
        return None if owner is None else served_request(owner)

    def _relay_progress(self, message: Message) -> None:
        """Forward progress, never backwards: a retried round may restart it (§11.8)."""
        params = message.get("params")
        if not isinstance(params, dict):
            return
        token = params.get("progressToken")
        value = params.get("progress")
        if not is_progress_token(token) or not isinstance(value, int | float) \
                or isinstance(value, bool):
            return
        mark = self.progress_seen.get((type(token), token))
        if mark is None or value <= mark.high:
            return
        mark.high = value
        message["params"] = progress_for_legacy(params, self.version)
        self.ctx.send(CLIENT, message, request=mark.origin)

    def forget_progress_token(self, token: ProgressToken | None) -> None:
        if token is not None:
            self.progress_seen.pop((type(token), token), None)

    def relay_result(self, call: EnvelopedRequest, message: Message, result: Message,
                     line: bytes | None) -> None:
        """A complete result, downgraded for the client's revision under the client's id."""
        origin = call.origin
        legacy = result_for_legacy(result, call.method, self.version)
        bid, message["result"], message["id"] = message["id"], legacy, origin
        spliced = _downgraded_line(line, bid, origin, result, legacy) \
            if line is not None and len(line) >= SPLICE_MIN else None
        self.ctx.send(CLIENT, message, spliced, origin)

    def relay_error(self, origin: WireId, method: str, message: Message,
                    call: EnvelopedRequest | None = None) -> None:
        """An error answer, mapped for a legacy client (TRANSLATION.md §3.4). `call`: the
        request it answers, when it may be sent once more (not a round of an input loop)."""
        error = message["error"]
        if error.get("code") == UNSUPPORTED_PROTOCOL_VERSION:
            self._version_refused(origin, method, error, call)
            return
        self.ctx.send(CLIENT, {"jsonrpc": "2.0", "id": origin,
                               "error": error_for_legacy(error, method)}, request=origin)

    def _version_refused(self, origin: WireId, method: str, error: Message,
                         call: EnvelopedRequest | None) -> None:
        """-32022 mid-session: rediscover, and retry once if our version is still there."""
        self.router.issue(SERVER, "server/discover", self.envelope(None), Rediscovery(self))
        supported = _supported_versions(error)
        if MODERN_PROTOCOL_VERSION in supported and call is not None and not call.retried:
            self._send_call(origin, method, call.params, call.token, True)
            return
        self.ctx.fail(CLIENT, origin, errors.version_withdrawn(MODERN_PROTOCOL_VERSION,
                                                               supported))

    def rediscovered(self, result: Message) -> None:
        self.discover = result
        self.ctx.log("info", "server.rediscovered", versions=result["supportedVersions"])

    # Lifecycle ----------------------------------------------------------------------------

    def on_timer(self, key: Deadline) -> None:
        self._on_due[key.kind](key)

    def on_change(self, message: Message) -> None:
        """A change another core heard: a legacy client's session hears its own server."""
        self.ctx.debug("notification.dropped", side=SERVER, method=message.get("method"),
                       reason="relayed changes are mode B's")

    def busy(self) -> bool:
        return self.initializing or bool(self.inputs.calls) or self.router.busy() \
            or self.listener.busy()

    def client_session(self) -> LegacyClientSession | None:
        if self.initialization is not InitializeStep.ANSWERED:
            return None
        return LegacyClientSession(self.initialize_params, self.version, self.told,
                                   initialized=self.initialized, log_level=self.client_level,
                                   subscriptions=self.listener.subscribed())

    def lose_server(self, outage: Outage) -> Handover:
        """Every call in flight (in its input loop or not) gets the error; its questions to
        the client are withdrawn. The session is handed on."""
        session = self.client_session()
        self._fail_all(*outage.error())
        return Handover(session)

    def resume(self, session: ClientSession) -> None:
        """The client's session, at a new modern server: its streams re-opened, and the lists
        it was told change announced, since this server may offer others."""
        assert isinstance(session, LegacyClientSession)
        self._adopt_client(session.initialize, session.version)
        self._move(InitializeStep.ANSWERED)
        self.initialized = session.initialized
        self.told = session.capabilities
        if session.log_level is not None:
            self.log_level = self.client_level = session.log_level
        changes = told_list_changes(session.capabilities)
        self.listener.resume(changes, session.subscriptions,
                             subscribe=has_flag(session.capabilities, "resources", "subscribe"))
        announce(self.ctx, changes)
        self.ctx.log("info", "session.resumed", mode="A", version=self.version,
                     subscriptions=len(session.subscriptions), log_level=session.log_level)

    def fail_pending(self, reason: str, data: Message | None = None) -> None:
        self._fail_all(reason, data)

    def _fail_all(self, reason: str, data: Message | None) -> None:
        self.router.fail_all(reason, data)
        self.inputs.fail_all(reason, data)
        self.listener.fail_all(reason, data)
        if self.initializing:
            self.ctx.fail(CLIENT, self.initialize_id, errors.initialize_lost(reason, data))
            self.initialize_id = None
            self._move(InitializeStep.NEW)


def _progress_token(params: object) -> ProgressToken | None:
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if token is not None and is_progress_token(token) else None


def _downgraded_line(line: bytes, bid: str, origin_id: WireId, result: Message,
                     legacy: Message) -> Spliced | None:
    """The server's answer as its line, when the downgrade only took top-level members out
    of its result (resultType, cache hints, a _meta of modern keys only): those members cut
    and the id spliced; None if anything else changed (splice.py)."""
    removed = removed_members(result, legacy)
    return None if removed is None else without_members(line, bid, origin_id, removed)


def _supported_versions(error: object) -> list[str]:
    """The versions an UnsupportedProtocolVersion error names as supported; [] if none."""
    data = error.get("data") if isinstance(error, dict) else None
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return []
