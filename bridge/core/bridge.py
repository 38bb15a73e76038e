"""The bridge's lifecycle: every event routed, the client's era learnt, the mode chosen once
both eras are known, and the session's end (a shutdown, the client leaving, a server that
never served).

Must not translate messages itself: once both eras are known a mode handler (P, A or B)
owns the traffic, and a handler made for a restarted server re-opens the client's session
from the record the lost one handed over. Nor does it keep the server's life (server_life.py:
its state, record, restart budget and deadlines) or the legacy verdict a late answer may
overturn (verdict.py): it moves those machines and does what they say to the handler and the
client's messages. `handle` never raises; a bug is logged as `bridge.error`, not a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from bridge.core import errors
from bridge.core.batch import Batches
from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.context import Context, counter_ids
from bridge.core.eras import LATEST_LEGACY_VERSION, Era, legacy_request
from bridge.core.events import (
    CLIENT,
    SERVER,
    Action,
    ChildExited,
    ChildStarted,
    Event,
    MessageReceived,
    MessageTooLarge,
    PeerClosed,
    Send,
    ShutdownRequested,
    Stop,
    TimerFired,
)
from bridge.core.handler import Handler, Mode
from bridge.core.handover import ClientSession, open_requests
from bridge.core.jsonrpc import Inbound, parse_inbound, too_long
from bridge.core.limits import event_for, settle
from bridge.core.probe import PROBE_WAITING, Probe, ProbeDue
from bridge.core.provisional import Overturn
from bridge.core.record import record
from bridge.core.restarts import Outage
from bridge.core.server_life import RECORD_SERVED, ServerDue, ServerLife
from bridge.core.server_life import ServerState as ServerState  # Bridge.server_state's type
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers
from bridge.core.verdict import Verdict
from bridge.core.waiting import HeldDue, Waiting

if TYPE_CHECKING:
    from bridge.core.lane import Lane

EX_OK = 0
EX_UNAVAILABLE = 69
# The kinds a mode handler takes as they come (not a batch, nor a refused message).
_SINGLE = frozenset({"request", "notification", "response", "invalid"})


class SessionPhase(Enum):
    """The session, as the lifecycle sees it."""

    OPEN = "serving the client"
    CLOSING = "asked to stop with a grace: what is owed is still answered, nothing new taken"
    DRAINING = "the client closed its input: what it is owed, then the end"
    FAILED = "the server never served: the client's first request is told why, then the end"
    STOPPED = "stopped: later events are ignored"


_PHASE_MOVES: dict[SessionPhase, frozenset[SessionPhase]] = {
    SessionPhase.OPEN: frozenset({SessionPhase.CLOSING, SessionPhase.DRAINING,
                                  SessionPhase.FAILED, SessionPhase.STOPPED}),
    SessionPhase.CLOSING: frozenset({SessionPhase.DRAINING, SessionPhase.STOPPED}),
    SessionPhase.DRAINING: frozenset({SessionPhase.STOPPED}),
    # A signal with a grace while failed: nothing is owed, so the drain stops at once.
    SessionPhase.FAILED: frozenset({SessionPhase.CLOSING, SessionPhase.STOPPED}),
    SessionPhase.STOPPED: frozenset(),
}
# Read on every event (an Enum member read through its class costs several times a global's).
PHASE_STOPPED: Final = SessionPhase.STOPPED


class Intake(Enum):
    """Where the client's messages go (but for a batch's, a refused one, or a request while
    closing)."""

    HELD = "held (waiting.py): no handler can serve yet, or the server restarts"
    RESUMING = "held: the handler is still re-opening the client's session at a new server"
    HANDLER = "to the handler"


_INTAKE_MOVES: dict[Intake, frozenset[Intake]] = {
    Intake.HELD: frozenset({Intake.RESUMING, Intake.HANDLER}),
    Intake.RESUMING: frozenset({Intake.HANDLER, Intake.HELD}),
    Intake.HANDLER: frozenset({Intake.HELD}),
}
# Read for each client message that takes the long way.
INTAKE_HANDLER: Final = Intake.HANDLER


class LifecycleDue(Enum):
    """The session's own deadlines (owner None: each exists once)."""

    FAILED = "the wait for a first request after a failed start"
    DRAIN = "the drain"


@record(frozen=True)
class Failure:
    """Why a server that never served cannot be used: every request is answered with it."""

    reason: str
    data: Message


_FAILED: Final = Deadline(None, LifecycleDue.FAILED)
_DRAIN: Final = Deadline(None, LifecycleDue.DRAIN)


