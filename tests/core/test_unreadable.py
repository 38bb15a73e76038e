"""Transcripts of input the bridge cannot read whole, and of ids written as numbers with a
fraction or an exponent.

JSON-RPC 2.0 §5: an error goes under the request's id whenever the id can be detected, and
under id null only when it cannot. MCP's RequestId is a string or an integer, and JSON Schema
counts any number with a zero fractional part as an integer: `2.0` is a valid id, `2.5` is
not, and an answer carries the id spelled exactly as it came.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.codec import encode
from tests.core.harness import (
    Harness,
    answer,
    legacy_pair,
    mode_a,
    mode_b,
    modern_pair,
    one,
    request,
    sent,
)
from tests.core.test_limits import client_call, every_mode, logged, stand_in

Message = dict[str, Any]

NOT_UTF8 = "not JSON: not valid UTF-8 (RFC 8259 §8.1)"


def line_of(message: Message, **raw: bytes) -> bytes:
    """`message` as one line, each `raw` member's value replaced by the given JSON text."""
    text = encode(message).rstrip(b"\n")
    for key, value in raw.items():
        marker = encode(f"@{key}@").rstrip(b"\n")
        text = text.replace(marker, value)
    return text


def client_line(h: Harness, id_text: bytes, params: Message) -> bytes:
    return line_of(client_call(h, "@id@", params), id=id_text)


def wire(message: Any) -> bytes:
    return encode(message).rstrip(b"\n")


# Invalid UTF-8 ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", every_mode())
def test_a_request_with_invalid_utf8_in_a_string_is_answered_under_its_id(make: Any) -> None:
    h = make()
    line = client_line(h, b'"u-1"', {"name": "t", "arguments": {"s": "@bad@"}}) \
        .replace(b'"@bad@"', b'"caf\xe9"')
    actions = h.client(line)
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": "u-1", "error": {
        "code": -32700, "message": f"Invalid message: {NOT_UTF8}"}}]
    assert sent(actions, "server") == []
    assert logged(h, "message.invalid")[-1] == {
        "side": "client", "id": "u-1", "reason": NOT_UTF8, "outcome": "refused"}


def test_before_the_mode_is_known_invalid_utf8_is_answered_under_the_id() -> None:
    h = Harness()
    one(h.start(), "server")
    line = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":' \
        b'{"name":"\xff"}}}'
    assert sent(h.client(line), "client") == [{"jsonrpc": "2.0", "id": 0, "error": {
        "code": -32700, "message": f"Invalid message: {NOT_UTF8}"}}]
    assert h.bridge.client_era is None


def test_invalid_utf8_inside_the_id_itself_is_answered_with_id_null() -> None:
    h, _ = mode_a()
    actions = h.client(b'{"jsonrpc":"2.0","id":"a\xffb","method":"tools/call"}')
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": f"Invalid message: {NOT_UTF8}"}}]


def test_a_notification_with_invalid_utf8_is_answered_with_id_null() -> None:
    # JSON-RPC 2.0 §7, "rpc call with invalid JSON": a line that is not JSON gets -32700
    # with id null, whatever it was meant to be.
    h, _ = mode_a()
    actions = h.client(b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
                       b'{"progressToken":"\xfe","progress":1}}')
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": f"Invalid message: {NOT_UTF8}"}}]
    assert sent(actions, "server") == []


@pytest.mark.parametrize("make", every_mode())
def test_a_result_with_invalid_utf8_answers_the_waiting_request(make: Any) -> None:
    h = make()
    forwarded = one(h.client(client_call(h, 5, {"name": "t"})), "server")
    line = line_of(answer(forwarded, {"content": [{"type": "text", "text": "@t@"}]}),
                   t=b'"\xc3("')
    actions = h.server(line)
    assert sent(actions, "client") == [stand_in(5, "server", NOT_UTF8)]
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []


