"""A requestState's envelope in a fleet: it names the node that holds the call and that
node's life, for one credential, under the fleet's key; anything else is refused."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.fleet import states
from bridge.fleet.keys import derive
from bridge.fleet.states import Elsewhere, Here, Lost

KEY = derive(b"k" * 32).states
A, B = "http://10.0.0.2:8808", "http://10.0.0.3:8808"
LIFE = "aaaaaaaaaaa"
STATE = "tools/call:wizard#Zm9v.bar~baz"  # a server's own: any characters, dots too


def test_the_node_that_issued_a_state_in_this_life_opens_it_to_the_server_s_own() -> None:
    value = states.wrap(KEY, A, LIFE, "c0ffee", STATE)
    assert value.startswith("rf1.") and value.endswith("." + STATE)
    assert states.place(KEY, value, "c0ffee", A, LIFE) == Here(STATE)


def test_another_node_is_told_which_node_holds_the_call() -> None:
    value = states.wrap(KEY, A, LIFE, None, STATE)
    assert states.place(KEY, value, None, B, "bbbbbbbbbbb") == Elsewhere(A)


def test_the_same_node_in_a_later_life_knows_the_call_ended_with_the_earlier() -> None:
    value = states.wrap(KEY, A, LIFE, None, STATE)
    assert states.place(KEY, value, None, A, "ccccccccccc") is Lost.RESTARTED
    assert Lost.RESTARTED.value == "ended"


def test_a_state_that_is_no_envelope_is_left_to_whoever_issued_it() -> None:
    assert states.place(KEY, STATE, None, A, LIFE) is None
    assert states.place(KEY, "rs1.eyJrIjoiYyJ9.tag", None, A, LIFE) is None


def _swap(value: str, index: int, part: str) -> str:
    parts = value[len("rf1."):].split(".", 3)
    parts[index] = part
    return "rf1." + ".".join(parts)


@pytest.mark.parametrize("altered", [
    _swap(states.wrap(KEY, A, LIFE, None, STATE), 0, "aHR0cDovLzEwLjAuMC45Ojg4MDg"),  # a node
    _swap(states.wrap(KEY, A, LIFE, None, STATE), 1, "zzzzzzzzzzz"),  # another life
    _swap(states.wrap(KEY, A, LIFE, None, STATE), 2, "A" * 22),  # another tag
    _swap(states.wrap(KEY, A, LIFE, None, STATE), 3, STATE + "x"),  # another state
    _swap(states.wrap(KEY, A, LIFE, None, STATE), 0, "!!"),  # no base64url
    states.wrap(derive(b"o" * 32).states, A, LIFE, None, STATE),  # another fleet's
    states.wrap(derive(b"k" * 32).passes, A, LIFE, None, STATE),  # this fleet's other key
    "rf1.only.three",
    "rf1.",
])
def test_an_envelope_altered_or_not_this_fleet_s_is_tampered_with(altered: str) -> None:
    assert states.place(KEY, altered, None, A, LIFE) is Lost.TAMPERED
    assert states.place(KEY, altered, None, B, LIFE) is Lost.TAMPERED  # never forwarded


def test_an_envelope_issued_to_one_credential_opens_for_no_other() -> None:
    value = states.wrap(KEY, A, LIFE, "c0ffee", STATE)
    assert states.place(KEY, value, "decaf", A, LIFE) is Lost.TAMPERED
    assert states.place(KEY, value, None, B, LIFE) is Lost.TAMPERED
    shared = states.wrap(KEY, A, LIFE, None, STATE)  # no tokens: every client is one
    assert states.place(KEY, shared, None, A, LIFE) == Here(STATE)
    assert states.place(KEY, shared, "c0ffee", A, LIFE) is Lost.TAMPERED


def test_a_state_of_any_characters_survives_its_envelope() -> None:
    for state in ("", ".", "a.b.c.d", "é~!\u2603", "rf1.nested.envelope.x"):
        value = states.wrap(KEY, A, LIFE, None, state)
        assert states.place(KEY, value, None, A, LIFE) == Here(state)


def input_required(state: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "result": {
        "resultType": "input_required", "requestState": state,
        "inputRequests": {"q": {"method": "elicitation/create", "params": {}}}}}


def test_an_input_required_answer_gives_its_state_and_takes_another_in_a_copy() -> None:
    answer = input_required(STATE)
    assert states.issued(answer) == STATE
    given = states.reissued(answer, "wrapped")
    assert given == {**answer, "result": {**answer["result"], "requestState": "wrapped"}}
    assert answer["result"]["requestState"] == STATE  # the core's own message is untouched


@pytest.mark.parametrize("answer", [
    {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "requestState": "s"}},
    {"jsonrpc": "2.0", "id": 3, "result": {"content": []}},
    {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no"}},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
    input_required(None),
    input_required(7),
    {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required",
                                           "inputRequests": {}}},  # inputRequests alone
])
def test_no_other_answer_gives_a_state(answer: dict[str, Any]) -> None:
    assert states.issued(answer) is None


def test_a_retry_echoes_its_state_and_the_server_gets_its_own_back() -> None:
    retry = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "wizard", "requestState": "rf1.x", "inputResponses": {}}}
    assert states.echoed(retry) == "rf1.x"
    states.unwrapped(retry, STATE)
    assert retry["params"] == {"name": "wizard", "requestState": STATE, "inputResponses": {}}
    assert states.echoed({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": "x"}}) is None
    assert states.echoed({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"requestState": 1}}) is None
    assert states.echoed({"jsonrpc": "2.0", "id": 5, "method": "ping"}) is None
