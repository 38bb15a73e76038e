"""Mode B: every message the bridge sends the modern client names the client request it
belongs to (`Send.request`), so a transport with a stream per request can route it.

Bridge-minted ids are read from what the server was sent, never written out here.
"""

from __future__ import annotations

from typing import Any

from bridge.core.events import Action, Send
from tests.core.harness import (
    LEGACY_INIT_RESULT,
    answer,
    fail,
    mode_b,
    modern,
    one,
    request,
    restarted,
    sent,
)

ALL_INPUTS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
CALL_PARAMS = {"name": "login", "arguments": {"team": "core"}}
ELICIT = {"message": "Username?",
          "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
ACCEPT = {"action": "accept", "content": {"name": "octocat"}}
DONE = {"content": [{"type": "text", "text": "hi octocat"}]}


def to_client(actions: list[Action]) -> list[Send]:
    return [a for a in actions if isinstance(a, Send) and a.side == "client"]


def only(actions: list[Action]) -> Send:
    sends = to_client(actions)
    assert len(sends) == 1, sends
    return sends[0]


def call(id: Any, meta: Any = None, **extra: Any) -> dict[str, Any]:
    return modern(id, "tools/call", {**CALL_PARAMS, **extra}, caps=ALL_INPUTS, meta=meta)


def notify(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def progress_of(forwarded: dict[str, Any]) -> dict[str, Any]:
    token = forwarded["params"]["_meta"]["progressToken"]
    return notify("notifications/progress", {"progressToken": token, "progress": 1})


def test_answers_name_the_request_they_answer() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern("list", "tools/list")), "server")
    assert only(h.server(answer(forwarded, {"tools": []}))).request == "list"
    forwarded = one(h.client(modern(5, "prompts/list")), "server")
    relayed = only(h.server(fail(forwarded, -32603, "broken")))
    assert relayed.message["error"]["message"] == "broken"
    assert relayed.request == 5
    legacy = one(h.client(call(6)), "server")
    assert only(h.server(answer(legacy, DONE))).request == 6


def test_the_bridges_own_errors_name_the_request_they_answer() -> None:
    h, _ = mode_b()
    refused = only(h.client(request(8, "tools/list", {})))  # no envelope
    assert refused.message["error"]["code"] == -32602
    assert refused.request == 8
    removed = only(h.client(modern(9, "logging/setLevel", {"level": "info"})))
    assert removed.message["error"]["code"] == -32601
    assert removed.request == 9


def test_an_input_required_result_names_the_round_it_answers_and_the_result_the_retry() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call("first")), "server")
    h.server(request(42, "elicitation/create", ELICIT))
    parked = only(h.advance(0.05))
    assert parked.message["result"]["resultType"] == "input_required"
    assert parked.request == "first"
    state = parked.message["result"]["requestState"]
    assert to_client(h.client(call("retry", inputResponses={"q1": ACCEPT},
                                   requestState=state))) == []
    assert only(h.server(answer(legacy, DONE))).request == "retry"


def test_progress_names_the_request_in_flight() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(3, "resources/list", meta={"progressToken": "p"})), "server")
    relayed = only(h.server(progress_of(forwarded)))
    assert relayed.message["params"]["progressToken"] == "p"
    assert relayed.request == 3


def test_a_calls_progress_follows_its_round_in_progress() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call("r1", meta={"progressToken": 1})), "server")
    assert only(h.server(progress_of(legacy))).request == "r1"
    h.server(request(42, "elicitation/create", ELICIT))
    state = only(h.advance(0.05)).message["result"]["requestState"]
    assert to_client(h.server(progress_of(legacy))) == []  # parked: no request owns it
    h.client(call("r2", meta={"progressToken": 2}, inputResponses={"q1": ACCEPT},
                  requestState=state))
    relayed = only(h.server(progress_of(legacy)))
    assert relayed.message["params"]["progressToken"] == 2
    assert relayed.request == "r2"


def test_a_log_names_the_request_in_flight_that_asked_for_its_level() -> None:
    h, _ = mode_b()
    h.client(modern(1, "tools/list"))  # asks for no logs
    h.client(modern(2, "tools/list", meta={"io.modelcontextprotocol/logLevel": "error"}))
    h.client(modern(3, "prompts/list", meta={"io.modelcontextprotocol/logLevel": "debug"}))
    log = notify("notifications/message", {"level": "info", "data": "x"})
    assert only(h.server(log)).request == 3  # below error: only request 3 asked for it
    log = notify("notifications/message", {"level": "error", "data": "y"})
    assert only(h.server(log)).request == 2  # the first in flight that asked for it


def listen(id: Any, **wanted: Any) -> dict[str, Any]:
    return modern(id, "subscriptions/listen", {"notifications": wanted})


def test_a_listen_streams_messages_name_its_listen_request() -> None:
    h, _ = mode_b()
    acknowledged = only(h.client(listen("s", toolsListChanged=True)))
    assert acknowledged.message["method"] == "notifications/subscriptions/acknowledged"
    assert acknowledged.request == "s"
    changed = only(h.server({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    assert changed.request == "s"
    end = only(h.shutdown())
    assert end.message["result"]["resultType"] == "complete"
    assert end.request == "s"


def test_resource_updates_name_the_stream_that_subscribed() -> None:
    h, _ = mode_b()
    subscribe = one(h.client(listen(4, resourceSubscriptions=["file:///a"])), "server")
    assert only(h.server(answer(subscribe, {}))).request == 4  # the acknowledgement
    update = notify("notifications/resources/updated", {"uri": "file:///a"})
    assert only(h.server(update)).request == 4


def test_a_stream_at_a_restarted_server_is_told_of_changes_on_its_own_request() -> None:
    h, _ = mode_b()
    h.client(listen(1, toolsListChanged=True))
    h.client(listen("two", promptsListChanged=True))
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    initialize = one(h.server(fail(probe, -32601, "Method not found")), "server")
    _initialized, ping = sent(h.server(answer(initialize, LEGACY_INIT_RESULT)), "server")
    told = to_client(h.server(answer(ping, {})))
    assert [(s.message["method"], s.request) for s in told] == [
        ("notifications/tools/list_changed", 1), ("notifications/prompts/list_changed", "two")]
