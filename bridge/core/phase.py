"""The session's phase: open, winding down (asked to, or the client closed its input), failed
(its server never served), stopped; and the deadlines that end each of them.

Must not decide when to stop: the lifecycle (bridge.py) moves this machine, asks it how long
to drain and why the session ends, and answers and stops itself.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.record import record
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers


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


class PhaseDue(Enum):
    """The phase's deadlines (owner None: each exists once)."""

    FAILED = "the wait for a first request after a failed start"
    DRAIN = "the drain"


_FAILED: Final = Deadline(None, PhaseDue.FAILED)
_DRAIN: Final = Deadline(None, PhaseDue.DRAIN)


@record(frozen=True)
class StartFailure:
    """Why a server that never served cannot be used: every request is answered with it."""

    reason: str
    data: Message


class Phase:
    """One session's phase, with what ends it: the drain's length, or the failure."""

    __slots__ = ("config", "failure", "grace", "state", "timers")

    def __init__(self, config: CoreConfig, timers: Timers) -> None:
        self.config = config
        self.timers = timers  # the lifecycle's
        self.state = SessionPhase.OPEN
        self.grace = 0.0  # the drain's length when CLOSING (DRAINING: drain_timeout)
        self.failure: StartFailure | None = None  # set with FAILED

    def move(self, to: SessionPhase) -> None:
        if to not in _PHASE_MOVES[self.state]:
            raise IllegalMove("session", self.state, to)
        self.state = to

    @property
    def closing(self) -> bool:
        """Asked to stop, or the client closed its input: the drain runs after each event."""
        return self.state is SessionPhase.CLOSING or self.state is SessionPhase.DRAINING

    def close(self, grace: float) -> None:
        """Asked to stop within `grace` seconds."""
        self.grace = grace
        self.move(SessionPhase.CLOSING)

    def fail(self, failure: StartFailure, now: float) -> None:
        """The server never served, and the client has asked nothing yet: its first request
        is told why, or probe_timeout passes, and the session ends."""
        self.failure = failure
        self.move(SessionPhase.FAILED)
        self.timers.schedule(_FAILED, now + self.config.probe_timeout)

    def failure_told(self, now: float) -> None:
        """The client was told why: the session ends after this event."""
        self.timers.schedule(_FAILED, now)

    def drain(self, now: float) -> None:
        """Something is still owed: the drain's deadline, unless it runs already."""
        if _DRAIN not in self.timers:
            length = self.config.drain_timeout if self.state is SessionPhase.DRAINING \
                else self.grace
            self.timers.schedule(_DRAIN, now + length)

    def end_reason(self) -> str:
        """Why a drained session ends."""
        return "the client closed its input" if self.state is SessionPhase.DRAINING \
            else self.config.shutdown_message
