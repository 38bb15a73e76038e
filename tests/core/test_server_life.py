"""The server's life as a machine of its own (server_life.py): its moves, its record, its
restart budget and its deadlines, driven directly (the lifecycle's transcripts are in
test_restarts.py)."""

from __future__ import annotations

import pytest

from bridge.core.config import CoreConfig
from bridge.core.context import Context, counter_ids
from bridge.core.events import Log, NotifyReady, RestartChild, Status
from bridge.core.restarts import Outage
from bridge.core.server_life import (
    EXIT_WAIT_S,
    NextStart,
    ServerDue,
    ServerLife,
    ServerRecord,
    ServerState,
)
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers


def life_of(config: CoreConfig | None = None) -> ServerLife:
    return ServerLife(Context(config or CoreConfig(), counter_ids()), Timers())


def serving(life: ServerLife) -> ServerLife:
    """Started, probed and serving, with a message seen: its actions so far dropped."""
    life.started()
    life.serving()
    life.record = ServerRecord.SERVED
    life.ctx.actions = []
    return life


def said(life: ServerLife) -> list[object]:
    """The actions so far, a log line as its event and fields."""
    return [(a.event, a.fields) if isinstance(a, Log) else a for a in life.ctx.actions]


def test_a_first_server_is_probed_and_ready_is_told_once() -> None:
    life = life_of()
    assert (life.state, life.record, life.served) == (ServerState.STARTING,
                                                       ServerRecord.NEVER_SERVED, False)
    assert life.started() is False  # probed
    life.serving()
    life.record = ServerRecord.SERVED
    life.take_restart(Outage(1))
    life.down(Outage(1), 1)
    life.restart("P")
    life.started()
    life.serving()
    assert [a for a in life.ctx.actions if isinstance(a, NotifyReady)] == [NotifyReady()]


def test_a_move_the_table_forbids_is_an_illegal_move() -> None:
    with pytest.raises(IllegalMove, match="server: STARTING -> SERVING"):
        life_of().serving()


def test_a_closed_output_waits_for_the_exit_status_once() -> None:
    life = serving(life_of())
    life.ctx.now = 10.0
    assert life.output_closed() is True
    assert life.output_closed() is False  # said once
    assert life.timers.next_deadline() == 10.0 + EXIT_WAIT_S
    assert said(life) == [("server.closed", {})]
    life.exit_known()
    assert life.timers.next_deadline() is None


def test_a_server_that_exits_cleanly_on_the_probe_is_started_once_unprobed() -> None:
    life = life_of()
    life.started()
    assert life.may_retry_unprobed(Outage(0)) is True
    assert life.may_retry_unprobed(Outage(1)) is False
    life.retry_unprobed(Outage(0))
    assert (life.state, life.record) == (ServerState.STARTING, ServerRecord.RETRIED_UNPROBED)
    assert said(life) == [
        ("child.restarted", {"code": 0, "reason": "exited with status 0", "attempt": 0,
                             "max_restarts": 5, "backoff_s": 0.0, "mode": None,
                             "probe": False}),
        Status("starting the server again without the probe it exited on, as a legacy "
               "server"),
        RestartChild()]
    assert life.started() is True  # unprobed, once
    assert life.may_retry_unprobed(Outage(0)) is False  # the one retry is used
    assert life.next_start is NextStart.PROBED


def test_a_server_that_never_served_fails_and_stays_down() -> None:
    life = life_of()
    life.started()
    reason, data = life.failed(Outage(3, stderr_tail=("boom",)))
    assert reason == ("mcp-rosetta: the server exited with status 3 before it answered "
                      "anything; run the server command by hand to see why. Its stderr ended "
                      "with: boom")
    assert data == {"source": "mcp-rosetta", "exitStatus": 3, "stderrTail": ["boom"]}
    assert life.state is ServerState.DOWN
    assert life.echoed(Outage(None)) is True  # the closed output of the same crash


def test_a_served_server_is_restarted_after_a_doubling_back_off() -> None:
    life = serving(life_of())
    delays = []
    for attempt in (1, 2, 3):
        assert life.echoed(Outage(1)) is False
        assert life.take_restart(Outage(1)) == attempt
        assert life.down(Outage(1), attempt) is False  # after the back-off
        assert life.echoed(Outage(None)) is True  # the second word: not counted
        delays.append(life.timers.next_deadline())
        assert list(life.timers.pop_due(life.ctx.now + 60)) == [Deadline(None, ServerDue.RESTART)]
        life.restart("P")
        assert life.state is ServerState.STARTING and life.outage is None
        life.started()
        life.serving()
    assert delays == [0.5, 1.0, 2.0]
    assert [a for a in life.ctx.actions if isinstance(a, Status)][-2:] == [
        Status("restarting the server: it exited with status 1 (restart 3 of at most 5 "
               "within 60 s)"),
        Status("serving; the server restarted 3 times")]


def test_a_server_lost_on_the_probe_is_restarted_at_once_and_unprobed() -> None:
    life = serving(life_of())
    life.take_restart(Outage(1))
    life.down(Outage(1), 1)
    life.restart("P")
    life.started()  # probing again
    assert life.take_restart(Outage(0)) == 2
    assert life.down(Outage(0), 2) is True  # at once
    life.restart(None)
    assert life.started() is True


def test_past_the_budget_it_gives_up_saying_so() -> None:
    life = serving(life_of(CoreConfig(max_restarts=1)))
    assert life.take_restart(Outage(2)) == 1
    life.down(Outage(2), 1)
    life.restart("A")
    life.started()
    life.serving()
    life.ctx.actions = []
    assert life.take_restart(Outage(2)) is None
    assert said(life) == [
        ("child.gave_up", {"code": 2, "reason": "exited with status 2", "max_restarts": 1,
                           "window_s": 60.0}),
        Status("stopped: the server exited with status 2 and has used up its 1 restarts")]
    assert life.gave_up(Outage(2)) == ("mcp-rosetta: the server exited with status 2 after 1 "
                                       "restarts within 60 s; mcp-rosetta gives up")
