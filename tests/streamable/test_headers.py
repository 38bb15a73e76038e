"""A 2026-07-28 request's headers against its body, as transcripts: headers and a decoded
body in, the front's refusal (status, JSON-RPC error) or None out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bridge.core.eras import HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND
from bridge.streamable.headers import (
    ParamHeaders,
    body_value,
    check,
    decoded,
    encoded,
    refuse_body,
    refuse_method,
)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def request(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 4, "method": method, "params": {**params, "_meta": META}}


def heads(method: str, **extra: str) -> dict[str, str]:
    return {"mcp-protocol-version": "2026-07-28", "mcp-method": method,
            "accept": "application/json, text/event-stream", **extra}


def refusal(headers: dict[str, str], message: dict[str, Any],
            params_of: ParamHeaders | None = None) -> tuple[int, int, str] | None:
    reply = check(headers, message, params_of)
    if reply is None:
        return None
    error = json.loads(reply.body)["error"]
    assert json.loads(reply.body)["id"] == message.get("id")
    return reply.status, error["code"], error["message"]


def test_a_request_whose_headers_say_what_its_body_says_passes() -> None:
    assert check(heads("tools/call", **{"mcp-name": "echo"}),
                 request("tools/call", name="echo")) is None
    assert check(heads("tools/list"), request("tools/list")) is None


@pytest.mark.parametrize(("headers", "message", "expected"), [
    (heads("tools/list"), {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
     (400, INVALID_PARAMS, "Invalid params: params._meta needs "
      "io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities "
      "(2026-07-28)")),
    ({"mcp-method": "tools/list"}, request("tools/list"),
     (400, HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header missing")),
    (heads("tools/call"), request("tools/list"),
     (400, HEADER_MISMATCH, "Header mismatch: Mcp-Method header value 'tools/call' does not "
                            "match body value 'tools/list'")),
    (heads("tools/call"), request("tools/call", name="echo"),
     (400, HEADER_MISMATCH, "Header mismatch: Mcp-Name header missing")),
    (heads("tools/call", **{"mcp-name": "=?base64?ZWNobw==?="}), request("tools/call",
                                                                         name="other"),
     (400, HEADER_MISMATCH, "Header mismatch: Mcp-Name header value 'echo' does not match "
                            "body value 'other'")),
    (heads("ping"), request("ping"), (404, METHOD_NOT_FOUND, "Method not found: ping")),
    (heads("subscriptions/listen", accept="application/json"),
     request("subscriptions/listen"),
     (406, -32600, "Not Acceptable: subscriptions/listen is answered with an event stream; "
                   "send Accept: application/json, text/event-stream")),
])
def test_what_the_front_refuses_before_the_core(headers: dict[str, str],
                                                message: dict[str, Any],
                                                expected: tuple[int, int, str]) -> None:
    assert refusal(headers, message) == expected


def test_a_listen_whose_accept_lists_an_event_stream_passes() -> None:
    for accept in ("application/json, text/event-stream", "text/event-stream", "*/*"):
        assert check(heads("subscriptions/listen", accept=accept),
                     request("subscriptions/listen")) is None
    assert check({k: v for k, v in heads("subscriptions/listen").items() if k != "accept"},
                 request("subscriptions/listen")) is None


def test_a_listed_tool_s_param_headers_must_say_what_its_arguments_say() -> None:
    params = ParamHeaders()
    params.learn({"tools": [{"name": "deploy", "inputSchema": {"properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"}}}}]})
    call = request("tools/call", name="deploy", arguments={"region": "eü", "count": 3})
    good = heads("tools/call", **{"mcp-name": "deploy", "mcp-param-region": encoded("eü"),
                                  "mcp-param-count": "3.0"})
    assert check(good, call, params) is None
    assert refusal({**good, "mcp-param-count": "4"}, call, params) == (
        400, HEADER_MISMATCH, "Header mismatch: Mcp-Param-Count header value '4' does not "
                              "match body value 3")
    missing = {k: v for k, v in good.items() if k != "mcp-param-region"}
    assert refusal(missing, call, params) == (
        400, HEADER_MISMATCH, "Header mismatch: Mcp-Param-Region header missing for argument "
                              "region")


def test_a_value_is_sent_plain_when_it_can_be_and_in_the_base64_sentinel_otherwise() -> None:
    for text in ("plain", " padded", "eü", "=?base64?x?="):
        assert decoded(encoded(text)) == text
    assert encoded("plain") == "plain"
    assert encoded("eü") == "=?base64?ZcO8?="
    assert decoded("=?base64?not base64?=") is None


@pytest.mark.parametrize(("method", "headers", "status"), [
    ("POST", {"content-type": "application/json; charset=utf-8"}, None),
    ("POST", {"content-type": "text/plain"}, 415),
    ("POST", {}, 415),
    ("GET", {"mcp-session-id": "x"}, None),  # a legacy session's stream
    ("DELETE", {"mcp-session-id": "x"}, None),
    ("GET", {}, 405),
    ("PUT", {"mcp-session-id": "x"}, 405),
])
def test_a_request_s_method_and_media_type(method: str, headers: dict[str, str],
                                           status: int | None) -> None:
    reply = refuse_method(method, headers)
    assert (None if reply is None else reply.status) == status


@pytest.mark.parametrize(("body", "status"), [
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', None),
    (b"  ", 400), (b"{not json", 400),
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', 400),  # a batch
    (b'{"jsonrpc":"2.0","id":1,"result":{}}', 400),  # a response
    (b'{"jsonrpc":"2.0","method":"notifications/cancelled"}', 202),
])
def test_a_modern_post_s_body_is_one_request(body: bytes, status: int | None) -> None:
    reply = refuse_body(body_value(body))
    assert (None if reply is None else reply.status) == status