def test_a_server_request_with_invalid_utf8_is_answered_under_its_id() -> None:
    h, _ = mode_b()
    actions = h.server(b'{"jsonrpc":"2.0","id":31,"method":"sampling/createMessage",'
                       b'"params":{"messages":[{"role":"user","content":{"type":"text",'
                       b'"text":"\x80"}}],"maxTokens":5}}')
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 31, "error": {
        "code": -32700, "message": f"Invalid message: {NOT_UTF8}"}}]
    assert sent(actions, "client") == []


# Other lines that are not JSON -----------------------------------------------------------


def test_a_request_cut_short_is_answered_under_the_id_it_shows() -> None:
    h, _ = mode_a()
    actions = h.client(b'{"jsonrpc":"2.0","id":"cut","method":"tools/call","params":{"na')
    [error] = sent(actions, "client")
    assert error["id"] == "cut" and error["error"]["code"] == -32700
    assert error["error"]["message"].startswith("Invalid message: not JSON")


def test_an_id_whose_head_shows_no_spelling_keeps_its_value() -> None:
    # Invalid UTF-8 before the id stops the head's scan: the id is the repaired line's.
    h, _ = mode_a()
    [error] = sent(h.client(b'{"jsonrpc":"2.0","method":"x\xff","id":5.0}'), "client")
    assert error["id"] == 5.0 and error["error"]["code"] == -32700


@pytest.mark.parametrize("line", [b"{oops", b"NaN", b'{"method":"tools/call","params":{',
                                  b'\xff{"id":1}'])
def test_a_line_that_is_not_json_and_shows_no_id_is_answered_with_id_null(line: bytes) -> None:
    h, _ = mode_a()
    [error] = sent(h.client(line), "client")
    assert error["id"] is None and error["error"]["code"] == -32700


def test_a_server_line_that_is_not_json_and_shows_no_id_is_a_logged_drop() -> None:
    h, _ = mode_a()
    actions = h.server(b'{"jsonrpc":"2.0","method":"notifications/message","params":{')
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert logged(h, "message.invalid")[-1]["outcome"] == "dropped"


def test_a_client_notification_too_deep_but_read_whole_is_a_logged_drop() -> None:
    # It has no id at all: a notification, never answered (JSON-RPC 2.0 §4.1).
    h, _ = mode_a()
    deep = b"[" * 250 + b"]" * 250
    actions = h.client(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":'
                       + deep + b"}}")
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert logged(h, "message.too_deep")[-1]["outcome"] == "dropped"


def test_a_batch_element_too_deep_is_answered_in_the_array_unless_a_notification() -> None:
    h, _ = legacy_pair("2025-03-26")
    deep = b"[" * 250 + b"]" * 250
    batch = b'[{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"x":' + deep + b'}},' \
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{"x":' + deep + b'}}]'
    actions = h.client(batch)
    assert sent(actions, "server") == []
    [array] = sent(actions, "client")
    assert [(a["id"], a["error"]["code"]) for a in array] == [("d", -32600)]


# Number ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("make", every_mode())
@pytest.mark.parametrize("id_text", [b"2.0", b"2.00", b"2e0", b"20E-1", b"-7.0", b"1e400"])
def test_an_integer_id_written_with_a_fraction_comes_back_spelled_as_it_came(
        make: Any, id_text: bytes) -> None:
    h = make()
    forwarded = one(h.client(client_line(h, id_text, {"name": "t"})), "server")
    assert isinstance(forwarded["id"], str)  # the bridge's own id toward the server
    reply = one(h.server(answer(forwarded, {"content": []})), "client")
    assert b'"id":' + id_text + b"," in wire(reply)
    assert "result" in reply


