"""The public library API in bridge/protocol.py."""

from __future__ import annotations

import json

import pytest

from bridge.protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSION,
    build_request,
    decline_input_response,
    detect_era,
    format_message,
    is_modern_error,
    legacy_context,
    legacy_request,
    legacy_result,
    normalize_result,
    parse_inbound,
)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "not JSON"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "batches need revision 2025-03-26"),
        (b'{"jsonrpc":"2.0"}', "neither method nor result nor error"),
        (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', "exactly one"),
        (b'{"jsonrpc":"2.0","id":1}', "neither method nor result nor error"),
        (b'{"jsonrpc":"2.0","result":{}}', "needs an id"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "string or an integer"),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', "string or an integer"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', "params must be an object"),
        (b'{"id":1,"method":"ping"}', '"jsonrpc": "2.0"'),
        (b'"hello"', "JSON object"),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', "method must be a string"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}', "integer code"),
        (b"NaN", "not JSON"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_parse_inbound_classifies_bad_input_as_invalid(line: bytes, reason: str) -> None:
    inbound = parse_inbound(line)
    assert inbound.kind == "invalid"
    assert reason in inbound.reason


def test_parse_inbound_kinds() -> None:
    assert parse_inbound(b'{"jsonrpc":"2.0","id":"a","method":"ping"}').kind == "request"
    assert parse_inbound(b'{"jsonrpc":"2.0","method":"notifications/x"}').kind == "notification"
    response = parse_inbound(b'{"jsonrpc":"2.0","id":7,"result":{}}')
    assert (response.kind, response.id) == ("response", 7)


def test_parse_inbound_keeps_the_id_of_an_invalid_request() -> None:
    inbound = parse_inbound(b'{"jsonrpc":"2.0","id":"x1","method":"a","params":"no"}')
    assert (inbound.kind, inbound.id, inbound.code) == ("invalid", "x1", -32600)
    inbound = parse_inbound(b'{"jsonrpc":"2.0","id":7}')
    assert (inbound.kind, inbound.id, inbound.code) == ("invalid", 7, -32600)


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}',
    b'{"id":1,"result":{}}',
    b'{"jsonrpc":"1.0","id":1,"error":{"code":1,"message":"x"}}',
    b'{"jsonrpc":"2.0","id":1,"result":[]}',
])
def test_a_malformed_response_is_never_answered(line: bytes) -> None:
    inbound = parse_inbound(line)
    assert (inbound.kind, inbound.code) == ("invalid", None)


def test_parse_inbound_batches_only_when_allowed() -> None:
    inbound = parse_inbound(b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"x":1}]', batching=True)
    assert inbound.kind == "batch"
    assert [i.kind for i in inbound.items or []] == ["request", "invalid"]


def test_parse_inbound_keeps_integers_beyond_64_bits() -> None:
    inbound = parse_inbound(
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":123456789012345678901234567890}}'
    )
    assert inbound.message["params"]["n"] == 123456789012345678901234567890


def test_build_request_modern_stamps_the_envelope_and_keeps_client_meta() -> None:
    request = build_request(
        5,
        "tools/call",
        {"name": "t", "_meta": {"progressToken": 9}},
        era="modern",
        client_info={"name": "c", "version": "1"},
        client_capabilities={"sampling": {}},
        log_level="info",
    )
    assert request == {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {
            "name": "t",
            "_meta": {
                "progressToken": 9,
                META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION,
                META_CLIENT_CAPABILITIES: {"sampling": {}},
                META_CLIENT_INFO: {"name": "c", "version": "1"},
                META_LOG_LEVEL: "info",
            },
        },
    }


def test_build_request_creates_params_for_a_bare_list_request() -> None:
    request = build_request("a", "tools/list", None, era="modern")
    assert request["params"] == {
        "_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {}}
    }


def test_build_request_legacy_strips_envelope_and_mrtr_fields() -> None:
    params = {
        "name": "t",
        "inputResponses": {"k": {}},
        "requestState": "s",
        "_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION, "progressToken": 1},
    }
    request = build_request(1, "tools/call", params, era="legacy")
    assert request["params"] == {"name": "t", "_meta": {"progressToken": 1}}
    assert "inputResponses" in params  # the input is not changed


