"""The session's server side: the process started, probed, lost and restarted, and its era as
the probe found it, corrected when a slow modern server answers late.

Must not touch the client's side: the mode handler, the client's held messages and the
session's end are the lifecycle's (bridge.py), reached through `Lifecycle`. This moves three
machines on the shell's events about the server and on the answers that are the server
side's own: `ServerLife` (server_life.py), `Probe` (probe.py) and `Verdict` (verdict.py).
The shell's Supervisor carries out the `RestartChild` this decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import EX_UNAVAILABLE, SERVER, ChildExited
from bridge.core.handler import Mode
from bridge.core.handover import ClientSession
from bridge.core.jsonrpc import Inbound
from bridge.core.phase import Phase
from bridge.core.probe import PROBE_WAITING, Probe, pin_refused
from bridge.core.provisional import Overturn
from bridge.core.recall import Recall
from bridge.core.restarts import Outage
from bridge.core.server_life import RECORD_SERVED, ServerLife, ServerState
from bridge.core.timers import Timers
from bridge.core.verdict import Verdict


class Lifecycle(Protocol):
    """The lifecycle (`Bridge`) as the server side needs it."""

    lost_mode: Mode | None  # the mode of the handler last lost or dropped
    phase: Phase  # the session's: whether it is closing

    def route(self) -> None:
        """A verdict moved: the client's messages may take another way."""
    def choose_mode(self) -> None:
        """The server's era is known: a handler, if the client's is known too."""
    def stop(self, code: int, reason: str, data: Message | None = None) -> None: ...
    def fail_unserved(self, reason: str, data: Message) -> None:
        """No server of the session ever served: the session fails with `reason`."""
    def lose_handler(self, outage: Outage) -> None:
        """The server that served went: its handler hands on the client's session."""
    def asked(self, answer_id: object) -> str | None:
        """The method of the handler's request an answer is for."""
    def abandon_handler(self) -> tuple[Mode | None, Iterable[str]]:
        """The handler goes (the era was wrong): its mode and the ids of its requests at
        the server (None and none without a handler)."""
    def hold(self, kept: list[Inbound], session: ClientSession | None) -> None:
        """What the client said, and its session, wait for the handler of the true era."""


