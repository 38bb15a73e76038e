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
    node_elsewhere,
    node_named,
    node_of,
    process_of,
    route_for,
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


NODE = "http://10.0.0.2:8808"


def test_in_a_fleet_a_route_names_the_node_and_the_process() -> None:
    assert route_for("", "") == "" and route_for("", "2") == "2"  # outside a fleet: as before
    first, second = route_for(NODE, ""), route_for(NODE, "2")
    assert first == "aHR0cDovLzEwLjAuMC4yOjg4MDg!" and second == first + "2"
    for route, process in ((first, ""), (second, "2")):
        state = seal(SECRET, key="c1", nonce="n1", digest="d", expires=60.0, route=route)
        assert route_of(state) == route
        retry = call(requestState=state)
        assert (route_named(retry), node_named(retry)) == (process, NODE)
        assert (process_of(route), node_of(route)) == (process, NODE)
        assert unseal(SECRET, state) == {"k": "c1", "n": "n1", "d": "d", "x": 60000}


def test_a_route_s_node_is_sealed_and_a_route_naming_none_names_no_node() -> None:
    state = seal(SECRET, key="c1", nonce="n1", digest="d", expires=60.0,
                 route=route_for(NODE, "1"))
    other = route_for("http://10.0.0.3:8808", "1")
    moved = "rs1." + other + state[len("rs1." + route_for(NODE, "1")):]
    assert node_named(call(requestState=moved)) == "http://10.0.0.3:8808"
    assert unseal(SECRET, moved) is None  # the core that opens it sees the change
    assert node_of("3") is None and node_of("") is None
    assert node_of("@@@!1") is None and node_of("_w!1") is None  # no base64url, no UTF-8
    assert node_named(call(requestState=7)) is None and node_named(call()) is None


A, B = NODE, "http://10.0.0.3:8808"


def sealed(route: str) -> str:
    return seal(SECRET, key="c1", nonce="n1", digest="d", expires=60.0, route=route)


def retry_call(method: str = "tools/call", **params: Any) -> dict[str, Any]:
    return {**call({"elicitation": {}}, **params), "method": method}


def test_in_a_fleet_a_retry_of_a_call_parked_at_another_node_goes_there() -> None:
    assert node_elsewhere(retry_call(requestState=sealed(route_for(B, ""))), A) == B
    assert node_elsewhere(retry_call(requestState=sealed(route_for(B, "3"))), A) == B
    retry = retry_call(requestState=sealed(route_for(B, "1")), inputResponses={"q": {}})
    assert node_elsewhere(retry, A) == B


def test_in_a_fleet_everything_else_is_taken_where_it_landed() -> None:
    here = node_elsewhere
    assert here(retry_call(requestState=sealed(route_for(A, "2"))), A) is None  # this node's
    assert here(retry_call(requestState=sealed("2")), A) is None  # sealed outside a fleet
    assert here(retry_call(requestState=sealed("")), A) is None
    assert here(retry_call(), A) is None  # a first call
    assert here(retry_call(requestState=7), A) is None  # the core refuses it
    assert here(retry_call("tools/list", requestState=sealed(route_for(B, ""))), A) is None
    assert here({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, A) is None