@pytest.mark.parametrize("make", every_mode())
@pytest.mark.parametrize("id_text", [b"2.5", b"2.50", b"-0.11e1", b"1e-400", b"2.0000000000000001"])
def test_a_fractional_id_is_invalid_and_answered_under_itself(make: Any, id_text: bytes) -> None:
    h = make()
    actions = h.client(client_line(h, id_text, {"name": "t"}))
    assert sent(actions, "server") == []
    [error] = sent(actions, "client")
    assert wire(error) == b'{"jsonrpc":"2.0","id":' + id_text + b',"error":{"code":-32600,' \
        b'"message":"Invalid message: id must be a string or an integer ' \
        b'(a number with no fraction)"}}'


@pytest.mark.parametrize(("head", "code"), [(b"  xyzzy and more", -32700), (b"\xff\xfe{", -32700),
                                            (b'  {"jsonrpc":"2.0","method":"tools/call"', -32600),
                                            (b'"a long string', -32600)])
def test_a_line_too_long_with_no_id_is_a_parse_error_only_if_it_cannot_be_json(
        head: bytes, code: int) -> None:
    h, _ = mode_a()
    [error] = sent(h.too_large("client", head), "client")
    assert error["id"] is None and error["error"]["code"] == code


def test_a_number_id_in_a_line_too_long_comes_back_spelled_as_it_came() -> None:
    h, _ = mode_a()
    actions = h.too_large("client", b'{"jsonrpc":"2.0","id":3.000,"method":"tools/call","par')
    [error] = sent(actions, "client")
    assert wire(error).startswith(b'{"jsonrpc":"2.0","id":3.000,"error":{"code":-32600')


def test_a_number_id_in_a_line_too_deep_comes_back_spelled_as_it_came() -> None:
    h, _ = mode_a()
    line = b'{"jsonrpc":"2.0","id":4.0e0,"method":"tools/call","params":{"x":' \
        + b"[" * 300 + b"]" * 300 + b"}}"
    [error] = sent(h.client(line), "client")
    assert wire(error).startswith(b'{"jsonrpc":"2.0","id":4.0e0,"error":{"code":-32600')


def test_a_number_id_with_invalid_utf8_comes_back_spelled_as_it_came() -> None:
    h, _ = mode_a()
    [error] = sent(h.client(b'{"jsonrpc":"2.0","id":8.0,"method":"x","params":{"s":"\xff"}}'),
                   "client")
    assert wire(error).startswith(b'{"jsonrpc":"2.0","id":8.0,"error":{"code":-32700')


def test_number_ids_in_a_batch_come_back_spelled_as_they_came() -> None:
    h, _ = legacy_pair("2025-03-26")
    batch = b'[{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"a"}},' \
        b'{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"b"}},' \
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"c"}}]'
    forwarded = sent(h.client(batch), "server")
    assert [f["params"]["name"] for f in forwarded] == ["a", "c"]
    actions: list[Any] = []
    for f in forwarded:
        actions += h.server(answer(f, {"content": []}))
    [array] = sent(actions, "client")
    text = wire(array)
    assert text.count(b'"id":1.0,"result"') == 1 and text.count(b'"id":1,"result"') == 1
    assert text.count(b'"id":1.5,"error"') == 1


def test_an_integer_id_with_a_fraction_and_the_same_integer_are_two_requests() -> None:
    h = modern_pair()
    first = one(h.client(line_of(client_call(h, "@id@", {"name": "t"}), id=b"3.0")), "server")
    second = one(h.client(client_call(h, 3, {"name": "t"})), "server")
    assert first["id"] != second["id"]
    assert b'"id":3,' in wire(one(h.server(answer(second, {"resultType": "complete"})),
                                  "client"))
    assert b'"id":3.0,' in wire(one(h.server(answer(first, {"resultType": "complete"})),
                                    "client"))


def test_a_request_id_never_reaches_the_other_side_as_it_came() -> None:
    # The server sees the bridge's ids only: a float id is no concern of the server's.
    h, _ = legacy_pair()
    forwarded = one(h.client(line_of(request("@id@", "ping"), id=b"9.0")), "server")
    assert forwarded["id"].startswith("rosetta-")
