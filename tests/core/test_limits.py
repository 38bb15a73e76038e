"""Transcripts of messages the bridge will not carry: nested too deep, or too long to read.

A request gets an error under its id; a response stands in as an error for whoever waits on
it (exactly one answer, and its correlation row is gone); anything else is a logged drop.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from bridge.core.codec import MAX_DEPTH, encode
from bridge.core.salvage import trailing
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    legacy_pair,
    mode_a,
    mode_b,
    modern,
    modern_pair,
    one,
    request,
    sent,
)

Message = dict[str, Any]

TOO_DEEP = "nested deeper than 200 levels (mcp-rosetta's limit)"
TOO_LONG = "longer than 1024 bytes (mcp-rosetta's max_message_bytes)"
SOURCE = {"source": "mcp-rosetta"}


def nest(depth: int) -> Any:
    """A value `depth` levels deep (arrays), so that {"x": nest(d)} as params makes a message
    d + 2 levels deep."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def deep_params(message_depth: int) -> Message:
    return {"x": nest(message_depth - 2)}


def refused(id: Any, reason: str) -> Message:
    return {"jsonrpc": "2.0", "id": id,
            "error": {"code": -32600, "message": f"Invalid message: {reason}"}}


def stand_in(id: Any, side: str, reason: str) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": {
        "code": -32603, "message": f"mcp-rosetta: the {side}'s answer is {reason}",
        "data": SOURCE}}


def logged(h: Harness, event: str) -> list[dict[str, Any]]:
    return [log.fields for log in h.logs if log.event == event]


def every_mode() -> list[Any]:
    return [pytest.param(lambda: mode_a()[0], id="A"), pytest.param(lambda: mode_b()[0], id="B"),
            pytest.param(lambda: legacy_pair()[0], id="P-legacy"),
            pytest.param(modern_pair, id="P-modern")]


def client_call(h: Harness, id: Any, params: Message) -> Message:
    """A tools/call in the client's era (modern ones carry the envelope)."""
    if h.bridge.mode == "B" or (h.bridge.mode == "P" and h.bridge.client_era == "modern"):
        return modern(id, "tools/call", params)
    return request(id, "tools/call", params)


# Nesting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", every_mode())
def test_a_request_nested_deeper_than_the_limit_is_refused_with_its_id(make: Any) -> None:
    h = make()
    actions = h.client(client_call(h, 7, {"name": "t", "arguments": deep_params(MAX_DEPTH)}))
    assert sent(actions, "client") == [refused(7, TOO_DEEP)]
    assert sent(actions, "server") == []
    assert logged(h, "message.too_deep") == [
        {"side": "client", "id": 7, "reason": TOO_DEEP, "outcome": "refused"}]


@pytest.mark.parametrize("make", every_mode())
def test_a_request_at_the_limit_is_carried(make: Any) -> None:
    h = make()
    message = client_call(h, 7, {"name": "t", "arguments": deep_params(MAX_DEPTH - 2)})
    forwarded = one(h.client(message), "server")
    assert forwarded["params"]["arguments"] == message["params"]["arguments"]
    orjson.dumps(forwarded)  # orjson itself can write it


def test_a_line_too_deep_for_any_parser_is_refused_with_the_id_read_from_its_bytes() -> None:
    h, _ = mode_a()
    line = b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"x":' \
        + b"[" * 5000 + b"]" * 5000 + b"}}"
    actions = h.client(line)
    assert sent(actions, "client") == [refused("deep", TOO_DEEP)]
    assert sent(actions, "server") == []


@pytest.mark.parametrize("make", every_mode())
def test_a_result_too_deep_answers_the_waiting_request_with_one_error(make: Any) -> None:
    h = make()
    forwarded = one(h.client(client_call(h, 5, {"name": "t"})), "server")
    actions = h.server(answer(forwarded, {"content": [], "x": nest(MAX_DEPTH)}))
    assert sent(actions, "client") == [stand_in(5, "server", TOO_DEEP)]
    # The row is gone: a second answer matches nothing.
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []
    assert logged(h, "response.unmatched")[-1]["id"] == forwarded["id"]


def test_a_server_request_too_deep_is_refused_with_its_id() -> None:
    h, _ = legacy_pair()
    actions = h.server(request(42, "sampling/createMessage", deep_params(MAX_DEPTH + 1)))
    assert sent(actions, "server") == [refused(42, TOO_DEEP)]
    assert sent(actions, "client") == []


