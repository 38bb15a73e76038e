"""The bridge's lifecycle: era detection, the mode it picks, and every event routed to it.

Must not translate messages itself: once both eras are known a mode handler (P, A or B)
owns the traffic. `handle` never raises; a bug is logged as `bridge.error`, not a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from bridge.core.batch import Batches
from bridge.core.config import CoreConfig
from bridge.core.context import Context, counter_ids
from bridge.core.eras import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LATEST_LEGACY_VERSION,
    Era,
    legacy_request,
)
from bridge.core.events import (
    CLIENT,
    SERVER,
    Action,
    ChildExited,
    ChildStarted,
    Event,
    MessageReceived,
    MessageTooLarge,
    NotifyReady,
    PeerClosed,
    RestartChild,
    ShutdownRequested,
    Stop,
    TimerFired,
)
from bridge.core.jsonrpc import Inbound, parse_inbound, refused
from bridge.core.limits import settle
from bridge.core.probe import Probe
from bridge.core.salvage import top_level

EX_OK = 0
EX_UNAVAILABLE = 69
# The kinds a mode handler takes as they come (not a batch, nor a refused message).
_SINGLE = frozenset({"request", "notification", "response", "invalid"})


class Handler(Protocol):
    mode: str

    @property
    def client_batching(self) -> bool: ...
    def on_client(self, inbound: Inbound) -> None: ...
    def on_server(self, inbound: Inbound) -> None: ...
    def on_timer(self, key: Any) -> None: ...
    def busy(self) -> bool: ...
    def fail_pending(self, reason: str) -> None: ...


class Bridge:
    """One bridge between one client and one server process. Feed it events, run its actions."""

    def __init__(self, config: CoreConfig | None = None, *,
                 mint_id: Callable[[], str] | None = None, secret: bytes = b"") -> None:
        self.ctx = Context(config or CoreConfig(), mint_id or counter_ids())
        self.secret = secret
        self.client_era: Era | None = None
        self.handler: Handler | None = None
        self.probe = Probe(self.ctx)
        self.batches = Batches()
        self._queue: list[Inbound] = []
        self._stopped = False
        self._client_closed = False
        self._closing: float | None = None  # set once asked to stop: the drain's length
        self._restarts = 0

    @property
    def mode(self) -> str | None:
        return self.handler.mode if self.handler is not None else None

    def next_deadline(self) -> float | None:
        return self.ctx.timers.next_deadline()

    def handle(self, event: Event, now: float) -> list[Action]:
        ctx = self.ctx
        ctx.now = now
        actions: list[Action] = []
        ctx.actions = actions
        if self._stopped:
            return actions
        try:
            self._dispatch(event)
        except Exception as exc:  # a bug must cost one message, not the bridge
            ctx.log("error", "bridge.error", error=repr(exc), during=type(event).__name__)
        if self._closing is not None and not self._stopped:
            self._drain_or_stop()
        if self.batches.open:
            self.batches.collect(actions)
        return actions

    # Events -----------------------------------------------------------------------------

    def _dispatch(self, event: Event) -> None:
        if type(event) is MessageReceived:
            if event.side == CLIENT:
                self._on_client_line(event.message)
            else:
                self._on_server(parse_inbound(event.message))
        elif type(event) is TimerFired:
            self._on_timers()
        elif type(event) is MessageTooLarge:
            self._on_too_large(event)
        elif type(event) is ChildStarted:
            self._on_child_started()
        elif type(event) is ChildExited:
            self._on_child_exited(event.code)
        elif type(event) is PeerClosed:
            self._on_peer_closed(event.side)
        elif type(event) is ShutdownRequested:
            self._on_shutdown_requested(event.grace)

    def _on_client_line(self, line: bytes) -> None:
        handler = self.handler
        inbound = parse_inbound(line, batching=handler is not None and handler.client_batching)
        if handler is not None and inbound.kind in _SINGLE and not self.batches.open \
                and self._closing is None:
            handler.on_client(inbound)  # nearly every message: one call, no detour
        else:
            self._on_client(inbound)

    def _on_client(self, inbound: Inbound, refused_as: str = "message.too_deep") -> None:
        """Any message from the client; `refused_as` names the log event of a refused one."""
        kind = inbound.kind
        if kind == "batch":
            self._on_client_batch(inbound)
            return
        if kind == "refused":
            stand_in = settle(self.ctx, CLIENT, inbound, refused_as)
            if stand_in is None:
                return
            inbound = stand_in
        elif kind == "notification" and self.batches.open:
            self.batches.on_notification(inbound.message)
        if self._closing is not None and inbound.kind == "request":
            self._refuse_while_closing(inbound)
        elif self.handler is not None:
            self.handler.on_client(inbound)
        else:
            self._before_mode(inbound)

    def _on_client_batch(self, inbound: Inbound) -> None:
        assert inbound.items is not None
        for item in self.batches.start(inbound.items, self.ctx):
            self._on_client(item)

    def _on_server(self, inbound: Inbound, refused_as: str = "message.too_deep") -> None:
        """Any message from the server; `refused_as` names the log event of a refused one."""
        if inbound.kind == "refused":
            stand_in = settle(self.ctx, SERVER, inbound, refused_as)
            if stand_in is None:
                return
            inbound = stand_in
        if self.probe.waiting:
            self.probe.on_server(inbound)
            if self.probe.era is not None:
                self._settled()
        elif self.handler is not None:
            if self.probe.is_late_answer(inbound):
                self.ctx.log("info", "probe.late_answer")
            else:
                self.handler.on_server(inbound)
        else:
            self.ctx.log("info", "message.dropped", side=SERVER, reason="no client yet")

    def _on_too_large(self, event: MessageTooLarge) -> None:
        """A line the shell discarded as too long: answered as far as its first bytes allow."""
        inbound = refused(top_level(event.head),
                          f"longer than {event.limit} bytes (mcp-rosetta's max_message_bytes)")
        if event.side == CLIENT:
            self._on_client(inbound, "message.too_large")
        else:
            self._on_server(inbound, "message.too_large")

    def _on_timers(self) -> None:
        for key in self.ctx.timers.pop_due(self.ctx.now):
            if key == Probe.TIMER:
                self.probe.on_timeout()
                self._settled()
            elif key == self.DRAIN:
                self._stop(EX_OK, "the client closed its input" if self._client_closed
                           else "mcp-rosetta is shutting down")
            elif self.handler is not None:
                self.handler.on_timer(key)

    def _on_child_started(self) -> None:
        self.probe.start(restarted=self._restarts > 0)
        if self.probe.era is not None:
            self._settled()

    def _on_child_exited(self, code: int) -> None:
        self.ctx.log("warning" if code else "info", "child.exited", code=code)
        if self.probe.waiting and self._restarts == 0:
            # stdio.mdx: some legacy servers exit on an unexpected first message.
            self._restarts += 1
            self.probe.abandon()
            self.ctx.actions.append(RestartChild())
            return
        self._stop(EX_UNAVAILABLE, f"the server exited (code {code})")

    def _on_peer_closed(self, side: str) -> None:
        if side == CLIENT:
            self.ctx.log("info", "client.closed")
            self._client_closed = True
            # handle() drains what the client is owed, then stops.
            self._closing = self.ctx.config.drain_timeout
        elif not self.probe.waiting:
            self._stop(EX_UNAVAILABLE, "the server closed its output")

    # Era detection ------------------------------------------------------------------------

    def _before_mode(self, inbound: Inbound) -> None:
        """A client message before the mode is known: learn the client's era, or queue."""
        if self.client_era is None and not self._learn_client_era(inbound):
            return
        self._queue.append(inbound)
        self._choose_mode()

    def _learn_client_era(self, inbound: Inbound) -> bool:
        message = inbound.message
        if inbound.kind == "invalid":
            self.ctx.reject(CLIENT, inbound)
            return False
        if inbound.kind != "request":
            self.ctx.log("info", "message.dropped", side=CLIENT, reason="before the first request")
            return False
        # Until initialize negotiates one, a legacy client is taken to speak the latest revision.
        era: Era = "modern" if legacy_request(LATEST_LEGACY_VERSION, message) is None else "legacy"
        if era == "legacy" and message["method"] != "initialize":
            if message["method"] == "ping":  # lifecycle.mdx: ping is allowed before initialize
                self.ctx.reply(CLIENT, message["id"], {})
            else:
                self.ctx.reply_error(
                    CLIENT, message["id"], INVALID_REQUEST,
                    "The first request must be initialize (legacy MCP) or carry "
                    '_meta["io.modelcontextprotocol/protocolVersion"] (MCP 2026-07-28)')
            return False
        self.client_era = era
        self.ctx.log("info", "era.detected", side=CLIENT, era=era)
        return True

    def _settled(self) -> None:
        """The server's era is known: the bridge is ready to serve (systemd READY=1)."""
        if self._restarts == 0:
            self.ctx.actions.append(NotifyReady())
        self._choose_mode()

    def _choose_mode(self) -> None:
        server_era = self.probe.era
        if self.handler is not None or self.client_era is None or server_era is None:
            return
        # Each mode is imported when chosen: a bridge only ever runs one, and importing the
        # others would add to every start-up (issue 6).
        if self.client_era == server_era:
            from bridge.core.passthrough import PassThrough

            self.handler = PassThrough(self.ctx, server_era)
        elif self.client_era == "legacy":
            from bridge.core.mode_a import ModeA

            self.handler = ModeA(self.ctx, self.probe)
        else:
            from bridge.core.mode_b import ModeB

            self.handler = ModeB(self.ctx, self.probe, self.secret)
        self.ctx.log("info", "mode.chosen", mode=self.handler.mode,
                     client_era=self.client_era, server_era=server_era)
        queued, self._queue = self._queue, []
        for inbound in queued:
            self.handler.on_client(inbound)

    # Shutdown -----------------------------------------------------------------------------

    DRAIN = ("drain",)

    def _on_shutdown_requested(self, grace: float) -> None:
        if grace <= 0:
            self._stop(EX_OK, "mcp-rosetta is shutting down")
        elif self._closing is None:
            self.ctx.log("info", "bridge.closing", grace_s=grace)
            self._closing = grace

    def _refuse_while_closing(self, request: Inbound) -> None:
        """A request that arrives while the bridge winds down gets an error, not the server;
        what the client answers or cancels still reaches the calls that are owed."""
        self.ctx.reply_error(CLIENT, request.message["id"], INTERNAL_ERROR,
                             "mcp-rosetta is shutting down", {"source": "mcp-rosetta"})

    def _drain_or_stop(self) -> None:
        """Once closing: stop when nothing is owed, or when the drain's time runs out."""
        owed = bool(self._queue) or self.probe.waiting or (
            self.handler is not None and self.handler.busy())
        if not owed:
            self._stop(EX_OK, "the client closed its input" if self._client_closed
                       else "mcp-rosetta is shutting down")
        elif self.DRAIN not in self.ctx.timers:
            assert self._closing is not None
            self.ctx.schedule(self.DRAIN, self._closing)

    def _stop(self, code: int, reason: str) -> None:
        """Answer every request still waiting (exactly one response each), then stop."""
        if self.handler is not None:
            self.handler.fail_pending(reason)
        for inbound in self._queue:
            if inbound.kind == "request":
                self.ctx.reply_error(CLIENT, inbound.message["id"], -32603, reason,
                                     {"source": "mcp-rosetta"})
        self._queue = []
        self.ctx.actions.append(Stop(code))
        self._stopped = True