def test_normalize_result_to_legacy_strips_modern_fields() -> None:
    result = {
        "resultType": "complete",
        "tools": [],
        "ttlMs": 5,
        "cacheScope": "public",
        "_meta": {META_SERVER_INFO: {"name": "s", "version": "1"}, "x": 1},
    }
    assert normalize_result(result, to_era="legacy", method="tools/list") == {
        "tools": [],
        "_meta": {"x": 1},
    }


def test_normalize_result_to_modern_adds_result_type_cache_and_server_info() -> None:
    info = {"name": "old", "version": "0.9"}
    assert normalize_result(
        {"tools": []}, to_era="modern", method="tools/list", server_info=info
    ) == {
        "tools": [],
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: info},
    }
    assert normalize_result({"content": []}, to_era="modern", method="tools/call") == {
        "content": [],
        "resultType": "complete",
    }


def test_normalize_result_downgrades_for_2024_11_05() -> None:
    result = {
        "content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}],
        "structuredContent": {"n": 1},
    }
    out = normalize_result(result, to_era="legacy", method="tools/call", version="2024-11-05")
    assert out["content"][0] == {"type": "text", "text": "file:///a (a)"}
    assert "structuredContent" not in out


def test_non_object_structured_content_never_reaches_a_legacy_client() -> None:
    result = {"content": [], "structuredContent": [1, 2]}
    out = normalize_result(result, to_era="legacy", method="tools/call", version="2025-11-25")
    assert out == {"content": [{"type": "text", "text": "[1,2]"}]}


def test_decline_input_response() -> None:
    assert decline_input_response({"method": "elicitation/create"}) == {"action": "decline"}
    assert decline_input_response({"method": "roots/list"}) == {"roots": []}
    assert decline_input_response({"method": "sampling/createMessage"}) is None
    assert decline_input_response({"method": "other"}) is None


def test_is_modern_error() -> None:
    assert is_modern_error(
        {"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"], "requested": "1"}}
    )
    assert is_modern_error({"code": -32021, "message": "x", "data": {"requiredCapabilities": {}}})
    assert not is_modern_error({"code": -32022, "message": "x"})
    assert not is_modern_error({"code": -32601, "message": "Method not found"})
    assert not is_modern_error({"code": -32602, "message": "x", "data": {"supported": []}})
    assert not is_modern_error(None)


def test_detect_era_and_legacy_request() -> None:
    modern = build_request(1, "tools/list", None, era="modern")
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-03-26"},
    }
    assert detect_era(modern) == "modern"
    assert detect_era(init) == "legacy"
    assert legacy_request(None, init) == "2025-03-26"
    assert legacy_request("2025-06-18", {"method": "tools/list"}) == "2025-06-18"
    assert legacy_request("2025-06-18", modern) is None


def test_legacy_context_drops_completion_context_for_old_revisions() -> None:
    params = {
        "ref": {},
        "argument": {},
        "context": {"arguments": {}},
        "_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION},
    }
    old = legacy_context(params, {"protocolVersion": "2025-03-26", "method": "completion/complete"})
    assert old == {"ref": {}, "argument": {}}
    new = legacy_context(params, {"protocolVersion": "2025-06-18", "method": "completion/complete"})
    assert new == {"ref": {}, "argument": {}, "context": {"arguments": {}}}


def test_legacy_result_answers_removed_methods() -> None:
    discover = {
        "resultType": "complete",
        "supportedVersions": [MODERN_PROTOCOL_VERSION],
        "capabilities": {"tools": {"listChanged": True}, "extensions": {"x": {}}},
        "ttlMs": 0,
        "cacheScope": "public",
    }
    init = legacy_result(discover, "initialize", "2025-06-18")
    assert init is not None
    assert init["protocolVersion"] == "2025-06-18"
    assert init["capabilities"] == {"tools": {}}
    assert legacy_result(discover, "ping", "2025-06-18") == {}
    assert legacy_result(discover, "tools/list", "2025-06-18") is None


@pytest.mark.parametrize(
    "message",
    [
        {"text": "line\nbreak"},
        {"n": 2**80},
        {"s": "\ud800"},
        {"u": "ünïcødé ✓"},
    ],
)
def test_format_message_is_one_line_of_valid_json(message: dict[str, object]) -> None:
    line = format_message(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == message
