"""Transcripts of integers of every size and sign crossing the bridge exactly, ids included."""

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
    modern,
    modern_pair,
    one,
    request,
    sent,
)

# What orjson alone would turn into floats, or could not read at all, and ids Python could
# not even print (more than 4300 digits): all written as raw JSON text.
NUMBERS = [b"-9223372036854775809", b"-18446744073709551616", b"18446744073709551616",
           b"-" + b"3" * 60, b"9" * 5000]
PARAMS_LINE = b'"params":{"name":"t","arguments":{"n":[' + b",".join(NUMBERS) + b"]}}"


def raw(id: bytes, method: str, params: bytes = PARAMS_LINE) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + id + b',"method":"' + method.encode() + b'",' + params \
        + b"}"


def line(message: Any) -> bytes:
    return encode(message).rstrip(b"\n")


@pytest.mark.parametrize("id", NUMBERS)
@pytest.mark.parametrize("make", [lambda: mode_a()[0], lambda: legacy_pair()[0]],
                         ids=["A", "P-legacy"])
def test_ids_and_params_of_any_size_cross_a_legacy_client_exactly(make: Any, id: bytes) -> None:
    h: Harness = make()
    forwarded = one(h.client(raw(id, "tools/call")), "server")
    assert b'"arguments":{"n":[' + b",".join(NUMBERS) + b"]}" in line(forwarded)
    reply = one(h.server(answer(forwarded, {"content": [], "n": forwarded["params"]
                                            ["arguments"]["n"]})), "client")
    assert line(reply).startswith(b'{"jsonrpc":"2.0","id":' + id + b',"result":')
    assert b'"n":[' + b",".join(NUMBERS) + b"]" in line(reply)


@pytest.mark.parametrize("id", NUMBERS)
@pytest.mark.parametrize("make", [lambda: mode_b()[0], modern_pair], ids=["B", "P-modern"])
def test_ids_of_any_size_cross_a_modern_client_exactly(make: Any, id: bytes) -> None:
    h: Harness = make()
    message = modern("x", "tools/list", {"cursor": "c"})
    text = line(message).replace(b'"id":"x"', b'"id":' + id)
    forwarded = one(h.client(text), "server")
    reply = one(h.server(answer(forwarded, {"tools": [], "resultType": "complete"})), "client")
    assert line(reply).startswith(b'{"jsonrpc":"2.0","id":' + id + b',"result":')


@pytest.mark.parametrize("id", [b"18446744073709551616", b"-9223372036854775809", b"7" * 5000])
def test_an_unmatched_response_with_a_huge_id_is_logged_not_fatal(id: bytes) -> None:
    h, _ = mode_a()
    actions = h.server(b'{"jsonrpc":"2.0","id":' + id + b',"result":{}}')
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    unmatched = [log.fields["id"] for log in h.logs if log.event == "response.unmatched"]
    assert line({"id": unmatched[0]}) == b'{"id":' + id + b"}"


def test_a_huge_progress_token_carries_progress_to_the_legacy_client() -> None:
    h, _ = mode_a()
    token = b"-9223372036854775809"
    forwarded = one(h.client(raw(b"1", "tools/call", b'"params":{"name":"t","_meta":'
                                                    b'{"progressToken":' + token + b"}}")),
                    "server")
    assert line(forwarded["params"]["_meta"]).startswith(b'{"progressToken":' + token)
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{' \
        b'"progressToken":' + token + b',"progress":1}}'
    relayed = one(h.server(progress), "client")
    assert line(relayed) == progress


def test_a_huge_integer_where_a_string_belongs_is_refused_like_any_wrong_type() -> None:
    h, _ = mode_b()
    text = line(request("s", "subscriptions/listen", {"_meta": {}, "notifications": {}}))
    text = text.replace(b'"_meta":{}', b'"_meta":' + line(modern("x", "x")["params"]["_meta"]))
    text = text.replace(b'"notifications":{}', b'"notifications":{"resourceSubscriptions":['
                        + b"9" * 5000 + b"]}")
    assert one(h.client(text), "client") == {"jsonrpc": "2.0", "id": "s", "error": {
        "code": -32602, "message": "subscriptions/listen needs a notifications filter object "
                                   "(resourceSubscriptions: an array of URI strings)"}}
