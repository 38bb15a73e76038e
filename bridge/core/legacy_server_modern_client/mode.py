"""Mode A: a legacy client in front of a modern server; the bridge is a legacy server.

Must not hold the input-request loop or the listen streams itself (inputs.py and
listen.py do); this module answers what the modern era removed, stamps the `_meta`
envelope on every request, and normalizes answers down to the client's revision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bridge.core.capabilities import client_caps_to_modern, has_flag
from bridge.core.context import Context
from bridge.core.downgrade import progress_for_legacy
from bridge.core.envelope import build_request, stamp_envelope
from bridge.core.eras import (
    BATCHING_VERSION,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_LEGACY_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    LEGACY_RESOURCE_NOT_FOUND,
    LOG_SEVERITY,
    METHOD_NOT_FOUND,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_log_level,
    is_progress_token,
)
from bridge.core.events import CLIENT, SERVER
from bridge.core.handover import (
    ClientSession,
    Handover,
    LegacySession,
    announce,
    told_list_changes,
)
from bridge.core.handshake import legacy_result
from bridge.core.jsonrpc import Inbound
from bridge.core.legacy_server_modern_client.inputs import ELIGIBLE, InputLoop
from bridge.core.legacy_server_modern_client.listen import Listener
from bridge.core.normalize import normalize_result
from bridge.core.probe import Probe, is_discover_result
from bridge.core.restarts import Outage
from bridge.core.router import Pending, Router
from bridge.core.splice import SPLICE_MAX, SPLICE_MIN, removed_members, without_members

Message = dict[str, Any]


class ModeA:
    """The legacy server a legacy client sees, made of a modern server."""

    mode = "A"
    resuming = False  # a modern server needs no handshake: the session is re-opened at once

    def __init__(self, ctx: Context, probe: Probe) -> None:
        self.ctx = ctx
        self.router = Router(ctx)
        self.discover = probe.discover
        self.probe_error = probe.error
        self.contradiction = probe.contradiction  # server_era pinned to modern, wrongly
        self.version = LATEST_LEGACY_VERSION
        self.initialize_id: Any = None  # set while initialize waits for the listen ack
        self.initialize_params: Message = {}
        self.answered = False  # initialize was answered: the client's session is settled
        self.initialized = False  # the client sent notifications/initialized
        self.told: Message = {}  # the capabilities the client's InitializeResult named
        self.client_caps_legacy: dict[str, Any] = {}
        self.client_caps: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.client_level: str | None = None  # set by the client's logging/setLevel
        self.log_level = ctx.config.default_log_level  # the level stamped on each request
        self.progress_seen: dict[Any, float] = {}
        self._line: bytes | None = None  # the line of the server's answer being handled
        self.inputs = InputLoop(self)
        self.listener = Listener(self)
        self._local: dict[str, Callable[[Message], None]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self.listener.subscribe,
            "resources/unsubscribe": self.listener.unsubscribe,
        }
        self._answers: dict[str, Callable[[Pending, Message], None]] = {
            "forward": self._on_forward_answer,
            "round": self.inputs.on_round_answer,
            "listen": self.listener.on_closed,
            "discover": self._on_rediscover,
        }

    @property
    def client_batching(self) -> bool:
        return self.version == BATCHING_VERSION

    @property
    def server_caps(self) -> dict[str, Any]:
        caps = self.discover.get("capabilities") if self.discover else None
        return caps if isinstance(caps, dict) else {}

    def envelope(self, params: Message | None) -> Message:
        """`params` as the modern server needs them: the per-request `_meta` stamped on."""
        return stamp_envelope(params, client_capabilities=self.client_caps,
                              client_info=self.client_info, log_level=self.log_level)

    def modern_request(self, id: Any, method: str, params: Message | None) -> Message:
        """The client's request as the modern server needs it: the envelope stamped on."""
        return build_request(id, method, params, era="modern", client_info=self.client_info,
                             client_capabilities=self.client_caps, log_level=self.log_level)

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
            method = message["method"]
            local = self._local.get(method)
            if local is not None:
                local(message)
            elif method.startswith("tasks/"):
                # Tasks are not bridged and never advertised (TRANSLATION.md §4.3).
                self.ctx.reply_error(CLIENT, message["id"], METHOD_NOT_FOUND,
                                     f"Method not found: {method}")
            else:
                self.forward(message)
        elif kind == "notification":
            self._on_client_notification(message)
        elif kind == "response":
            row = self.router.take(CLIENT, message)
            if row is not None:
                self.inputs.on_client_answer(row, message)
        else:
            self.ctx.reject(CLIENT, inbound)

    def forward(self, message: Message) -> None:
        params = message.get("params")
        token = _progress_token(params)
        if token is not None:
            # Only tokens of live requests may carry progress to the client: once a request
            # ends or is cancelled, nothing more for it reaches the client (stdio.mdx).
            self.progress_seen.setdefault((type(token), token), float("-inf"))
        self.router.forward(SERVER, self.modern_request(message["id"], message["method"], params),
                            data=(params, token, False))

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
        if self.inputs.cancel(request_id):
            return
        bid = self.router.find(SERVER, request_id)
        if bid is not None:
            reason = params.get("reason")
            row = self.router.cancel(SERVER, bid, reason if isinstance(reason, str) else None)
            if row is not None:
                self._forget_progress(row)

    # Requests the modern era removed, answered here (TRANSLATION.md §4.1) ------------------

    def _initialize(self, message: Message) -> None:
        if self.initialize_id is not None or self.answered:
            self.ctx.reply_error(CLIENT, message["id"], INVALID_REQUEST, "Already initialized")
            return
        params = message.get("params") or {}
        refusal = self._unservable(params.get("protocolVersion"))
        if refusal is not None:
            self.ctx.reply_error(CLIENT, message["id"], INVALID_PARAMS, *refusal)
            return
        asked = params.get("protocolVersion")
        # lifecycle.mdx §Version Negotiation: echo a supported version, else the latest.
        self._adopt_client(params, asked if asked in LEGACY_PROTOCOL_VERSIONS
                           else LATEST_LEGACY_VERSION)
        self.initialize_id = message["id"]
        if not self.listener.open_session():
            self.answer_initialize()

    def _adopt_client(self, params: Message, version: str) -> None:
        """The client's initialize params, and the revision it is answered with."""
        self.initialize_params = params
        self.version = version
        caps = params.get("capabilities")
        self.client_caps_legacy = caps if isinstance(caps, dict) else {}
        self.client_caps = client_caps_to_modern(caps)
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else None

    def _unservable(self, asked: Any) -> tuple[str, Any] | None:
        """Why the server cannot be offered to a legacy client at all, if it cannot."""
        if self.discover is None and self.contradiction is not None:
            return (f"mcp-rosetta: {self.contradiction}",
                    {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": asked,
                     "serverAnswered": self.probe_error})
        if self.discover is None:
            supported = _supported_versions(self.probe_error)
            return (f"mcp-rosetta: the server speaks only protocol versions {supported}; "
                    f"mcp-rosetta speaks {MODERN_PROTOCOL_VERSION} to it",
                    {"supported": list(LEGACY_PROTOCOL_VERSIONS), "requested": asked,
                     "serverSupportedVersions": supported})
        supported = self.discover.get("supportedVersions", [])
        if MODERN_PROTOCOL_VERSION in supported:
            return None
        return (f"mcp-rosetta: the server supports {supported}, none of which it can bridge "
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
        self.answered = True
        self.told = result["capabilities"]

    def _ping(self, message: Message) -> None:
        self.ctx.reply(CLIENT, message["id"], self.local_result("ping"))

    def _set_level(self, message: Message) -> None:
        level = (message.get("params") or {}).get("level")
        if not is_log_level(level):
            self.ctx.reply_error(CLIENT, message["id"], INVALID_PARAMS,
                                 f"Invalid log level: {level!r}")
        else:
            # logging.mdx (2026-07-28): the level rides on each request from now on.
            self.log_level = self.client_level = level
            self.ctx.reply(CLIENT, message["id"], self.local_result("logging/setLevel"))

    # From the server ----------------------------------------------------------------------

    def on_server(self, inbound: Inbound) -> None:
        kind = inbound.kind
        message = inbound.message
        if kind == "response":
            row = self.router.take(SERVER, message)
            if row is not None:
                self._line = inbound.line
                self._answers[row.purpose](row, message)
                self._line = None
        elif kind == "notification":
            self._on_server_notification(message)
        elif kind == "request":
            # stdio.mdx: "The server MUST NOT write JSON-RPC requests to stdout."
            self.ctx.log("warning", "server.request_refused", method=message["method"])
            self.ctx.reply_error(SERVER, message["id"], METHOD_NOT_FOUND,
                                 "Modern servers must not send requests on stdio")
        else:
            self.ctx.log("warning", "message.invalid", side=SERVER, reason=inbound.reason)

    def _on_server_notification(self, message: Message) -> None:
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
        self.ctx.send(CLIENT, message)

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
        key = (type(token), token)
        last = self.progress_seen.get(key)
        if last is None or value <= last:
            return
        self.progress_seen[key] = value
        message["params"] = progress_for_legacy(params, self.version)
        self.ctx.send(CLIENT, message)

    def forget_progress_token(self, token: Any) -> None:
        if token is not None:
            self.progress_seen.pop((type(token), token), None)

    def _forget_progress(self, row: Pending) -> None:
        data = row.data
        if isinstance(data, tuple) and data[1] is not None:  # most requests want no progress
            self.forget_progress_token(data[1])

    def _on_forward_answer(self, row: Pending, message: Message) -> None:
        result = message.get("result")
        kind = result.get("resultType", "complete") if result is not None else None
        if kind == "input_required" and row.method in ELIGIBLE and result is not None:
            self.inputs.begin(row, result)  # progress keeps its high-water mark over rounds
            return
        self._forget_progress(row)
        if result is None:
            self.relay_error(row, message)
            return
        if kind != "complete":
            # input_required only answers tools/call, resources/read, prompts/get (mrtr.mdx).
            self.ctx.reply_error(CLIENT, row.origin_id, INTERNAL_ERROR,
                                 f"mcp-rosetta: the server answered {row.method} with "
                                 f"resultType {kind!r}, which this method cannot carry")
            return
        legacy = normalize_result(result, to_era="legacy", method=row.method,
                                  version=self.version)
        bid, message["result"], message["id"] = message["id"], legacy, row.origin_id
        line = self._line
        if line is not None and SPLICE_MIN <= len(line) <= SPLICE_MAX:
            self.ctx.send(CLIENT, message, _downgraded_line(line, bid, row.origin_id, result,
                                                            legacy))
        else:
            self.ctx.send(CLIENT, message)

    def relay_error(self, row: Pending, message: Message) -> None:
        """An error answer, mapped for a legacy client (TRANSLATION.md §3.4)."""
        error = message["error"]
        if error.get("code") == UNSUPPORTED_PROTOCOL_VERSION and self._retry_version(row, error):
            return
        if row.method == "resources/read" and _means_not_found(error):
            error = {**error, "code": LEGACY_RESOURCE_NOT_FOUND}
        self.ctx.send(CLIENT, {"jsonrpc": "2.0", "id": row.origin_id, "error": error})

    def _retry_version(self, row: Pending, error: Message) -> bool:
        """-32022 mid-session: rediscover, and retry once if our version is still there."""
        self.router.issue(SERVER, "server/discover", self.envelope(None), "discover")
        supported = _supported_versions(error)
        params, token, retried = row.data if isinstance(row.data, tuple) else (None, None, True)
        if MODERN_PROTOCOL_VERSION in supported and not retried:
            self.router.forward(SERVER, self.modern_request(row.origin_id, row.method, params),
                                data=(params, token, True))
            return True
        self.ctx.reply_error(CLIENT, row.origin_id, INTERNAL_ERROR,
                             f"mcp-rosetta: the server no longer supports "
                             f"{MODERN_PROTOCOL_VERSION}; it supports {supported}",
                             {"supported": supported})
        return True

    def _on_rediscover(self, row: Pending, message: Message) -> None:
        result = message.get("result")
        if is_discover_result(result):
            self.discover = result
            self.ctx.log("info", "server.rediscovered", versions=result["supportedVersions"])

    # Lifecycle ----------------------------------------------------------------------------

    def on_timer(self, key: Any) -> None:
        if key[0] == "timeout":
            row = self.router.expire(key[1])
            if row is not None:
                self._forget_progress(row)
        elif key[0] == "mrtr":
            self.inputs.on_timer(key)
        elif key[0] == "listen":
            self.listener.on_timer(key)

    def busy(self) -> bool:
        return self.initialize_id is not None or bool(self.inputs.calls) or self.router.busy() \
            or self.listener.busy()

    def client_session(self) -> LegacySession | None:
        if not self.answered:
            return None
        return LegacySession(self.initialize_params, self.version, self.told,
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
        assert isinstance(session, LegacySession)
        self._adopt_client(session.initialize, session.version)
        self.answered, self.initialized = True, session.initialized
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
        if self.initialize_id is not None:
            self.ctx.reply_error(CLIENT, self.initialize_id, INTERNAL_ERROR, reason, data)
            self.initialize_id = None


def _progress_token(params: Any) -> Any:
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if token is not None and is_progress_token(token) else None


def _downgraded_line(line: bytes, bid: str, origin_id: Any, result: Message,
                     legacy: Message) -> bytes | None:
    """The server's answer as its line, when the downgrade only took top-level members out
    of its result (resultType, cache hints, a _meta of modern keys only): those members cut
    and the id spliced; None if anything else changed (splice.py)."""
    removed = removed_members(result, legacy)
    return None if removed is None else without_members(line, bid, origin_id, removed)


def _supported_versions(error: Any) -> list[str]:
    """The versions an UnsupportedProtocolVersion error names as supported; [] if none."""
    data = error.get("data") if isinstance(error, dict) else None
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return []


def _means_not_found(error: Message) -> bool:
    # server/resources.mdx (2026-07-28) moved "not found" to -32602; legacy clients were told
    # -32002. -32602 also means bad params, so only rewrite what says it is a missing resource.
    if error.get("code") != INVALID_PARAMS:
        return False
    data = error.get("data")
    return (isinstance(data, dict) and "uri" in data) or "not found" in str(
        error.get("message", "")).lower()
