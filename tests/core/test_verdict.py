"""The legacy verdict as a machine of its own (verdict.py): provisional from the probe's
timeout, final once the server answers like a legacy one, corrected once per server when it
shows itself modern, driven directly (the lifecycle's transcripts are in test_probe.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.context import Context, counter_ids
from bridge.core.events import Log
from bridge.core.handover import ModernClientSession
from bridge.core.jsonrpc import Inbound
from bridge.core.probe import Probe
from bridge.core.provisional import KEEP_AT_MOST, Overturn
from bridge.core.states import IllegalMove
from bridge.core.timers import Timers
from bridge.core.verdict import Verdict, VerdictState
from tests.core.harness import DISCOVER_RESULT

Message = dict[str, Any]
REFUSED = {"code": -32022, "message": "Unsupported protocol version",
           "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}


def timed_out() -> tuple[Verdict, Probe]:
    """A probe sent at 0 and unanswered at 5 s: the verdict provisional."""
    ctx = Context(CoreConfig(), counter_ids())
    probe = Probe(ctx, Timers())
    probe.start(skip=False)
    ctx.now = 5.0
    probe.on_timeout()
    verdict = Verdict(ctx)
    verdict.timed_out(ctx.now)
    ctx.actions = []
    return verdict, probe


def response(id: str, **answer: Any) -> Inbound:
    return Inbound("response", {"jsonrpc": "2.0", "id": id, **answer})


def logged(verdict: Verdict) -> list[tuple[str, dict[str, object]]]:
    return [(a.event, a.fields) for a in verdict.ctx.actions if isinstance(a, Log)]


def test_the_probes_timeout_makes_the_verdict_provisional() -> None:
    verdict, _ = timed_out()
    assert verdict.state is VerdictState.PROVISIONAL
    assert verdict.provisional is not None and verdict.provisional.since == 5.0


def test_a_result_to_any_request_of_the_handler_makes_it_final() -> None:
    verdict, probe = timed_out()
    assert verdict.shown(response("rosetta-2", result={}), probe, "initialize") is False
    assert (verdict.state, verdict.provisional) == (VerdictState.FINAL, None)


def test_an_error_that_names_nothing_modern_leaves_it_provisional() -> None:
    verdict, probe = timed_out()
    error = {"code": -32601, "message": "Method not found"}
    assert verdict.shown(response("rosetta-2", error=error), probe, "tools/list") is False
    assert verdict.state is VerdictState.PROVISIONAL


def test_initialize_refused_the_modern_way_overturns_it() -> None:
    verdict, probe = timed_out()
    shown = verdict.shown(response("rosetta-2", error=REFUSED), probe, "initialize")
    assert shown == Overturn("it answered initialize with error -32022 naming 2026-07-28 as "
                             "supported")
    assert verdict.state is VerdictState.PROVISIONAL  # until the lifecycle corrects it


def test_the_probes_late_discover_result_overturns_it() -> None:
    verdict, probe = timed_out()
    shown = verdict.shown(response("rosetta-1", result=DISCOVER_RESULT), probe, None)
    assert shown == Overturn("a DiscoverResult arrived after the probe's timeout",
                             discover=DISCOVER_RESULT)


def test_the_probes_late_legacy_answer_is_taken_and_makes_it_final() -> None:
    verdict, probe = timed_out()
    error = {"code": -32601, "message": "Method not found"}
    assert verdict.shown(response("rosetta-1", error=error), probe, None) is True
    assert verdict.state is VerdictState.FINAL
    assert logged(verdict) == [("probe.late_answer", {})]


def test_a_correction_replays_what_was_kept_and_absorbs_the_dropped_handlers_answers() -> None:
    verdict, _ = timed_out()
    assert verdict.provisional is not None
    session = ModernClientSession([])
    verdict.provisional.session = session
    call = Inbound("request", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    verdict.keep(call)
    verdict.ctx.now = 7.5
    kept, handed = verdict.correct(Overturn("late"), "A", ["rosetta-2"])
    assert [inbound.message for inbound in kept] == [call.message]
    assert handed is session
    assert (verdict.state, verdict.provisional) == (VerdictState.CORRECTED, None)
    assert logged(verdict) == [("era.corrected", {
        "side": "server", "was": "legacy", "era": "modern", "reason": "late", "after_s": 2.5,
        "mode": "A", "replayed": 1})]
    assert verdict.absorbed(response("rosetta-3", result={})) is False
    assert verdict.absorbed(response("rosetta-2", result={})) is True
    assert verdict.absorbed(response("rosetta-2", result={})) is False  # once


def test_a_corrected_server_is_not_made_provisional_again_until_another_starts() -> None:
    verdict, _ = timed_out()
    verdict.correct(Overturn("late"), None, ())
    verdict.timed_out(9.0)  # the probe asked again went unanswered too
    assert (verdict.state, verdict.provisional) == (VerdictState.CORRECTED, None)
    verdict.server_gone()
    verdict.server_started()
    verdict.timed_out(20.0)
    assert verdict.state is VerdictState.PROVISIONAL


def test_a_server_gone_ends_a_provisional_verdict_and_forgets_the_abandoned_ids() -> None:
    verdict, _ = timed_out()
    verdict.server_gone()
    assert (verdict.state, verdict.abandoned) == (VerdictState.FINAL, set())


def test_too_many_kept_messages_make_it_final() -> None:
    verdict, _ = timed_out()
    for n in range(KEEP_AT_MOST + 1):
        verdict.keep(Inbound("notification", {"jsonrpc": "2.0", "method": f"n/{n}"}))
    assert verdict.state is VerdictState.FINAL
    assert logged(verdict) == [("era.final", {
        "side": "server", "era": "legacy",
        "reason": "too many client messages since the probe's timeout"})]


def test_a_move_the_table_forbids_is_an_illegal_move() -> None:
    verdict = Verdict(Context(CoreConfig(), counter_ids()))
    with pytest.raises(IllegalMove, match="verdict: FINAL -> FINAL"):
        verdict.end()
