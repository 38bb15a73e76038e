"""The server's era as a verdict the session may still correct: legacy taken without the
server's word (the probe's timeout, the era remembered from an earlier start, a pin) is
provisional until the server answers like a legacy server, and an answer that shows a modern
server overturns it, once per server (a pin is not overturned: the refusal names it).

Must not touch a mode handler: the lifecycle (bridge.py) asks this machine what a server's
answer shows, then drops the handler, replays what was kept and probes again itself. This
keeps the state, the client's messages since the timeout (provisional.py) and the ids of the
dropped handler's requests, whose answers are absorbed. stdio.mdx §Backward Compatibility
takes silence "within a reasonable timeout" as legacy; a modern server that is only slow to
start answers later, and then its era is known for certain.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from bridge.core.context import Context
from bridge.core.events import SERVER
from bridge.core.handover import ClientSession
from bridge.core.jsonrpc import Inbound
from bridge.core.probe import Probe
from bridge.core.provisional import Overturn, Provisional, refused_initialize
from bridge.core.states import IllegalMove


class VerdictState(Enum):
    """The legacy verdict on one server."""

    FINAL = "nothing to correct: the era was answered or pinned, or the legacy verdict stands"
    PROVISIONAL = ("legacy without the server's word (timeout, memory, pin): an answer may "
                   "still show a modern server")
    CORRECTED = "overturned once: this server's era stands until another server starts"


_VERDICT_MOVES: dict[VerdictState, frozenset[VerdictState]] = {
    VerdictState.FINAL: frozenset({VerdictState.PROVISIONAL}),
    VerdictState.PROVISIONAL: frozenset({VerdictState.FINAL, VerdictState.CORRECTED}),
    VerdictState.CORRECTED: frozenset({VerdictState.FINAL}),
}


class Verdict:
    """From one server's start to the next: whether its legacy verdict may still change."""

    __slots__ = ("abandoned", "ctx", "provisional", "state")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = VerdictState.FINAL
        self.provisional: Provisional | None = None  # set exactly while PROVISIONAL
        # The ids of an overturned handler's requests: their answers are no one's now.
        self.abandoned: set[str] = set()

    def _move(self, to: VerdictState) -> None:
        if to not in _VERDICT_MOVES[self.state]:
            raise IllegalMove("verdict", self.state, to)
        self.state = to

    def timed_out(self, now: float) -> None:
        """The probe went unanswered and the server is taken as legacy: provisionally,
        unless this server's era was corrected once already."""
        if self.state is VerdictState.FINAL:
            self._move(VerdictState.PROVISIONAL)
            self.provisional = Provisional(now)

    def unconfirmed(self, now: float) -> None:
        """The server was taken as legacy without its word (the era pinned or remembered):
        provisional until it answers, so that a modern-only server's refusal of `initialize`
        is seen."""
        self.timed_out(now)

    def keep(self, inbound: Inbound) -> None:
        """A client message reaching a handler chosen on the provisional verdict: kept for
        the handler of the server's true era, should it show itself."""
        assert self.provisional is not None
        if not self.provisional.keep(inbound):
            self.ctx.log("info", "era.final", side=SERVER, era="legacy",
                         reason="too many client messages since the probe's timeout")
            self.end()

    def end(self) -> None:
        """The server answered like a legacy server (or kept silent too long): the verdict
        is final."""
        self._move(VerdictState.FINAL)
        self.provisional = None

    def shown(self, inbound: Inbound, probe: Probe, asked: str | None) -> Overturn | bool:
        """What an answer from the server shows while the verdict is provisional (`asked`:
        the method of the handler's request it answers): the Overturn when the server is
        modern after all; else whether the answer was the lifecycle's (the probe's, come
        late with nothing new). A result to anything else shows it serves legacy requests,
        and the verdict is final."""
        message = inbound.message
        if probe.is_late_answer(inbound):
            overturn = probe.late(message)
            if overturn is None:
                self.ctx.log("info", "probe.late_answer")
                self.end()
                return True
            return overturn
        overturn = refused_initialize(message, asked)
        if overturn is None:
            if "result" in message:
                self.end()
            return False
        return overturn

    def correct(self, overturn: Overturn, mode: str | None,
                pending: Iterable[str]) -> tuple[list[Inbound], ClientSession | None]:
        """The server is modern after all: what the client said since the timeout (to be
        replayed, but for what was answered) and the session the dropped handler was given
        to re-open. `mode` and `pending`: the dropped handler's mode and requests at the
        server, whose answers are then absorbed."""
        provisional = self.provisional
        assert provisional is not None
        kept = provisional.replay()
        self.ctx.log("warning", "era.corrected", side=SERVER, was="legacy", era="modern",
                     reason=overturn.why, after_s=round(self.ctx.now - provisional.since, 3),
                     mode=mode, replayed=len(kept))
        self._move(VerdictState.CORRECTED)
        self.provisional = None
        self.abandoned = set(pending)
        return kept, provisional.session

    def absorbed(self, inbound: Inbound) -> bool:
        """Whether this is an answer to a request of the handler an overturned verdict
        dropped: its client request was replayed to the new handler, which answers it."""
        if inbound.kind != "response":
            return False
        answer_id = inbound.message["id"]
        if not isinstance(answer_id, str) or answer_id not in self.abandoned:
            return False
        self.abandoned.discard(answer_id)
        self.ctx.debug("message.absorbed", side=SERVER, reason="asked by an overturned handler")
        return True

    def server_gone(self) -> None:
        """Nothing more can overturn the verdict, nor answer the dropped handler."""
        if self.state is VerdictState.PROVISIONAL:
            self.end()
        self.abandoned = set()

    def server_started(self) -> None:
        """A new server process: its era is yet to be found, and may be corrected once."""
        if self.state is VerdictState.CORRECTED:
            self._move(VerdictState.FINAL)
