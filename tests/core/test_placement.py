"""Mode B's placement: where a modern client's request goes when the legacy server runs as a
pool of processes, and the route a parked call's requestState carries back to its process."""

from __future__ import annotations

from typing import Any

from bridge.core.modern_server_legacy_client.placement import (
    PENDING,
    Load,
    Need,
    Start,
    choose,
    idle,
    load_of,
    need_of,
    route_named,
)
from bridge.core.modern_server_legacy_client.request_state import route_of, seal, unseal

SECRET = b"k" * 32
FREE = Load(own_free=True, shared_free=True, calls=0)
HOLDING = Load(own_free=False, shared_free=False, calls=1)  # a call that may be asked, alone
SHARING = Load(own_free=False, shared_free=True, calls=2)  # calls that declared no input


def call(caps: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps or {}}
    return {"jsonrpc": "2.0", "id": "w1", "method": "tools/call",
            "params": {"name": "t", "_meta": meta, **params}}


def test_what_a_request_needs_of_the_pool() -> None:
    assert need_of(call()) is Need.SHARED
    assert need_of(call({"elicitation": {}})) is Need.OWN
    assert need_of(call({"sampling": {}, "experimental": {}})) is Need.OWN
    assert need_of(call({"roots": {}})) is Need.OWN
    assert need_of(call({"elicitation": {}}, requestState="rs1.x.y")) is Need.RETRY
    assert need_of({**call(), "method": "tools/list"}) is Need.FIRST
    assert need_of({**call(), "method": "subscriptions/listen"}) is Need.FIRST
    assert need_of({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}) is Need.FIRST


def test_a_call_that_may_be_asked_goes_to_a_free_process_or_starts_one_or_waits() -> None:
    assert choose(Need.OWN, [FREE], may_start=True) == 0
    assert choose(Need.OWN, [HOLDING, FREE], may_start=True) == 1
    assert choose(Need.OWN, [HOLDING, SHARING], may_start=True) is Start.NEW
    assert choose(Need.OWN, [HOLDING, None], may_start=False) is Start.WAIT


def test_a_call_that_declares_nothing_joins_any_process_not_held_by_one_that_may_be_asked() -> None:
    assert choose(Need.SHARED, [SHARING], may_start=False) == 0
    assert choose(Need.SHARED, [HOLDING, SHARING], may_start=True) == 1
    assert choose(Need.SHARED, [HOLDING], may_start=True) is Start.NEW


def test_no_pool_unless_the_first_process_serves_a_legacy_server() -> None:
    assert choose(Need.OWN, [None, FREE], may_start=True) == 0
    assert choose(Need.FIRST, [HOLDING, FREE], may_start=True) == 0


def test_before_its_mode_the_first_process_takes_the_first_request_and_calls_wait() -> None:
    assert choose(Need.OWN, [PENDING], may_start=True, first_asked=False) == 0
    assert choose(Need.OWN, [PENDING], may_start=True, first_asked=True) is Start.WAIT
    assert choose(Need.SHARED, [PENDING], may_start=True, first_asked=True) is Start.WAIT
    assert choose(Need.FIRST, [PENDING], may_start=True, first_asked=True) == 0


def test_a_process_is_idle_when_its_core_holds_no_call() -> None:
    assert idle(FREE) and not idle(HOLDING) and not idle(None)


def test_the_load_is_mode_b_s_alone() -> None:
    class B:
        mode = "B"

        def load(self) -> Load:
            return HOLDING

    class P:
        mode = "P"

    assert load_of(B()) is HOLDING
    assert load_of(P()) is None and load_of(None) is PENDING


def test_a_requeststate_names_its_route_and_a_changed_route_is_tampering() -> None:
    state = seal(SECRET, key="c1", nonce="n1", digest="d", expires=60.0, route="3")
    assert route_of(state) == "3"
    assert route_named(call(requestState=state)) == "3"
    assert unseal(SECRET, state) == {"k": "c1", "n": "n1", "d": "d", "x": 60000}
    moved = state.replace("rs1.3~", "rs1.4~")
    assert route_of(moved) == "4" and unseal(SECRET, moved) is None


def test_a_requeststate_without_a_route_is_as_before() -> None:
    state = seal(SECRET, key="c1", nonce="n1", digest="d", expires=60.0)
    assert "~" not in state and route_of(state) == ""
    assert unseal(SECRET, state) is not None
    assert route_of("rs1.abc.def") == "" and route_of("garbage~x") == ""
    assert route_named(call(requestState=7)) == ""
