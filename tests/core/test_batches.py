"""Transcripts of 2025-03-26 batches: every element kind, and what each owes in the answer array.

JSON-RPC 2.0 §6 and 2025-03-26 basic §Batching: a request gets one response, an invalid
element one error (under its id if it has a usable one), a notification or a response
nothing; the answers go back as one array once all are in, and nothing at all if none is owed.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.codec import MAX_DEPTH
from tests.core.harness import Harness, answer, legacy_pair, mode_a, one, request, sent

TOOLS = {"tools": []}


def note(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def invalid(id: Any, reason: str, code: int = -32600) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id,
            "error": {"code": code, "message": f"Invalid message: {reason}"}}


def batching() -> list[Any]:
    return [pytest.param(lambda: mode_a("2025-03-26")[0], id="A"),
            pytest.param(lambda: legacy_pair("2025-03-26")[0], id="P-legacy")]


@pytest.mark.parametrize("make", batching())
def test_an_invalid_element_with_an_id_is_answered_in_the_array(make: Any) -> None:
    h: Harness = make()
    actions = h.client([request(1, "tools/list"), request(2, "tools/call", [1, 2]),  # type: ignore[arg-type]
                        {"jsonrpc": "2.0", "id": 3}])
    forwarded = one(actions, "server")
    assert sent(actions, "client") == []
    reply = one(h.server(answer(forwarded, TOOLS)), "client")
    assert reply == [invalid(2, "params must be an object", -32602),
                     invalid(3, "neither method nor result nor error"),
                     {"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_a_malformed_response_element_owes_nothing_and_the_batch_completes(make: Any) -> None:
    h: Harness = make()
    actions = h.client([request(1, "tools/list"),
                        {"jsonrpc": "2.0", "id": "rosetta-99", "result": [1]},
                        {"jsonrpc": "2.0", "id": "rosetta-98", "result": {}, "error": {}}])
    reply = one(h.server(answer(one(actions, "server"), TOOLS)), "client")
    assert reply == [{"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_elements_without_ids_are_answered_with_id_null_at_once(make: Any) -> None:
    h: Harness = make()
    reply = one(h.client([1, {"jsonrpc": "2.0"}, note("notifications/initialized")]), "client")
    assert reply == [invalid(None, "a batch element must be a JSON object"),
                     invalid(None, "neither method nor result nor error")]


@pytest.mark.parametrize("make", batching())
def test_a_later_unrelated_error_is_never_delivered_inside_an_open_batch(make: Any) -> None:
    h: Harness = make()
    forwarded = one(h.client([request(1, "tools/list"), {"bad": True}]), "server")
    later = one(h.client(b"not json"), "client")  # the batch is still open
    assert later == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": later["error"]["message"]}}
    assert later["error"]["message"].startswith("Invalid message: not JSON")
    stray = one(h.client(request(7, "tools/call", "oops")), "client")  # type: ignore[arg-type]
    assert stray == invalid(7, "params must be an object")
    reply = one(h.server(answer(forwarded, TOOLS)), "client")
    assert reply == [invalid(None, 'missing "jsonrpc": "2.0"'),
                     {"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_notifications_and_responses_alone_get_no_array(make: Any) -> None:
    h: Harness = make()
    actions = h.client([note("notifications/initialized"),
                        {"jsonrpc": "2.0", "id": "rosetta-77", "result": {}}])
    assert sent(actions, "client") == []
    assert h.bridge.batches.open == []


@pytest.mark.parametrize("make", batching())
def test_a_request_cancelled_inside_the_batch_is_left_out_of_the_array(make: Any) -> None:
    h: Harness = make()
    actions = h.client([request(1, "tools/list"), request(2, "tools/call", {"name": "slow"}),
                        note("notifications/cancelled", {"requestId": 2})])
    first, _, cancel = sent(actions, "server")
    assert cancel["method"] == "notifications/cancelled"
    reply = one(h.server(answer(first, TOOLS)), "client")
    assert reply == [{"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_a_request_cancelled_later_releases_the_array(make: Any) -> None:
    h: Harness = make()
    first, _ = sent(h.client([request(1, "tools/list"), request(2, "tools/call",
                                                                {"name": "slow"})]), "server")
    assert sent(h.server(answer(first, TOOLS)), "client") == []
    reply = one(h.client(note("notifications/cancelled", {"requestId": 2})), "client")
    assert reply == [{"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_two_requests_with_the_same_id_both_land_in_the_array(make: Any) -> None:
    h: Harness = make()
    first, second = sent(h.client([request(1, "tools/list"), request(1, "prompts/list")]),
                         "server")
    assert sent(h.server(answer(second, {"prompts": []})), "client") == []
    reply = one(h.server(answer(first, TOOLS)), "client")
    assert reply == [{"jsonrpc": "2.0", "id": 1, "result": {"prompts": []}},
                     {"jsonrpc": "2.0", "id": 1, "result": TOOLS}]


@pytest.mark.parametrize("make", batching())
def test_shutdown_answers_an_open_batch_as_one_array(make: Any) -> None:
    h: Harness = make()
    h.client([request(1, "tools/call", {"name": "slow"}), request(2, "tools/list")])
    reply = one(h.shutdown(), "client")
    assert [(r["id"], r["error"]["code"]) for r in reply] == [(1, -32603), (2, -32603)]


@pytest.mark.parametrize("make", batching())
def test_an_element_nested_too_deep_is_refused_in_the_array_and_the_rest_served(
        make: Any) -> None:
    h: Harness = make()
    deep: Any = 0
    for _ in range(MAX_DEPTH):
        deep = [deep]
    forwarded = one(h.client([request(1, "tools/list"),
                              request(2, "tools/call", {"name": "t", "arguments": deep})]),
                    "server")
    reply = one(h.server(answer(forwarded, TOOLS)), "client")
    assert reply == [invalid(2, "nested deeper than 200 levels (mcp-rosetta's limit)"),
                     {"jsonrpc": "2.0", "id": 1, "result": TOOLS}]
