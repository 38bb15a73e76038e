"""The bridge's lifecycle: every event routed, the client's era learnt, the mode chosen once
both eras are known, and the session's end (a shutdown, the client leaving, a server that
never served).

Must not translate messages itself: once both eras are known a mode handler (P, A or B)
owns the traffic, and a handler made for a restarted server re-opens the client's session
from the record the lost one handed over. Nor does it follow the server's life or its era:
the server side (supervision.py) does, and asks this lifecycle for what touches the client's
side (the handler, the held messages, the session's end). `handle` never raises; a bug is
logged as `bridge.error`, not a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from bridge.core import errors
from bridge.core.batch import Batches
from bridge.core.client_era import answered_ping, first_request_era
from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.context import Context, counter_ids
from bridge.core.eras import Era
from bridge.core.events import (
    CLIENT,
    EX_OK,
    EX_UNAVAILABLE,
    SERVER,
    Action,
    ChangeRelayed,
    ChildExited,
    ChildStarted,
    Event,
    MessageDecoded,
    MessageReceived,
    MessageTooLarge,
    PeerClosed,
    Send,
    ShutdownRequested,
    Stop,
    TimerFired,
)
from bridge.core.handler import Handler, Mode, new_handler
from bridge.core.handover import ClientSession, open_requests
from bridge.core.jsonrpc import Inbound, classified, parse_inbound, too_long
from bridge.core.limits import event_for, settle
from bridge.core.phase import PHASE_STOPPED, Phase, PhaseDue, SessionPhase, StartFailure
from bridge.core.probe import PROBE_WAITING, ProbeDue
from bridge.core.restarts import Outage
from bridge.core.server_life import RECORD_SERVED, ServerDue
from bridge.core.server_life import ServerState as ServerState  # Bridge.server_state's type
from bridge.core.supervision import Supervision
from bridge.core.timers import Timers
from bridge.core.waiting import INTAKE_HANDLER, HeldDue, Intake, Waiting

if TYPE_CHECKING:
    from bridge.core.lane import Lane
    from bridge.core.observe import Observer

# The kinds a mode handler takes as they come (not a batch, nor a refused message).
_SINGLE = frozenset({"request", "notification", "response", "invalid"})


class Bridge:
    """One bridge between one client and one server process. Feed it events, run its actions."""

    def __init__(self, config: CoreConfig | None = None, *,
                 mint_id: Callable[[], str] | None = None, secret: bytes = b"",
                 observer: Observer | None = None) -> None:
        self.ctx = Context(config or CoreConfig(), mint_id or counter_ids())
        self.secret = secret
        self.observer = observer  # counts the requests answered (observe.py), if any
        self._filed = None if observer is None else observer.asked  # tested after each event
        if observer is not None:  # what the lifecycle answers itself is counted too
            tapped = observer.tap(self._without_handler, self.ctx)
            setattr(self, "_without_handler", tapped)  # noqa: B010 (the instance's own)
        self.client_era: Era | None = None
        self.handler: Handler | None = None
        # The lifecycle's own timers (the probe, the drain, restarts, held requests) outlive
        # any mode handler; ctx.timers are the handler's, and go with it.
        self._timers = Timers()
        self.batches = Batches()
        self._waiting = Waiting(self.ctx, self._timers)
        self.supervision = Supervision(self.ctx, self._timers, self)
        self.phase = Phase(self.ctx.config, self._timers)
        self._roots_told = False
        self._session: ClientSession | None = None  # handed over, until a handler resumes it
        self.lost_mode: Mode | None = None  # the mode of the handler last lost or dropped
        # The hot path's one test, kept by `route`: whether client messages take the long way
        # (not OPEN, held for a resuming handler, or a provisional verdict copying each).
        self._detour = False
        self._lane: Lane | None = None  # the handler's one-step route (lane.py), if any
        # By the deadline's kind; a handler takes its owner (a held request's number, or None).
        supervision = self.supervision
        self._on_due: dict[Enum, Callable[[Any], None]] = {
            ProbeDue.ANSWER: supervision.probe_timed_out,
            ServerDue.RESTART: supervision.backoff_over,
            ServerDue.EXIT_WAIT: supervision.exit_unknown,
            PhaseDue.FAILED: self._stop_failed,
            PhaseDue.DRAIN: self._drain_over,
            HeldDue.REQUEST_TIMEOUT: self._waiting.expire,
        }

    @property
    def mode(self) -> Mode | None:
        return self.handler.mode if self.handler is not None else None

    @property
    def server_state(self) -> ServerState:
        """Where the server process is (the HTTP front's /readyz reads it)."""
        return self.supervision.life.state

    @property
    def legacy_server(self) -> bool:
        """Whether the server answered the probe as a legacy one, for good (or is pinned so)."""
        return self.supervision.probe.found_legacy

    @property
    def has_served(self) -> bool:
        """Whether a server of this session has spoken: a start after it is a restart."""
        return self.supervision.life.served

    def _move_phase(self, to: SessionPhase) -> None:
        self.phase.move(to)
        self.route()

    def _move_intake(self, to: Intake) -> None:
        self._waiting.move(to)
        self.route()

    def route(self) -> None:
        """Keep `_detour` in step with what it caches (after each move of the phase, the
        intake or the legacy verdict)."""
        self._detour = self.phase.state is not SessionPhase.OPEN \
            or self._waiting.intake is Intake.RESUMING \
            or self.supervision.verdict.provisional is not None \
            or self.supervision.recall.watching

    def _stopped(self) -> bool:
        return self.phase.state is PHASE_STOPPED

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
        if self.phase.state is PHASE_STOPPED:
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
                            self._take_client(inbound)
                    else:
                        supervision = self.supervision
                        probe = supervision.probe
                        if supervision.verdict.abandoned or probe.state is PROBE_WAITING:
                            self._on_server(parse_inbound(event.message))
                        else:
                            inbound = lane.from_server(event.message, probe.id)
                            if inbound is None:
                                supervision.life.record = RECORD_SERVED
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
            provisional = self.supervision.verdict.provisional
            if provisional is not None:
                provisional.note_answers(actions)
        if self._filed:  # answers to count (observe.py), before a batch's are held back
            assert self.observer is not None  # _filed is its table
            self.observer.answered(actions, now)
        if self.batches.open:
            self.batches.collect(actions)
        return actions

    # Events ---------------------------------------------------------------------------------

    def _dispatch(self, event: Event) -> None:
        """Every event but a line (handle takes those itself)."""
        if type(event) is MessageDecoded:
            self._on_decoded(event)
        elif type(event) is TimerFired:
            self._on_timers()
        elif type(event) is MessageTooLarge:
            self._on_too_large(event)
        elif type(event) is ChildStarted:
            self.supervision.started()
        elif type(event) is ChildExited:
            self.ctx.log("warning" if event.code else "info", "child.exited", code=event.code)
            self.supervision.exited(event)
        elif type(event) is PeerClosed:
            if event.side == CLIENT:
                self._on_client_closed(event.gone)
            else:
                self.supervision.output_closed()
        elif type(event) is ShutdownRequested:
            self._on_shutdown_requested(event.grace)
        elif type(event) is ChangeRelayed and self.handler is not None:
            self.handler.on_change(event.message)

    def _on_client_line(self, line: bytes) -> None:
        handler = self.handler
        self._take_client(parse_inbound(
            line, batching=handler is not None and handler.client_batching))

    def _on_decoded(self, event: MessageDecoded) -> None:
        """A message the shell decoded: classified from its value, routed as its line is."""
        if event.side == SERVER:
            self._on_server(classified(event.line, event.message))
            return
        handler = self.handler
        self._take_client(classified(event.line, event.message,
                                     handler is not None and handler.client_batching))

    def _take_client(self, inbound: Inbound) -> None:
        """A client message off the lane (or handed back by it): to the handler unless
        another must see it first."""
        handler = self.handler
        if handler is not None and inbound.kind in _SINGLE and not self.batches.open \
                and not self._detour:
            handler.on_client(inbound)
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
        if self._waiting.intake is INTAKE_HANDLER \
                and not (self.phase.closing and inbound.kind == "request"):
            assert self.handler is not None
            verdict = self.supervision.verdict
            if verdict.provisional is not None:
                verdict.keep(inbound)
                self.route()
            self.handler.on_client(inbound)
        else:
            self._without_handler(inbound)

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
        if self.supervision.takes(inbound):
            return
        if self.handler is not None:
            probe_id = self.supervision.probe.id  # Probe.is_late_answer, inline
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
        take = self._on_client if event.side == CLIENT else self._on_server
        take(too_long(event.head, event.tail, event.limit), "message.too_large")

    def _on_timers(self) -> None:
        now = self.ctx.now
        # Every key scheduled is a Deadline (the Timers heap holds any hashable key).
        phase = self.phase
        for key in self._timers.pop_due(now):
            if phase.state is not PHASE_STOPPED:
                self._on_due[key.kind](key.owner)
        for key in self.ctx.timers.pop_due(now):
            if self.handler is not None and phase.state is not PHASE_STOPPED:
                self.handler.on_timer(key)

    def _stop_failed(self, _: None = None) -> None:
        """The session of a server that never served ends, with the failure."""
        failure = self.phase.failure
        assert failure is not None
        self.stop(EX_UNAVAILABLE, failure.reason, failure.data)

    def _drain_over(self, _: None) -> None:
        self.stop(EX_OK, self.phase.end_reason())

    def _on_client_closed(self, gone: bool) -> None:
        self.ctx.log("info", "client.gone" if gone else "client.closed")
        if self.phase.failure is not None:
            self._stop_failed()
        elif gone:  # nobody reads what is owed: no drain, and the server goes at once
            self.stop(EX_OK, "the client is gone")
        elif self.phase.state is not SessionPhase.DRAINING:
            # handle() drains what the client is owed, then stops.
            self._move_phase(SessionPhase.DRAINING)

    # What the server side asks of the client's side (supervision.Lifecycle) -----------------

    def fail_unserved(self, reason: str, data: Message) -> None:
        """The server ended before it ever answered: every request waiting gets one error
        naming why; a client that has asked nothing yet is answered so for a while (FAILED)."""
        before = len(self.ctx.actions)
        if self.handler is not None:
            self.handler.fail_pending(reason, data)
            self._drop_handler()
        self._waiting.fail_all(reason, data)
        if any(type(a) is Send and a.side == CLIENT for a in self.ctx.actions[before:]):
            self.stop(EX_UNAVAILABLE, reason, data)
        else:
            self.phase.fail(StartFailure(reason, data), self.ctx.now)
            self.route()

    def lose_handler(self, outage: Outage) -> None:
        """Every request the server took gets its error; the client's session is handed on,
        and what the handler never sent waits for the next server."""
        handler = self.handler
        if handler is None:
            return
        handover = handler.lose_server(outage)
        self._session = handover.session
        self._waiting.hold_first(handover.unsent)
        self.lost_mode = handler.mode
        self._drop_handler()

    def asked(self, answer_id: object) -> str | None:
        handler = self.handler
        exchange = handler.router.pending[SERVER].get(answer_id) \
            if handler is not None and isinstance(answer_id, str) else None
        return None if exchange is None else exchange.method

    def abandon_handler(self) -> tuple[Mode | None, Iterable[str]]:
        handler = self.handler
        if handler is None:
            return None, ()
        pending = list(handler.router.pending[SERVER])
        self.lost_mode = handler.mode
        self._drop_handler()
        return handler.mode, pending

    def hold(self, kept: list[Inbound], session: ClientSession | None) -> None:
        self._waiting.hold_first(kept)
        self._session = session
        self.route()

    def _drop_handler(self) -> None:
        """The handler goes, and its timers with it; client messages are held again."""
        self.handler = None
        self._lane = None
        self._move_intake(Intake.HELD)
        self.ctx.timers = Timers()

    # The client's era, and the mode ---------------------------------------------------------

    def _without_handler(self, inbound: Inbound) -> None:
        """A client message no handler takes now: a request while closing is refused (what
        the client answers or cancels still reaches the calls owed); before the mode is known
        or while the server restarts, learn the client's era, or hold it; answer an invalid one."""
        if self.phase.closing and inbound.kind == "request":
            self.ctx.fail(CLIENT, inbound.message["id"], errors.shutting_down(
                self.ctx.config.shutdown_message))
            return
        if inbound.kind == "invalid":
            self.ctx.reject(CLIENT, inbound)
            return
        if self.phase.failure is not None:
            self._answer_failure(inbound)
            return
        era = self.client_era
        if era is None:
            era = self.client_era = first_request_era(self.ctx, inbound)
            if era is None:
                return
        if answered_ping(self.ctx, era, inbound):
            return
        self._waiting.hold(inbound)
        self.choose_mode()

    def _answer_failure(self, inbound: Inbound) -> None:
        """After a failed start: the client's request (a ping too) gets the failure, and the
        bridge stops after this event."""
        failure = self.phase.failure
        assert failure is not None
        if inbound.kind == "request":
            self.ctx.fail(CLIENT, inbound.message["id"],
                          errors.session_ended(failure.reason, failure.data))
            self.phase.failure_told(self.ctx.now)

    def choose_mode(self) -> None:
        """A handler once both eras are known (the server's by the server side's probe)."""
        server_era = self.supervision.probe.era
        if self.handler is not None or self.client_era is None or server_era is None:
            return
        handler = self.handler = new_handler(self.ctx, self.client_era, server_era,
                                             self.supervision.probe, self.secret)
        self._lane = handler.lane
        if self.observer is not None:
            self.observer.watch(handler, self.ctx, self.client_era, server_era)
        self.ctx.log("info", "mode.chosen", mode=handler.mode, client_era=self.client_era,
                     server_era=server_era, previous=self.lost_mode)
        if self.ctx.config.roots and handler.mode != "B" and not self._roots_told:
            self._roots_told = True
            self.ctx.log("warning", "roots.unused", mode=handler.mode,
                         reason="roots (--root) serve only a legacy server behind a modern "
                                "client (mode B); here the client answers the server's "
                                "roots/list itself")
        session, self._session = self._session, None
        if session is not None:
            provisional = self.supervision.verdict.provisional
            if provisional is not None:
                provisional.session = session
            handler.resume(session)
        if handler.resuming:
            self._move_intake(Intake.RESUMING)
        else:
            self._release()

    def _release(self) -> None:
        """The handler can serve: what the client said meanwhile reaches it, in order."""
        assert self.handler is not None
        self._move_intake(Intake.HANDLER)
        provisional = self.supervision.verdict.provisional
        for inbound in self._waiting.release():
            if provisional is not None:
                provisional.keep(inbound)
            self.handler.on_client(inbound)

    # Shutdown -------------------------------------------------------------------------------

    def _on_shutdown_requested(self, grace: float) -> None:
        if grace <= 0:
            self.stop(EX_OK, self.ctx.config.shutdown_message)
        elif not self.phase.closing:
            self.ctx.log("info", "bridge.closing", grace_s=grace)
            self.phase.close(grace)
            self.route()

    def _after_detour(self) -> None:
        """After an event while closing or holding: release what a handler that has re-opened
        the session can now take; stop once closing and nothing is owed."""
        if self._waiting.intake is Intake.RESUMING and self.handler is not None \
                and not self.handler.resuming:
            self._release()
        if self.phase.closing:
            self._drain_or_stop()

    def _drain_or_stop(self) -> None:
        """Once closing: stop when nothing is owed, or when the drain's time runs out. An
        unanswered probe is not owed (the bridge's own question); a request held until the
        probe settles the mode is (self._waiting)."""
        if not (self._waiting.owes() or (self.handler is not None and self.handler.busy())):
            self.stop(EX_OK, self.phase.end_reason())
        else:
            self.phase.drain(self.ctx.now)

    def stop(self, code: int, reason: str, data: Message | None = None) -> None:
        """Answer every request still waiting (exactly one response each), then stop."""
        if self.handler is not None:
            self.handler.fail_pending(reason, data)
        elif self._session is not None:  # handed over, and no server took it up
            for request_id in open_requests(self._session):
                self.ctx.fail(CLIENT, request_id, errors.session_ended(reason, data))
        self._waiting.fail_all(reason, data)
        self.ctx.actions.append(Stop(code))
        self._move_phase(SessionPhase.STOPPED)
