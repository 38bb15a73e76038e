"""Transcripts of a modern server that sends a request: its revision has none.

A 2026-07-28 server asks for input inside an InputRequiredResult (mrtr.mdx), and "MUST NOT"
send requests on stdio (stdio.mdx) or on a call's event stream (streamable-http.mdx). One that
does anyway is answered -32601 and logged, in every mode with a modern server; no client is
asked it, and the call it came with is still answered.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.harness import (
    Harness,
    answer,
    legacy_pair,
    mode_a,
    modern_meta,
    modern_pair,
    request,
    sent,
)

Message = dict[str, Any]

REFUSAL = ("Method not found: {method}: revision 2026-07-28 has no requests from server to "
           "client (a server asks for input with an InputRequiredResult)")


def refused(to: Message) -> Message:
    return {"jsonrpc": "2.0", "id": to["id"], "error": {
        "code": -32601, "message": REFUSAL.format(method=to["method"]),
        "data": {"source": "mcp-rosetta"}}}


def refusals(h: Harness) -> list[dict[str, Any]]:
    return [log.fields for log in h.logs if log.event == "server.request_refused"]


ASKED = [
    request("s1", "elicitation/create", {"message": "Name?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}),
    request(9, "sampling/createMessage", {"messages": [], "maxTokens": 5}),
    request("s2", "roots/list"),
    request("s3", "ping"),  # removed in 2026-07-28: no client answers it either
]


@pytest.mark.parametrize("asked", ASKED, ids=lambda m: m["method"])
def test_mode_p_answers_a_modern_servers_request_itself_and_never_relays_it(
        asked: Message) -> None:
    h = modern_pair()
    call = request(5, "tools/call", {"name": "t", "_meta": modern_meta({"elicitation": {}})})
    (forwarded,) = sent(h.client(call), "server")
    actions = h.server(asked)
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [refused(asked)]
    assert refusals(h) == [{"side": "server", "method": asked["method"],
                            "reason": "a modern server sends no requests"}]
    result = {"resultType": "complete", "content": []}
    assert sent(h.server(answer(forwarded, result)), "client") == [answer(call, result)]


def test_mode_p_refuses_a_request_that_comes_before_any_call() -> None:
    h = modern_pair()
    actions = h.server(ASKED[0])
    assert (sent(actions, "client"), sent(actions, "server")) == ([], [refused(ASKED[0])])


def test_mode_p_refuses_it_on_the_full_path_too() -> None:
    """While the client's messages take the long way (closing with a grace), the refusal is
    the same."""
    h = modern_pair()
    call = request(5, "tools/call", {"name": "t", "_meta": modern_meta()})
    h.client(call)
    h.shutdown(grace=5.0)
    actions = h.server(ASKED[1])
    assert (sent(actions, "client"), sent(actions, "server")) == ([], [refused(ASKED[1])])


def test_a_legacy_pair_still_relays_the_servers_requests() -> None:
    """The refusal is the modern era's: a legacy server's request reaches its legacy client."""
    h, _ = legacy_pair()
    (relayed,) = sent(h.server(request(42, "roots/list")), "client")
    assert relayed["method"] == "roots/list"
    assert refusals(h) == []


def test_mode_a_answers_a_modern_servers_request_the_same_way() -> None:
    h, _ = mode_a()
    actions = h.server(ASKED[0])
    assert (sent(actions, "client"), sent(actions, "server")) == ([], [refused(ASKED[0])])
    assert [fields["method"] for fields in refusals(h)] == ["elicitation/create"]
