"""The client leaving: what it is still owed decides whether the bridge drains or stops now.

A client that closed its input is owed the answers to its requests, and nothing else (not
the probe's answer: that question is the bridge's own). A client that cannot read any more
(its end closed or reset) is owed nothing that could reach it: the bridge stops at once.
"""

from __future__ import annotations

from bridge.core.config import CoreConfig
from bridge.core.events import Action, Stop
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    initialize,
    mode_a,
    one,
    request,
    sent,
)


def stops(actions: list[Action]) -> list[int]:
    return [a.code for a in actions if isinstance(a, Stop)]


def logged(h: Harness, event: str) -> int:
    return sum(1 for log in h.logs if log.event == event)


def test_a_client_that_closes_before_the_probe_is_answered_ends_the_session_at_once() -> None:
    h = Harness()
    one(h.start(), "server")  # the probe, never answered
    assert stops(h.close("client")) == [0]
    assert logged(h, "client.closed") == 1


def test_a_ping_answered_before_the_mode_is_known_is_not_owed_after_the_close() -> None:
    h = Harness()
    one(h.start(), "server")
    pong = one(h.client(request(7, "ping")), "client")
    assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert stops(h.close("client")) == [0]


def test_a_request_held_for_the_mode_is_owed_until_the_probe_settles_it() -> None:
    h = Harness(CoreConfig(drain_timeout=30))
    probe = one(h.start(), "server")
    assert sent(h.client(initialize(id="init")), "server") == []  # held for the mode
    assert stops(h.close("client")) == []
    actions = h.server(answer(probe, DISCOVER_RESULT))
    assert one(actions, "client")["id"] == "init"
    assert stops(actions) == [0]


def test_a_client_that_cannot_read_ends_the_session_without_a_drain() -> None:
    h, _ = mode_a(config=CoreConfig(drain_timeout=30))
    one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    actions = h.close("client", gone=True)
    assert stops(actions) == [0]
    # Exactly one response still: written to nobody, but the call is settled.
    failed = one(actions, "client")
    assert failed["id"] == 1 and failed["error"]["message"] == "the client is gone"
    assert logged(h, "client.gone") == 1 and h.bridge.next_deadline() is None


def test_a_closed_client_found_gone_while_draining_stops_the_drain() -> None:
    h, _ = mode_a(config=CoreConfig(drain_timeout=30))
    one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    assert stops(h.close("client")) == []  # draining: the answer is owed
    assert stops(h.close("client", gone=True)) == [0]  # a write to it failed: nobody reads