def test_a_notification_too_deep_is_a_logged_drop() -> None:
    h, _ = mode_a()
    actions = h.server({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": nest(MAX_DEPTH)}})
    assert sent(actions, "client") == []
    assert logged(h, "message.too_deep") == [
        {"side": "server", "reason": TOO_DEEP, "outcome": "dropped"}]


def test_mode_b_nests_a_legacy_input_request_deeper_and_can_still_write_it() -> None:
    h, _ = mode_b()
    legacy = one(h.client(modern(1, "tools/call", {"name": "t"},
                                 caps={"elicitation": {}})), "server")
    assert legacy["method"] == "tools/call"
    schema = {"type": "object", "x": nest(MAX_DEPTH - 3)}  # the server's request: 200 deep
    asked = request(9, "elicitation/create", {"message": "m", "requestedSchema": schema})
    assert len(orjson.dumps(asked)) and sent(h.server(asked), "client") == []
    reply = one(h.advance(0.05), "client")
    round_ = reply["result"]["inputRequests"]["q1"]
    assert round_["params"]["requestedSchema"] == schema  # now 204 levels down: still writable
    assert orjson.loads(orjson.dumps(reply)) == reply


# Too long to read (MessageTooLarge) -------------------------------------------------------


def head_of(message: Message, size: int) -> bytes:
    return encode(message)[:size]


@pytest.mark.parametrize("make", every_mode())
def test_a_request_too_long_is_refused_under_the_id_its_head_shows(make: Any) -> None:
    h = make()
    message = client_call(h, "big-1", {"name": "t", "arguments": {"blob": "x" * 5000}})
    actions = h.too_large("client", head_of(message, 200))
    assert sent(actions, "client") == [refused("big-1", TOO_LONG)]
    assert sent(actions, "server") == []
    assert logged(h, "message.too_large") == [
        {"side": "client", "id": "big-1", "reason": TOO_LONG, "outcome": "refused"}]


@pytest.mark.parametrize("head", [
    # The only "id" is params' own: the top-level one lies beyond the head.
    b'{"jsonrpc":"2.0","method":"tools/call","params":{"id":5,"name":"t","arguments":{"b',
    # The id is cut off: 12 might have gone on to 123.
    b'{"jsonrpc":"2.0","method":"tools/call","id":12',
    # A string holding what looks like a top-level id.
    b'{"jsonrpc":"2.0","method":"tools/call","params":{"s":"\\"},\\"id\\":3,"',
    # A batch: no single id to answer.
    b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/',
])
def test_a_line_too_long_without_a_readable_id_is_answered_with_id_null(head: bytes) -> None:
    # JSON-RPC 2.0 §5: "If there was an error in detecting the id ... it MUST be Null".
    h, _ = mode_a()
    actions = h.too_large("client", head)
    assert sent(actions, "client") == [refused(None, TOO_LONG)]
    assert sent(actions, "server") == []
    assert logged(h, "message.too_large") == [
        {"side": "client", "reason": TOO_LONG, "outcome": "answered with id null"}]


def test_a_client_answer_too_long_without_a_readable_id_is_a_logged_drop() -> None:
    h, _ = mode_a()
    actions = h.too_large("client", b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","')
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert logged(h, "message.too_large") == [
        {"side": "client", "reason": TOO_LONG, "outcome": "dropped"}]


@pytest.mark.parametrize("make", every_mode())
def test_a_result_too_long_answers_the_waiting_request_and_ends_its_row(make: Any) -> None:
    h = make()
    forwarded = one(h.client(client_call(h, 5, {"name": "t"})), "server")
    huge = answer(forwarded, {"content": [{"type": "text", "text": "x" * 5000}]})
    actions = h.too_large("server", head_of(huge, 300))
    assert sent(actions, "client") == [stand_in(5, "server", TOO_LONG)]
    assert sent(actions, "server") == []
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []


@pytest.mark.parametrize("make", every_mode())
def test_a_result_whose_id_comes_last_is_answered_from_its_tail(make: Any) -> None:
    # The TypeScript SDK writes `id` last: {"result": {...}, "jsonrpc": "2.0", "id": ...}.
    h = make()
    forwarded = one(h.client(client_call(h, 5, {"name": "t"})), "server")
    tail = b'xxxx"}]},"jsonrpc":"2.0","id":' + encode(forwarded["id"]).rstrip(b"\n") + b"}"
    actions = h.too_large("server", b'{"result":{"content":[{"type":"text","text":"xxxxxxx',
                          tail=tail)
    assert sent(actions, "client") == [stand_in(5, "server", TOO_LONG)]
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []


def test_a_request_whose_id_comes_last_is_refused_under_it() -> None:
    h, _ = mode_a()
    actions = h.too_large("client", b'{"method":"tools/call","params":{"name":"t","arguments":',
                          tail=b'xxxx"}},"jsonrpc":"2.0","id":"big-9"}\r')
    assert sent(actions, "client") == [refused("big-9", TOO_LONG)]


@pytest.mark.parametrize("tail", [
    b'xxxxxx"}]}}',  # the id sits inside the result: not the message's own
    b'xxxx"},"id":5,"params":{"x":1}}',  # an object follows the id: the scan stops first
    b'xx","id":12',  # not the end of an object
])
def test_a_result_with_no_id_at_either_end_is_a_logged_drop(tail: bytes) -> None:
    h, _ = mode_a()
    one(h.client(request(5, "tools/call", {"name": "t"})), "server")
    actions = h.too_large("server", b'{"result":{"content":[{"type":"text","text":"xxxxxxx',
                          tail=tail)
    assert sent(actions, "client") == []
    assert logged(h, "message.too_large")[-1]["outcome"] == "dropped"


def test_a_server_notification_too_long_is_a_logged_drop() -> None:
    h, _ = mode_a()
    actions = h.too_large("server", b'{"jsonrpc":"2.0","method":"notifications/message","params')
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert logged(h, "message.too_large") == [
        {"side": "server", "reason": TOO_LONG, "outcome": "dropped"}]


def test_a_server_request_too_long_is_refused_with_its_id() -> None:
    h, _ = mode_b()
    actions = h.too_large("server", b'{"jsonrpc":"2.0","id":77,"method":"sampling/createMe')
    assert sent(actions, "server") == [refused(77, TOO_LONG)]
    assert sent(actions, "client") == []


def test_a_client_answer_too_long_fails_the_call_that_asked_for_it() -> None:
    h, _ = mode_a(caps={"elicitation": {}})
    forwarded = one(h.client(request(5, "tools/call", {"name": "login"})), "server")
    form = {"method": "elicitation/create",
            "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
    asked = one(h.server(answer(forwarded, {"resultType": "input_required",
                                            "inputRequests": {"k": form}})), "client")
    reply = encode(answer(asked, {"action": "accept"}))  # cut inside the result, whatever the id
    actions = h.too_large("client", reply[:reply.index(b"action")])
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32603,
        "message": "mcp-rosetta: input request 'k' (elicitation/create) failed: "
                   f"mcp-rosetta: the client's answer is {TOO_LONG}",
        "data": {"key": "k", "method": "elicitation/create",
                 "error": stand_in(asked["id"], "client", TOO_LONG)["error"]}}}]


def test_before_the_mode_is_known_a_request_too_long_is_refused() -> None:
    h = Harness()
    one(h.start(), "server")
    actions = h.too_large("client", b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{')
    assert sent(actions, "client") == [refused(0, TOO_LONG)]
    assert h.bridge.client_era is None  # the next request may still tell the era


def test_a_probe_answer_too_long_is_not_a_discover_result() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.too_large("server", head_of(answer(probe, DISCOVER_RESULT), 60))
    assert h.bridge.supervision.probe.era == "legacy"
    assert logged(h, "era.detected")[-1]["reason"] == "not a DiscoverResult"


@pytest.mark.parametrize(("tail", "members"), [
    (b'xx"}]},"jsonrpc":"2.0","id":"rosetta-5"}', {"jsonrpc": "2.0", "id": "rosetta-5"}),
    (b'xx"}]},"id":5,"jsonrpc":"2.0"} \r', {"id": 5, "jsonrpc": "2.0"}),
    (b'x"}], "id" : -12 , "a\\"b":"q\\\\"}', {"id": -12, 'a"b': "q\\"}),
    (b'"ok":true,"n":null,"id":12345678901234567890123}',
     {"ok": True, "n": None, "id": 12345678901234567890123}),
    (b'"id":5}', {"id": 5}),
    (b'5}', {}),  # a value with no key before it in the bytes
    (b'xx"}]}}', {}),
    (b'{"a":1', {}),
])
def test_the_members_at_the_end_of_an_object_are_read_backwards(
        tail: bytes, members: Message) -> None:
    assert trailing(tail) == members