class Supervision:
    """One session's servers, one after another, and what each has shown of its era."""

    __slots__ = ("ctx", "life", "lifecycle", "probe", "recall", "timers", "verdict")

    def __init__(self, ctx: Context, timers: Timers, lifecycle: Lifecycle) -> None:
        self.ctx = ctx
        self.timers = timers  # the lifecycle's: they outlive every mode handler
        self.lifecycle = lifecycle
        self.life = ServerLife(ctx, timers)
        self.probe = Probe(ctx, timers)
        self.verdict = Verdict(ctx)
        config = ctx.config
        self.recall = Recall(config.remembered if config.server_era == "auto" else None)

    # Up -----------------------------------------------------------------------------------

    def started(self) -> None:
        """ChildStarted: probe the new server, unless it is to go unprobed."""
        unprobed = self.life.started()
        self.verdict.server_started()
        remembered = not unprobed and self.recall.skips_probe()
        self.probe.start(skip=unprobed, remembered=remembered)
        if self.probe.era is not None:
            if remembered or (not unprobed and self.ctx.config.server_era == "legacy"):
                self.verdict.unconfirmed(self.ctx.now)
                self.lifecycle.route()
            self._settled()

    def _settled(self) -> None:
        if self.probe.era == "legacy" and self.ctx.config.server_era == "auto":
            self.recall.settled_legacy()  # its answer to initialize teaches the memory
            self.lifecycle.route()
        self.life.serving()
        self.lifecycle.choose_mode()

    def probe_timed_out(self, _: None) -> None:
        self.probe.on_timeout()
        if self.probe.era == "legacy":
            self.verdict.timed_out(self.ctx.now)
            self.lifecycle.route()
        self._settled()

    def backoff_over(self, _: None) -> None:
        if self.life.state is ServerState.DOWN:  # not if a start came first (at once)
            self.life.restart(self.lifecycle.lost_mode)

    # The server's own answers -------------------------------------------------------------

    def takes(self, inbound: Inbound) -> bool:
        """A message from the server (a stand-in for a refused one too): whether it is the
        server side's own (the probe's answer, an answer to a dropped handler, or one that
        shows the legacy verdict wrong), not the handler's."""
        if inbound.kind != "invalid":
            self.life.record = RECORD_SERVED
        verdict = self.verdict
        if verdict.abandoned and verdict.absorbed(inbound):
            return True
        if self.probe.state is PROBE_WAITING:
            self.probe.on_server(inbound)
            if self.probe.era is not None:
                self._settled()
            return True
        if self.recall.watching and inbound.kind == "response":
            self._recall(inbound)
        return verdict.provisional is not None and inbound.kind == "response" \
            and self._overturned(inbound)

    def _recall(self, inbound: Inbound) -> None:
        """The first answer to `initialize` from a server taken as legacy: it is remembered,
        or found to be another server than the one remembered, which is forgotten."""
        if self.lifecycle.asked(inbound.message["id"]) != "initialize":
            return
        remember = self.recall.answered(inbound.message)
        self.lifecycle.route()
        if remember is not None:
            self.ctx.actions.append(remember)  # the shell stores it, and logs it

    def _overturned(self, inbound: Inbound) -> bool:
        """While the legacy verdict is provisional: whether this answer was the verdict's
        (the server shown modern and the session corrected, or the probe's late answer)."""
        shown = self.verdict.shown(inbound, self.probe,
                                   self.lifecycle.asked(inbound.message["id"]))
        self.lifecycle.route()
        if isinstance(shown, Overturn):
            if self.ctx.config.server_era == "legacy":
                self._pin_refused(inbound)
                return False
            self._correct(shown)
            return True
        return shown

    def _pin_refused(self, inbound: Inbound) -> None:
        """A modern-only server refused `initialize` while the era is pinned to legacy: the
        pin stands, and the refusal the handler passes on names it as the cause."""
        self.verdict.end()
        self.lifecycle.route()
        self.ctx.log("warning", "era.pin_refused", side=SERVER, era="legacy",
                     reason="the server refused initialize as a modern-only server does")
        inbound.message = {**inbound.message, "error": pin_refused(inbound.message["error"])}
        inbound.line = None

    def _correct(self, overturn: Overturn) -> None:
        """The server is modern after all: the session becomes what it would have been had
        the probe been answered in time. The client's messages since go to the new handler,
        the dropped handler's requests are absorbed when answered."""
        lifecycle = self.lifecycle
        forget = self.recall.contradicted()
        if forget is not None:
            self.ctx.actions.append(forget)
        kept, session = self.verdict.correct(overturn, *lifecycle.abandon_handler())
        lifecycle.hold(kept, session)
        if overturn.discover is None and overturn.error is None:
            # Only a -32022 is known: ask server/discover for what the modern server offers.
            self.probe = Probe(self.ctx, self.timers)
            self.life.reprobed()
            self.probe.start(skip=False)
            return
        self.probe.overturned(overturn)
        lifecycle.choose_mode()

    # Going --------------------------------------------------------------------------------

    def output_closed(self) -> None:
        """PeerClosed from the server: answered once its exit status is known, or after
        EXIT_WAIT_S without one."""
        if self.life.output_closed():
            self.probe.abandon()  # nothing more can answer it

    def exited(self, event: ChildExited) -> None:
        self.life.exit_known()  # its output closed first: this is the status waited for
        self._gone(Outage(event.code, event.cause, event.stderr_tail, event.went))

    def exit_unknown(self, _: None) -> None:
        self._gone(Outage(None))

    def _gone(self, outage: Outage) -> None:
        """The server exited or closed its output (ChildExited, PeerClosed: each crash says
        both, in either order; a closed output waits EXIT_WAIT_S for the exit)."""
        life, lifecycle = self.life, self.lifecycle
        if life.echoed(outage):
            return
        self.verdict.server_gone()
        lifecycle.route()
        if lifecycle.phase.closing:
            lifecycle.stop(EX_UNAVAILABLE, f"mcp-rosetta: the server {outage.what}",
                           outage.data())
            return
        self.probe.abandon()
        if not life.served:
            if life.may_retry_unprobed(outage):
                self.probe = Probe(self.ctx, self.timers)
                life.retry_unprobed(outage)
            else:
                lifecycle.fail_unserved(*life.failed(outage))
            return
        serving = life.state is ServerState.SERVING
        attempt = life.take_restart(outage)
        if attempt is None:
            lifecycle.stop(EX_UNAVAILABLE, life.gave_up(outage), outage.data())
            return
        if serving:
            lifecycle.lose_handler(outage)
        # A server that never started (its exec failed) or died on the probe is a failed
        # start; the next one gets a probe of its own.
        self.probe = Probe(self.ctx, self.timers)
        if life.down(outage, attempt):
            life.restart(lifecycle.lost_mode)
