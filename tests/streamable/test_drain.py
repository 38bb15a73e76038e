"""The drain's rules: which stage follows which, what each stage refuses, when it is over."""

from __future__ import annotations

import orjson
import pytest

from bridge.core.states import IllegalMove
from bridge.streamable.drain import (
    Ask,
    NodeStage,
    ask_of,
    drained,
    moved,
    only_listens,
    refusal,
    takes,
)

SERVING, DRAINING, STOPPING = NodeStage.SERVING, NodeStage.DRAINING, NodeStage.STOPPING


def test_a_node_drains_then_stops_and_never_serves_again() -> None:
    assert moved(SERVING, DRAINING) is DRAINING
    assert moved(DRAINING, STOPPING) is STOPPING
    assert moved(SERVING, STOPPING) is STOPPING  # no drain (drain_grace = 0)
    for now, to in ((DRAINING, SERVING), (STOPPING, SERVING), (STOPPING, DRAINING),
                    (DRAINING, DRAINING), (STOPPING, STOPPING)):
        with pytest.raises(IllegalMove):
            moved(now, to)


@pytest.mark.parametrize(("stage", "ask", "status"), [
    (SERVING, Ask.NEW, None), (SERVING, Ask.HELD, None),
    (DRAINING, Ask.NEW, 503), (DRAINING, Ask.HELD, None),
    (STOPPING, Ask.NEW, 503), (STOPPING, Ask.HELD, 503),
    (SERVING, Ask.ANSWER, None), (DRAINING, Ask.ANSWER, None), (STOPPING, Ask.ANSWER, None)])
def test_what_each_stage_serves(stage: NodeStage, ask: Ask, status: int | None) -> None:
    reply = refusal(stage, ask, 9)
    assert (None if reply is None else reply.status) == status
    if reply is not None:
        assert ("retry-after", "1") in reply.headers
        assert orjson.loads(reply.body)["id"] == 9


def test_a_draining_node_names_its_drain_and_a_stopping_one_its_stop() -> None:
    new = refusal(DRAINING, Ask.NEW, 1)
    assert new is not None and "draining" in orjson.loads(new.body)["error"]["message"]
    held = refusal(STOPPING, Ask.HELD, 1)
    assert held is not None
    assert "initialize again" in orjson.loads(held.body)["error"]["message"]


def test_a_node_being_stopped_takes_only_the_tenants_it_holds_until_it_stops() -> None:
    assert [takes(stage, held=held) for stage in (SERVING, DRAINING, STOPPING)
            for held in (False, True)] == [True, True, False, True, False, False]


def test_a_client_s_answer_and_a_delete_are_taken_to_the_end() -> None:
    assert ask_of("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}) is Ask.HELD
    assert ask_of("GET", None) is Ask.HELD
    assert ask_of("POST", {"jsonrpc": "2.0", "id": "q", "result": {}}) is Ask.ANSWER
    assert ask_of("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled"}) \
        is Ask.ANSWER
    assert ask_of("POST", [{"jsonrpc": "2.0", "id": "q", "result": {}}]) is Ask.ANSWER
    assert ask_of("DELETE", None) is Ask.ANSWER


def test_a_drain_waits_for_no_stream_that_only_listens() -> None:
    assert only_listens("GET", None)  # a legacy session's GET stream
    assert only_listens("POST", "subscriptions/listen")
    assert not only_listens("POST", None)  # not read yet: waited for
    assert not only_listens("POST", "tools/call")
    assert not only_listens("DELETE", None)


def test_the_drain_is_over_once_no_request_is_under_way_and_no_call_is_held() -> None:
    assert drained(0, 0)
    assert not drained(1, 0)
    assert not drained(0, 1)
