"""The session's phase as a machine of its own (phase.py): what ends each phase, driven
directly (the lifecycle's transcripts are in test_client_leaving.py and test_restarts.py)."""

from __future__ import annotations

import pytest

from bridge.core.config import CoreConfig
from bridge.core.phase import Phase, PhaseDue, SessionPhase, StartFailure
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers


def phase_of() -> Phase:
    return Phase(CoreConfig(drain_timeout=4.0, probe_timeout=3.0), Timers())


def test_asked_to_close_it_drains_for_the_grace_once() -> None:
    phase = phase_of()
    phase.close(2.0)
    assert phase.closing and phase.state is SessionPhase.CLOSING
    phase.drain(10.0)
    phase.drain(11.0)  # the drain already runs
    assert list(phase.timers.pop_due(12.0)) == [Deadline(None, PhaseDue.DRAIN)]
    assert phase.end_reason() == "mcp-rosetta is shutting down"


def test_the_client_closing_its_input_drains_for_drain_timeout() -> None:
    phase = phase_of()
    phase.close(2.0)
    phase.move(SessionPhase.DRAINING)
    phase.drain(10.0)
    assert phase.timers.next_deadline() == 14.0
    assert phase.end_reason() == "the client closed its input"


def test_a_failure_waits_probe_timeout_for_a_request_or_ends_once_told() -> None:
    phase = phase_of()
    phase.fail(StartFailure("gone", {"source": "mcp-rosetta"}), 1.0)
    assert (phase.state, phase.closing) == (SessionPhase.FAILED, False)
    assert phase.timers.next_deadline() == 4.0
    phase.failure_told(2.0)
    assert list(phase.timers.pop_due(2.0)) == [Deadline(None, PhaseDue.FAILED)]


def test_nothing_moves_a_stopped_session() -> None:
    phase = phase_of()
    phase.move(SessionPhase.STOPPED)
    with pytest.raises(IllegalMove, match="session: STOPPED -> CLOSING"):
        phase.close(1.0)