class Bridge:
    """One bridge between one client and one server process. Feed it events, run its actions."""

    def __init__(self, config: CoreConfig | None = None, *,
                 mint_id: Callable[[], str] | None = None, secret: bytes = b"") -> None:
        self.ctx = Context(config or CoreConfig(), mint_id or counter_ids())
        self.secret = secret
        self.client_era: Era | None = None
        self.handler: Handler | None = None
        # The lifecycle's own timers (the probe, the drain, restarts, held requests) outlive
        # any mode handler; ctx.timers are the handler's, and go with it.
        self._timers = Timers()
        self.probe = Probe(self.ctx, self._timers)
        self.batches = Batches()
        self._waiting = Waiting(self.ctx, self._timers)
        self.life = ServerLife(self.ctx, self._timers)
        self.verdict = Verdict(self.ctx)
        self._phase = SessionPhase.OPEN
        self._failure: Failure | None = None  # set with SessionPhase.FAILED
        self._grace = 0.0  # the drain's length when CLOSING (DRAINING: drain_timeout)
        self._roots_told = False
        self._session: ClientSession | None = None  # handed over, until a handler resumes it
        self._lost_mode: Mode | None = None
        # HANDLER exactly while `handler` is set and has what was held (a resuming handler's
        # are released after the event in which it is done).
        self._intake = Intake.HELD
        # The hot path's one test, kept by `_route`: whether client messages take the long
        # way (not OPEN, held for a resuming handler, or a provisional verdict keeping a copy
        # of each: `_route` runs after every move of the verdict).
        self._detour = False
        # The handler's one-step route (lane.py), while there is a handler.
        self._lane: Lane | None = None
        # By the deadline's kind; each handler takes its owner (a held request's number, or
        # None for the deadlines that exist once).
        self._on_due: dict[Enum, Callable[[Any], None]] = {
            ProbeDue.ANSWER: self._probe_timed_out,
            ServerDue.RESTART: self._backoff_over,
            ServerDue.EXIT_WAIT: self._exit_unknown,
            LifecycleDue.FAILED: self._failed_wait_over,
            LifecycleDue.DRAIN: self._drain_over,
            HeldDue.REQUEST_TIMEOUT: self._waiting.expire,
        }

    @property
    def mode(self) -> Mode | None:
        return self.handler.mode if self.handler is not None else None

    @property
    def server_state(self) -> ServerState:
        """Where the server process is (the HTTP front's /readyz reads it)."""
        return self.life.state

    @property
    def has_served(self) -> bool:
        """Whether a server of this session has spoken: a start after it is a restart."""
        return self.life.served

    def _move_phase(self, to: SessionPhase) -> None:
        if to not in _PHASE_MOVES[self._phase]:
            raise IllegalMove("session", self._phase, to)
        self._phase = to
        self._route()

    def _move_intake(self, to: Intake) -> None:
        if to not in _INTAKE_MOVES[self._intake]:
            raise IllegalMove("intake", self._intake, to)
        self._intake = to
        self._route()

    def _route(self) -> None:
        """Keep `_detour` in step with what it caches."""
        self._detour = self._phase is not SessionPhase.OPEN \
            or self._intake is Intake.RESUMING or self.verdict.provisional is not None

    @property
    def _closing(self) -> bool:
        """Asked to stop, or the client closed its input: the drain runs after each event."""
        return self._phase is SessionPhase.CLOSING or self._phase is SessionPhase.DRAINING

    def _stopped(self) -> bool:
        return self._phase is PHASE_STOPPED

    def next_deadline(self) -> float | None:
        own, mode = self._timers.next_deadline(), self.ctx.timers.next_deadline()
        if own is None or mode is None:
            return mode if own is None else own
        return min(own, mode)

    def handle(self, event: Event, now: float) -> list[Action]:
        ctx = self.ctx
        ctx.now = now
        actions: list[Action] = []
        ctx.actions = actions
        if self._phase is PHASE_STOPPED:
            return actions
        try:
            if type(event) is MessageReceived:  # nearly every event: no frame in between
                lane = self._lane
                if lane is not None and not self._detour and not self.batches.open:
                    # The steady state: the handler's lane routes what the full path would,
                    # with no step of the full path's in between, or hands back what it does
                    # not take. A server's line also waits for no abandoned id and no probe.
                    if event.side == CLIENT:
                        inbound = lane.from_client(event.message)
                        if inbound is not None:
                            self._to_handler(inbound)
                    elif self.verdict.abandoned or self.probe.state is PROBE_WAITING:
                        self._on_server(parse_inbound(event.message))
                    else:
                        inbound = lane.from_server(event.message, self.probe.id)
                        if inbound is None:
                            self.life.record = RECORD_SERVED
                        else:
                            self._on_server(inbound)
                elif event.side == CLIENT:
                    self._on_client_line(event.message)
                else:
                    self._on_server(parse_inbound(event.message))
            else:
                self._dispatch(event)
        except Exception as exc:  # a bug must cost one message, not the bridge
            ctx.log("error", "bridge.error", error=repr(exc), during=type(event).__name__)
        if self._detour and not self._stopped():
            self._after_detour()
            provisional = self.verdict.provisional
            if provisional is not None:
                provisional.note_answers(actions)
        if self.batches.open:
            self.batches.collect(actions)
        return actions

    # Events -----------------------------------------------------------------------------

    def _dispatch(self, event: Event) -> None:
        """Every event but a message (handle takes those itself)."""
        if type(event) is TimerFired:
            self._on_timers()
        elif type(event) is MessageTooLarge:
            self._on_too_large(event)
        elif type(event) is ChildStarted:
            self._on_child_started()
        elif type(event) is ChildExited:
            self.ctx.log("warning" if event.code else "info", "child.exited", code=event.code)
            self._on_child_exited(event)
        elif type(event) is PeerClosed:
            self._on_peer_closed(event.side, event.gone)
        elif type(event) is ShutdownRequested:
            self._on_shutdown_requested(event.grace)

    def _on_client_line(self, line: bytes) -> None:
        handler = self.handler
        inbound = parse_inbound(line, batching=handler is not None and handler.client_batching)
        if handler is not None and inbound.kind in _SINGLE and not self.batches.open \
                and not self._detour:
            handler.on_client(inbound)  # nearly every message: one call, no detour
        else:
            self._on_client(inbound)

    def _to_handler(self, inbound: Inbound) -> None:
        """A client message the lane handed back (as `_on_client_line` routes it)."""
        if inbound.kind in _SINGLE:
            assert self.handler is not None
            self.handler.on_client(inbound)
        else:
            self._on_client(inbound)

    def _on_client(self, inbound: Inbound, refused_as: str | None = None) -> None:
        """Every message from the client; `refused_as` names the log event of a refused one."""
        kind = inbound.kind
        if kind == "batch":
            self._on_client_batch(inbound)
            return
        if kind == "refused":
            stand_in = settle(self.ctx, CLIENT, inbound, refused_as or event_for(inbound))
            if stand_in is None:
                return
            inbound = stand_in
        elif kind == "notification" and self.batches.open:
            self.batches.on_notification(inbound.message)
        if self._closing and inbound.kind == "request":
            self._refuse_while_closing(inbound)
        elif self._intake is INTAKE_HANDLER:
            assert self.handler is not None
            if self.verdict.provisional is not None:
                self.verdict.keep(inbound)
                self._route()
            self.handler.on_client(inbound)
        else:
            self._before_mode(inbound)

    def _on_client_batch(self, inbound: Inbound) -> None:
        assert inbound.items is not None
        for item in self.batches.start(inbound.items, self.ctx):
            self._on_client(item)

    def _on_server(self, inbound: Inbound, refused_as: str | None = None) -> None:
        """Every message from the server; `refused_as` names the log event of a refused one."""
        if inbound.kind == "refused":
            stand_in = settle(self.ctx, SERVER, inbound, refused_as or event_for(inbound))
            if stand_in is None:
                return
            inbound = stand_in
        if inbound.kind != "invalid":
            self.life.record = RECORD_SERVED
        if self.verdict.abandoned and self.verdict.absorbed(inbound):
            return
        if self.probe.state is PROBE_WAITING:
            self.probe.on_server(inbound)
            if self.probe.era is not None:
                self._settled()
        elif self.verdict.provisional is not None and inbound.kind == "response" \
                and self._overturned(inbound):
            return
        elif self.handler is not None:
            probe_id = self.probe.id  # Probe.is_late_answer, inline: every server message
            if probe_id is not None and inbound.kind == "response" \
                    and inbound.message["id"] == probe_id:
                self.ctx.log("info", "probe.late_answer")
            else:
                self.handler.on_server(inbound)
        else:
            self.ctx.log("info", "message.dropped", side=SERVER, reason="no client yet")

    def _on_too_large(self, event: MessageTooLarge) -> None:
        """A line the shell discarded as too long: answered as far as its first and last bytes
        allow (writers put the id first, or last)."""
        inbound = too_long(event.head, event.tail, event.limit)
        if event.side == CLIENT:
            self._on_client(inbound, "message.too_large")
        else:
            self._on_server(inbound, "message.too_large")

    def _on_timers(self) -> None:
        now = self.ctx.now
        # Every key scheduled is a Deadline (the Timers heap holds any hashable key).
        for key in self._timers.pop_due(now):
            if self._phase is not PHASE_STOPPED:
                self._on_due[key.kind](key.owner)
        for key in self.ctx.timers.pop_due(now):
            if self.handler is not None and self._phase is not PHASE_STOPPED:
                self.handler.on_timer(key)

    def _probe_timed_out(self, _: None) -> None:
        self.probe.on_timeout()
        if self.probe.era == "legacy":
            self.verdict.timed_out(self.ctx.now)
            self._route()
        self._settled()

    def _backoff_over(self, _: None) -> None:
        if self.life.state is ServerState.DOWN:  # not if a start came first (at once)
            self.life.restart(self._lost_mode)

    def _exit_unknown(self, _: None) -> None:
        self._on_server_gone(Outage(None))

    def _failed_wait_over(self, _: None) -> None:
        assert self._failure is not None
        self._stop(EX_UNAVAILABLE, self._failure.reason, self._failure.data)

    def _drain_over(self, _: None) -> None:
        self._stop(EX_OK, self._stop_reason())

    def _stop_reason(self) -> str:
        return "the client closed its input" if self._phase is SessionPhase.DRAINING \
            else "mcp-rosetta is shutting down"

    def _on_peer_closed(self, side: str, gone: bool) -> None:
        if side == CLIENT:
            self.ctx.log("info", "client.gone" if gone else "client.closed")
            if self._failure is not None:
                self._stop(EX_UNAVAILABLE, self._failure.reason, self._failure.data)
                return
            if gone:  # nobody reads what is owed: no drain, and the server goes at once
                self._stop(EX_OK, "the client is gone")
                return
            # handle() drains what the client is owed, then stops.
            if self._phase is not SessionPhase.DRAINING:
                self._move_phase(SessionPhase.DRAINING)
        elif self.life.output_closed():
            # Answered once its exit status is known, or after EXIT_WAIT_S without one.
            self.probe.abandon()  # nothing more can answer it

    # The server process: started, lost, restarted ------------------------------------------

    def _on_child_started(self) -> None:
        unprobed = self.life.started()
        self.verdict.server_started()
        self.probe.start(skip=unprobed)
        if self.probe.era is not None:
            self._settled()

    def _on_child_exited(self, event: ChildExited) -> None:
        self.life.exit_known()  # its output closed first: this is the status waited for
        self._on_server_gone(Outage(event.code, event.cause, event.stderr_tail, event.went))

    def _on_server_gone(self, outage: Outage) -> None:
        """The server exited or closed its output (ChildExited, PeerClosed: each crash says
        both, in either order; a closed output waits EXIT_WAIT_S for the exit)."""
        life = self.life
        if life.echoed(outage):
            return
        self.verdict.server_gone()
        self._route()
        if self._closing:
            self._stop(EX_UNAVAILABLE, f"mcp-rosetta: the server {outage.what}", outage.data())
            return
        if not life.served:
            self.probe.abandon()
            if life.may_retry_unprobed(outage):
                self.probe = Probe(self.ctx, self._timers)
                life.retry_unprobed(outage)
            else:
                self._fail_unserved(outage)
            return
        serving = life.state is ServerState.SERVING
        self.probe.abandon()
        attempt = life.take_restart(outage)
        if attempt is None:
            self._stop(EX_UNAVAILABLE, life.gave_up(outage), outage.data())
            return
        if serving:
            self._lose_handler(outage)
        # A server that never started (its exec failed) or died on the probe is a failed
        # start; the next one gets a probe of its own.
        self.probe = Probe(self.ctx, self._timers)
        if life.down(outage, attempt):
            life.restart(self._lost_mode)

    def _fail_unserved(self, outage: Outage) -> None:
        """The server ended before it ever answered: every request waiting gets one error
        naming why; a client that has asked nothing yet is answered so for a while (FAILED),
        not left with an end of file."""
        reason, data = self.life.failed(outage)
        before = len(self.ctx.actions)
        if self.handler is not None:
            self.handler.fail_pending(reason, data)
            self._drop_handler()
        self._waiting.fail_all(reason, data)
        self._failure = Failure(reason, data)
        answered = any(type(a) is Send and a.side == CLIENT for a in self.ctx.actions[before:])
        if answered:
            self._stop(EX_UNAVAILABLE, reason, data)
        else:
            self._move_phase(SessionPhase.FAILED)
            self._timers.schedule(_FAILED, self.ctx.now + self.ctx.config.probe_timeout)

    def _answer_failure(self, inbound: Inbound) -> None:
        """While the bridge lingers after a failed start: the client's request (a ping too:
        there is no server to reach) gets the failure, and the bridge stops after this event."""
        assert self._failure is not None
        if inbound.kind == "request":
            failure = self._failure
            self.ctx.fail(CLIENT, inbound.message["id"],
                          errors.session_ended(failure.reason, failure.data))
            self._timers.schedule(_FAILED, self.ctx.now)

    def _lose_handler(self, outage: Outage) -> None:
        """Every request the server took gets its error; the client's session is handed on,
        and what the handler never sent waits for the next server."""
        handler = self.handler
        if handler is None:
            return
        handover = handler.lose_server(outage)
        self._session = handover.session
        self._waiting.hold_first(handover.unsent)
        self._lost_mode = handler.mode
        self._drop_handler()

    def _drop_handler(self) -> None:
        """The handler goes, and its timers with it; client messages are held again."""
        self.handler = None
        self._lane = None
        self._move_intake(Intake.HELD)
        self.ctx.timers = Timers()

    # A legacy verdict overturned --------------------------------------------------------

    def _overturned(self, inbound: Inbound) -> bool:
        """While the legacy verdict is provisional: whether this answer was the verdict's
        (the server shown modern and the session corrected, or the probe's late answer)."""
        shown = self.verdict.shown(inbound, self.probe, self._asked(inbound.message["id"]))
        self._route()
        if isinstance(shown, Overturn):
            self._correct(shown)
            return True
        return shown

    def _asked(self, answer_id: object) -> str | None:
        """The method of the handler's request an answer is for."""
        handler = self.handler
        exchange = handler.router.pending[SERVER].get(answer_id) \
            if handler is not None and isinstance(answer_id, str) else None
        return None if exchange is None else exchange.method

    def _correct(self, overturn: Overturn) -> None:
        """The server is modern after all: the session becomes what it would have been had
        the probe been answered in time. The client's messages since go to the new handler,
        the dropped handler's requests are absorbed when answered."""
        old = self.handler
        kept, session = self.verdict.correct(
            overturn, None if old is None else old.mode,
            () if old is None else old.router.pending[SERVER])
        if old is not None:
            self._lost_mode = old.mode
            self._drop_handler()
        self._waiting.hold_first(kept)
        self._session = session
        self._route()
        if overturn.discover is None and overturn.error is None:
            # Only a -32022 is known: ask server/discover for what the modern server offers.
            self.probe = Probe(self.ctx, self._timers)
            self.life.reprobed()
            self.probe.start(skip=False)
            return
        self.probe.overturned(overturn)
        self._choose_mode()

    # Era detection ------------------------------------------------------------------------

    def _before_mode(self, inbound: Inbound) -> None:
        """A client message no handler can take yet (the mode is unknown, or the server is
        restarting): learn the client's era, or hold it. An invalid one needs no server: it
        is answered at once."""
        if inbound.kind == "invalid":
            self.ctx.reject(CLIENT, inbound)
            return
        if self._failure is not None:
            self._answer_failure(inbound)
            return
        if self.client_era is None and not self._learn_client_era(inbound):
            return
        if self.client_era == "legacy" and inbound.kind == "request" \
                and inbound.message["method"] == "ping":
            # lifecycle.mdx (2025-11-25) §Operation: either side may ping at any time; the
            # bridge is alive, and a ping must not wait out a restart. (The modern era has
            # no ping: a modern client's waits for the server like any request.)
            self.ctx.reply(CLIENT, inbound.message["id"], {})
            return
        self._waiting.hold(inbound)
        self._choose_mode()

    def _learn_client_era(self, inbound: Inbound) -> bool:
        message = inbound.message
        if inbound.kind != "request":
            self.ctx.log("info", "message.dropped", side=CLIENT, reason="before the first request")
            return False
        # Until initialize negotiates one, a legacy client is taken to speak the latest revision.
        era: Era = "modern" if legacy_request(LATEST_LEGACY_VERSION, message) is None else "legacy"
        if era == "legacy" and message["method"] != "initialize":
            if message["method"] == "ping":  # lifecycle.mdx: ping is allowed before initialize
                self.ctx.reply(CLIENT, message["id"], {})
            else:
                self.ctx.fail(CLIENT, message["id"], errors.no_era_named())
            return False
        self.client_era = era
        self.ctx.log("info", "era.detected", side=CLIENT, era=era)
        return True

    def _settled(self) -> None:
        """The server's era is known: the bridge is ready to serve."""
        self.life.serving()
        self._choose_mode()

    def _choose_mode(self) -> None:
        server_era = self.probe.era
        if self.handler is not None or self.client_era is None or server_era is None:
            return
        handler = self.handler = self._new_handler(self.client_era, server_era)
        self._lane = handler.lane
        self.ctx.log("info", "mode.chosen", mode=handler.mode, client_era=self.client_era,
                     server_era=server_era, previous=self._lost_mode)
        if self.ctx.config.roots and handler.mode != "B" and not self._roots_told:
            self._roots_told = True
            self.ctx.log("warning", "roots.unused", mode=handler.mode,
                         reason="roots (--root) serve only a legacy server behind a modern "
                                "client (mode B); here the client answers the server's "
                                "roots/list itself")
        session, self._session = self._session, None
        if session is not None:
            if self.verdict.provisional is not None:
                self.verdict.provisional.session = session
            handler.resume(session)
        if handler.resuming:
            self._move_intake(Intake.RESUMING)
        else:
            self._release()

    def _new_handler(self, client_era: Era, server_era: Era) -> Handler:
        # Each mode is imported when chosen: a bridge runs one unless the server restarts as
        # the other era, and importing the others would add to every start-up.
        if client_era == server_era:
            from bridge.core.relay.mode import PassThrough

            return PassThrough(self.ctx, server_era)
        if client_era == "legacy":
            from bridge.core.legacy_server_modern_client.mode import ModeA

            return ModeA(self.ctx, self.probe)
        from bridge.core.modern_server_legacy_client.mode import ModeB

        return ModeB(self.ctx, self.probe, self.secret)

    def _release(self) -> None:
        """The handler can serve: what the client said meanwhile reaches it, in order."""
        assert self.handler is not None
        self._move_intake(Intake.HANDLER)
        provisional = self.verdict.provisional
        for inbound in self._waiting.release():
            if provisional is not None:
                provisional.keep(inbound)
            self.handler.on_client(inbound)

    # Shutdown -----------------------------------------------------------------------------

    def _on_shutdown_requested(self, grace: float) -> None:
        if grace <= 0:
            self._stop(EX_OK, "mcp-rosetta is shutting down")
        elif not self._closing:
            self.ctx.log("info", "bridge.closing", grace_s=grace)
            self._grace = grace
            self._move_phase(SessionPhase.CLOSING)

    def _refuse_while_closing(self, request: Inbound) -> None:
        """A request that arrives while the bridge winds down gets an error, not the server;
        what the client answers or cancels still reaches the calls that are owed."""
        self.ctx.fail(CLIENT, request.message["id"], errors.shutting_down())

    def _after_detour(self) -> None:
        """After an event while closing or holding: release what a handler that has re-opened
        the session can now take; stop once closing and nothing is owed."""
        if self._intake is Intake.RESUMING and self.handler is not None \
                and not self.handler.resuming:
            self._release()
        if self._closing:
            self._drain_or_stop()

    def _drain_or_stop(self) -> None:
        """Once closing: stop when nothing is owed, or when the drain's time runs out.

        An unanswered probe is not owed: it is the bridge's own question. A request held
        until the probe settles the mode is (self._waiting).
        """
        owed = self._waiting.owes() or (self.handler is not None and self.handler.busy())
        if not owed:
            self._stop(EX_OK, self._stop_reason())
        elif _DRAIN not in self._timers:
            drain = self.ctx.config.drain_timeout if self._phase is SessionPhase.DRAINING \
                else self._grace
            self._timers.schedule(_DRAIN, self.ctx.now + drain)

    def _stop(self, code: int, reason: str, data: Message | None = None) -> None:
        """Answer every request still waiting (exactly one response each), then stop."""
        if self.handler is not None:
            self.handler.fail_pending(reason, data)
        elif self._session is not None:  # handed over, and no server took it up
            for request_id in open_requests(self._session):
                self.ctx.fail(CLIENT, request_id, errors.session_ended(reason, data))
        self._waiting.fail_all(reason, data)
        self.ctx.actions.append(Stop(code))
        self._move_phase(SessionPhase.STOPPED)
