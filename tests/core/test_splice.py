"""Big answers in mode P: the line as it came, with only its id spliced, or else encoded."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.codec import RawNumber, decode, encode
from bridge.core.events import Send, Spliced
from bridge.core.splice import SPLICE_MIN, with_id, without_members
from tests.core.harness import (
    Harness,
    answer,
    initialize,
    legacy_pair,
    lines,
    mode_a,
    modern_meta,
    modern_pair,
    one,
    request,
    sent,
)

BIG_TEXT = "x" * SPLICE_MIN


def big_result(text: str = BIG_TEXT) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def line_of(message: dict[str, Any]) -> bytes:
    return encode(message).rstrip(b"\n")


def forwarded_call(h: Harness, client_id: Any) -> dict[str, Any]:
    forwarded = one(h.client(request(client_id, "tools/call", {"name": "blob"})), "server")
    assert isinstance(forwarded["id"], str)
    return forwarded


@pytest.mark.parametrize(("client_id", "spelled"), [
    (7, b"7"), ("abc", b'"abc"'), ("é\u2028", '"é\u2028"'.encode()), (-(2**70), b"-%d" % 2**70),
])
def test_a_big_legacy_answer_is_the_servers_line_with_only_the_id_changed(
        client_id: Any, spelled: bytes) -> None:
    h, _ = legacy_pair()
    forwarded = forwarded_call(h, client_id)
    raw = line_of(answer(forwarded, big_result()))
    actions = h.server(raw)
    token = b'"' + forwarded["id"].encode() + b'"'
    assert lines(actions, "client") == [raw.replace(token, spelled) + b"\n"]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": client_id, "result": big_result()}


def test_a_big_modern_answer_keeps_the_servers_spelling_of_everything_else() -> None:
    h = modern_pair()
    forwarded = one(h.client(request(2.0, "tools/call", {"name": "blob", "_meta": modern_meta()})),
                    "server")
    # What the bridge would write otherwise differs: key order kept, 1.50 not 1.5, spaces kept.
    raw = (b'{ "result": {"resultType": "complete", "score": 1.50, "content": [{"type": "text", '
           b'"text": "' + BIG_TEXT.encode() + b'"}]}, "id": "' + forwarded["id"].encode()
           + b'", "jsonrpc": "2.0" }')
    out = lines(h.server(raw), "client")
    assert out == [raw.replace(b'"' + forwarded["id"].encode() + b'"', b"2.0") + b"\n"]
    assert type(decode(out[0] or b"")["id"]) is float


def test_the_client_answering_a_big_sampling_result_is_spliced_toward_the_server() -> None:
    h, _ = legacy_pair()
    asked = one(h.server(request(42, "sampling/createMessage", {"messages": []})), "client")
    result = {"role": "assistant", "content": {"type": "text", "text": BIG_TEXT}}
    raw = line_of(answer(asked, result))
    assert lines(h.client(raw), "server") == [raw.replace(
        b'"' + asked["id"].encode() + b'"', b"42") + b"\n"]


def test_a_small_answer_is_encoded_as_before() -> None:
    h, _ = legacy_pair()
    forwarded = forwarded_call(h, 7)
    actions = h.server(answer(forwarded, big_result("small")))
    assert lines(actions, "client") == [None]
    assert one(actions, "client")["id"] == 7


@pytest.mark.parametrize("case", ["escaped id", "id twice", "escape elsewhere",
                                  "id as a key", "quote then the id's text"])
def test_unprovable_splices_fall_back_to_encoding(case: str) -> None:
    h, _ = legacy_pair()
    forwarded = forwarded_call(h, 7)
    bid = forwarded["id"]
    result = big_result()
    raw = line_of(answer(forwarded, result))
    if case == "escaped id":  # the id spelled with an escape: its plain token is not in the line
        raw = raw.replace(b'"' + bid.encode() + b'"', b'"' + bid.replace("-", "\\u002d").encode()
                          + b'"')
    elif case == "id twice":
        result = {**result, "echo": bid}
    elif case == "escape elsewhere":
        result = {**result, "note": "a\nb"}
    elif case == "id as a key":
        result = {**result, bid: True}
    elif case == "quote then the id's text":
        result = {**result, "note": f'say "{bid}'}
    if case != "escaped id":
        raw = line_of(answer(forwarded, result))
    actions = h.server(raw)
    assert lines(actions, "client") == [None]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 7, "result": result}


def test_a_tracked_answer_is_encoded_even_when_big() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize())
    forwarded = one(h.server({"jsonrpc": "2.0", "id": probe["id"],
                              "error": {"code": -32601, "message": "Method not found"}}),
                    "server")
    result = {"protocolVersion": "2025-11-25", "capabilities": {},
              "serverInfo": {"name": "old", "version": "1"}, "instructions": BIG_TEXT}
    actions = h.server(answer(forwarded, result))
    assert lines(actions, "client") == [None]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 0, "result": result}


def test_a_big_answer_in_a_batch_comes_back_in_the_array() -> None:
    h, _ = legacy_pair("2025-03-26")
    first, second = sent(h.client([request(1, "tools/call", {"name": "blob"}),
                                   request(2, "tools/list")]), "server")
    assert sent(h.server(line_of(answer(first, big_result()))), "client") == []
    actions = h.server(answer(second, {"tools": []}))
    assert lines(actions, "client") == [None]
    assert one(actions, "client") == [
        {"jsonrpc": "2.0", "id": 1, "result": big_result()},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}]


# with_id itself -------------------------------------------------------------------------------

def test_with_id_splices_the_one_plain_occurrence() -> None:
    line = b'{"jsonrpc":"2.0","id":"rosetta-1","result":{"a":"rosetta-12","b":"rosetta-"}}'
    assert joined(with_id(line, "rosetta-1", RawNumber("1.50"))) == line.replace(
        b'"rosetta-1"', b"1.50") + b"\n"


def test_a_spliced_line_is_views_of_the_line_not_a_copy() -> None:
    line = b'{"jsonrpc":"2.0","id":"rosetta-1","result":{"text":"' + b"x" * 100 + b'"}}'
    spliced = with_id(line, "rosetta-1", 7)
    assert spliced is not None
    views = [piece for piece in spliced.pieces if isinstance(piece, memoryview)]
    assert views and all(view.obj is line for view in views)
    assert sum(len(view) for view in views) == len(line) - len(b'"rosetta-1"')


@pytest.mark.parametrize("line", [
    b'{"id":"rosetta-1","result":{"a":"rosetta-1"}}',          # twice
    b'{"id":"rosetta-1","result":{"rosetta-1":1}}',            # a key
    b'{"id":"rosetta\\u002d1","result":{"a":"rosetta-1"}}',    # the id escaped, its text elsewhere
    b'{"id":"rosetta-1","result":{"a":"x\\"rosetta-1"}}',      # an escaped quote, then its text
    b'{"id":"rosetta-2","result":{}}',                         # not there at all
])
def test_with_id_refuses_what_it_cannot_prove(line: bytes) -> None:
    assert with_id(line, "rosetta-1", 7) is None


def test_with_id_walks_many_strings_then_searches_the_rest() -> None:
    items = [f"s{i}" for i in range(200)]
    clean = encode({"id": "rosetta-1", "result": {"items": items}}).rstrip(b"\n")
    assert decode(joined(with_id(clean, "rosetta-1", 3))) == {"id": 3, "result": {"items": items}}
    late = encode({"id": "rosetta-1", "result": {"items": [*items, "rosetta-1"]}}).rstrip(b"\n")
    assert with_id(late, "rosetta-1", 3) is None


@pytest.mark.parametrize("bid", ['a"b', "a\\b", "tab\t", "ünï"])
def test_with_id_refuses_ids_that_may_be_spelled_otherwise(bid: str) -> None:
    line = encode({"id": bid, "result": {}}).rstrip(b"\n")
    assert with_id(line, bid, 7) is None


# Mode A: members the downgrade takes out of a big result are cut from the line ----------------

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "ModernSrv", "version": "2.0"}}


def mode_a_call(version: str = "2025-11-25") -> tuple[Harness, dict[str, Any]]:
    h, _ = mode_a(version)
    forwarded = one(h.client(request(9, "tools/call", {"name": "blob"})), "server")
    return h, forwarded


@pytest.mark.parametrize("raw_result", [
    # the modern members first, last, around the content, alone with it, spaced
    b'{"resultType":"complete","content":%s,"isError":false}',
    b'{"content":%s,"isError":false,"resultType":"complete"}',
    b'{"resultType":"complete","content":%s,"_meta":{"io.modelcontextprotocol/serverInfo":'
    b'{"name":"ModernSrv","version":"2.0"}}}',
    b'{"content":%s,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":'
    b'{"name":"ModernSrv","version":"2.0"}},"isError":false}',
    b'{ "resultType" : "complete" , "content": %s }',
])
def test_a_big_modern_result_loses_only_its_modern_members(raw_result: bytes) -> None:
    h, forwarded = mode_a_call()
    content = encode([{"type": "text", "text": BIG_TEXT}]).rstrip(b"\n")
    raw = (b'{"jsonrpc":"2.0","id":"' + forwarded["id"].encode() + b'","result":'
           + raw_result % content + b"}")
    actions = h.server(raw)
    (out,) = lines(actions, "client")
    assert out is not None, "not spliced"
    reply = one(actions, "client")
    assert reply["id"] == 9 and "resultType" not in reply["result"]
    assert "_meta" not in reply["result"]
    assert decode(out) == reply
    assert content in out and len(raw) - len(out) > len(b'"resultType":"complete"') - 5


def test_a_result_whose_kept_members_change_is_encoded() -> None:
    h, forwarded = mode_a_call("2025-03-26")  # resource links become text before 2025-06-18
    result = {"resultType": "complete", "content": [
        {"type": "text", "text": BIG_TEXT}, {"type": "resource_link", "uri": "file:///a",
                                             "name": "a"}]}
    actions = h.server(answer(forwarded, result))
    assert lines(actions, "client") == [None]
    assert one(actions, "client")["result"]["content"][1]["type"] == "text"


@pytest.mark.parametrize("case", ["_meta kept in part", "resultType twice", "spaced _meta"])
def test_a_modern_member_that_cannot_be_cut_provably_falls_back(case: str) -> None:
    h, forwarded = mode_a_call()
    result: dict[str, Any] = {"resultType": "complete", **big_result()}
    raw = None
    if case == "_meta kept in part":
        result["_meta"] = {**SERVER_INFO, "x-trace": "1"}
    elif case == "resultType twice":
        result["content"] = [*result["content"], {"type": "text", "text": "resultType"}]
    else:
        raw = line_of(answer(forwarded, {**result, "_meta": SERVER_INFO})).replace(
            b'/serverInfo":{', b'/serverInfo": {')  # the value spelled otherwise than compact
    actions = h.server(raw or line_of(answer(forwarded, result)))
    assert lines(actions, "client") == [None]
    reply = one(actions, "client")
    assert reply["id"] == 9 and "resultType" not in reply["result"]
    if case == "_meta kept in part":
        assert reply["result"]["_meta"] == {"x-trace": "1"}


@pytest.mark.parametrize(("line", "removed", "expected"), [
    (b'{"id":"rosetta-1","result":{"a":1,"ttlMs":1.50}}', {"ttlMs": 1.5}, None),  # 1.5 != 1.50
    (b'{"id":"rosetta-1","result":{"ttlMs":60000, "a":1 ,"cacheScope":"public"}}',
     {"ttlMs": 60000, "cacheScope": "public"}, b'{"id":7,"result":{ "a":1 }}\n'),
    (b'{"id":"rosetta-1","result":{"resultType":"complete","ttlMs":5}}',
     {"resultType": "complete", "ttlMs": 5}, b'{"id":7,"result":{}}\n'),
    (b'{"id":"rosetta-1","result":{"a":1,"ttlMs":5,"ttlMs":5}}', {"ttlMs": 5}, None),  # twice
])
def test_without_members_cuts_whole_members_only(line: bytes, removed: dict[str, Any],
                                                  expected: bytes | None) -> None:
    spliced = without_members(line, "rosetta-1", 7, removed)
    assert (None if spliced is None else spliced.joined()) == expected


def test_a_huge_answer_is_spliced_too_with_no_copy_of_it() -> None:
    h, _ = legacy_pair()
    forwarded = forwarded_call(h, 7)
    raw = line_of(answer(forwarded, big_result("x" * (32 << 20))))
    (send,) = [a for a in h.server(raw) if isinstance(a, Send) and a.side == "client"]
    assert isinstance(send.line, Spliced)
    token = b'"' + forwarded["id"].encode() + b'"'
    assert send.line.joined() == raw.replace(token, b"7") + b"\n"
    assert [piece.obj for piece in send.line.pieces if isinstance(piece, memoryview)] == [raw, raw]


def joined(spliced: Spliced | None) -> bytes:
    assert spliced is not None, "not spliced"
    return spliced.joined()
