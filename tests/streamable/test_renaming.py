"""The front's id space, as transcripts: a client's request in, the core's message out; what
the core sends for it in, the client's message out."""

from __future__ import annotations

from typing import Any

from bridge.streamable.renaming import SUBSCRIPTION_ID, Renaming, cancellation

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def request(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def test_two_clients_same_id_and_token_meet_the_core_under_names_of_their_own() -> None:
    renaming = Renaming()
    call = request(1, "tools/call", name="echo", _meta={**META, "progressToken": "t"})
    one, for_core_1 = renaming.admit(call)
    two, for_core_2 = renaming.admit(call)
    assert (for_core_1["id"], for_core_2["id"]) == ("http-1", "http-2")
    assert for_core_1["params"]["_meta"]["progressToken"] == "http-1"
    assert for_core_1["params"]["_meta"][
        "io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert call["id"] == 1 and call["params"]["_meta"]["progressToken"] == "t"  # untouched
    assert (one.original, one.wire, one.method, one.token) == (1, "http-1", "tools/call", "t")
    assert two.wire == "http-2"


def test_what_the_core_sends_goes_back_in_the_client_s_names() -> None:
    renaming = Renaming()
    names, _ = renaming.admit(request("a", "tools/call", _meta={**META, "progressToken": 9}))
    progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "http-1", "progress": 1}}
    assert renaming.restore(progress, names) == (
        {**progress, "params": {"progressToken": 9, "progress": 1}}, False)
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    restored, final = renaming.restore(log, names)
    assert restored is log and not final  # nothing of the client's in it: not copied
    answer = {"jsonrpc": "2.0", "id": "http-1", "result": {"content": []}}
    assert renaming.restore(answer, names) == ({**answer, "id": "a"}, True)


def test_a_request_without_a_token_keeps_another_request_s_token_as_it_is() -> None:
    renaming = Renaming()
    names, for_core = renaming.admit(request(1, "tools/call", _meta=META))
    assert for_core["params"]["_meta"] == META and names.token is None
    progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "http-1"}}
    assert renaming.restore(progress, names) == (progress, False)


def test_a_listen_stream_names_the_client_s_id_as_its_subscription() -> None:
    renaming = Renaming()
    names, _ = renaming.admit(request(7, "subscriptions/listen", _meta=META))
    ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"_meta": {SUBSCRIPTION_ID: "http-1"}}}
    other = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
             "params": {"_meta": {SUBSCRIPTION_ID: "other"}}}
    closing = {"jsonrpc": "2.0", "id": "http-1", "result": {"_meta": {SUBSCRIPTION_ID:
                                                                      "http-1"}}}
    assert renaming.restore(ack, names)[0]["params"]["_meta"][SUBSCRIPTION_ID] == 7
    assert renaming.restore(other, names) == (other, False)
    assert renaming.restore(closing, names) == (
        {"jsonrpc": "2.0", "id": 7, "result": {"_meta": {SUBSCRIPTION_ID: 7}}}, True)


def test_a_tools_list_answer_teaches_the_tools_param_headers() -> None:
    renaming = Renaming()
    names, _ = renaming.admit(request(1, "tools/list", _meta=META))
    schema = {"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    renaming.restore({"jsonrpc": "2.0", "id": "http-1", "result": {"tools": [
        {"name": "deploy", "inputSchema": schema}]}}, names)
    assert renaming.param_headers.headers_for(
        {"name": "deploy", "arguments": {"region": "eu"}}) == {"Mcp-Param-Region": "eu"}


def test_a_gone_client_s_request_is_cancelled_under_its_wire_id() -> None:
    names, _ = Renaming().admit(request(1, "tools/call", _meta=META))
    assert cancellation(names, "gone") == {
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "http-1", "reason": "gone"}}
