"""The public library API in bridge/protocol.py: the functions the bridge itself runs."""

from __future__ import annotations

import ast
import json
import pathlib
from typing import Any

import pytest

import bridge
import bridge.protocol
from bridge.protocol import (
    LATEST_LEGACY_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_PROTOCOL_VERSION,
    build_request,
    format_message,
    is_modern_error,
    legacy_context,
    legacy_request,
    legacy_result,
    normalize_result,
    parse_inbound,
)


def _calls_in_the_bridge() -> set[str]:
    """The names of every function the bridge's own modules call (the library excluded)."""
    root = pathlib.Path(bridge.__file__).parent
    names: set[str] = set()
    for path in [*root.glob("core/**/*.py"), *root.glob("shell/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_every_function_of_the_library_is_one_the_bridge_runs() -> None:
    called = _calls_in_the_bridge()
    functions = {name: getattr(bridge.protocol, name) for name in bridge.protocol.__all__
                 if callable(getattr(bridge.protocol, name)) and name[0].islower()}
    assert sorted(functions) == ["build_request", "format_message", "is_modern_error",
                                 "legacy_context", "legacy_request", "legacy_result",
                                 "normalize_result", "parse_inbound"]
    for name, function in functions.items():
        assert function.__module__.startswith("bridge.core."), name
        assert function.__name__ in called, f"the bridge never calls {name}"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
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
    ],
)
def test_parse_inbound_classifies_bad_input_as_invalid(line: bytes, reason: str) -> None:
    inbound = parse_inbound(line)
    assert inbound.kind == "invalid"
    assert reason in inbound.reason


@pytest.mark.parametrize(("line", "request_id"), [
    (b"{not json", None),
    (b"NaN", None),
    (b"\xff\xfe", None),
    (b'{"jsonrpc":"2.0","id":4,"method":"m","params":{', 4),  # cut short: its id is read
])
def test_parse_inbound_refuses_what_is_not_json_with_a_parse_error(
        line: bytes, request_id: Any) -> None:
    inbound = parse_inbound(line)
    assert (inbound.kind, inbound.code, inbound.id) == ("refused", -32700, request_id)
    assert inbound.reason.startswith("not JSON")


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


def test_build_request_legacy_gives_the_peer_another_progress_token() -> None:
    params = {"name": "t", "_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION,
                                     "progressToken": 1, "traceparent": "00-ab"}}
    request = build_request("a", "tools/call", params, era="legacy", progress_token="bridge-7")
    assert request == {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {
        "name": "t", "_meta": {"traceparent": "00-ab", "progressToken": "bridge-7"}}}
    assert params["_meta"]["progressToken"] == 1


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


def test_is_modern_error() -> None:
    assert is_modern_error(
        {"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"], "requested": "1"}}
    )
    assert is_modern_error({"code": -32021, "message": "x", "data": {"requiredCapabilities": {}}})
    assert not is_modern_error({"code": -32022, "message": "x"})
    assert not is_modern_error({"code": -32601, "message": "Method not found"})
    assert not is_modern_error({"code": -32602, "message": "x", "data": {"supported": []}})
    assert not is_modern_error(None)


@pytest.mark.parametrize(("request_", "revision"), [
    ({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": "2025-03-26"}}, "2025-03-26"),  # names its own
    ({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": ["2025-03-26"]}}, "2025-06-18"),  # names none usable
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "2025-06-18"),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {}}}, "2025-06-18"),
    (build_request(1, "tools/list", None, era="modern"), None),  # modern: never legacy
    ("not a request", None),
])
def test_legacy_request_names_the_revision_a_request_was_made_under(
        request_: Any, revision: str | None) -> None:
    assert legacy_request("2025-06-18", request_) == revision


def test_legacy_context_drops_completion_context_for_old_revisions() -> None:
    params = {
        "ref": {},
        "argument": {},
        "context": {"arguments": {}},
        "_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION},
    }
    old = legacy_context(params, method="completion/complete", version="2025-03-26")
    assert old == {"ref": {}, "argument": {}}
    new = legacy_context(params, method="completion/complete", version="2025-06-18")
    assert new == {"ref": {}, "argument": {}, "context": {"arguments": {}}}
    assert legacy_context(None) is None
    assert legacy_context(None, progress_token=3) == {"_meta": {"progressToken": 3}}


def test_legacy_result_answers_removed_methods() -> None:
    discover = {
        "resultType": "complete",
        "supportedVersions": [MODERN_PROTOCOL_VERSION],
        "capabilities": {"tools": {"listChanged": True}, "extensions": {"x": {}}},
        "ttlMs": 0,
        "cacheScope": "public",
    }
    init = legacy_result(discover, "initialize", "2025-06-18")
    # logging is always offered: the bridge serves logging/setLevel itself.
    assert init == {"protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "mcp-rosetta", "version": bridge.__version__}}
    named = legacy_result(discover, "initialize", LATEST_LEGACY_VERSION, {"name": "b",
                                                                          "version": "2"})
    assert named is not None and named["serverInfo"] == {"name": "b", "version": "2"}
    for method in ("ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
        assert legacy_result(discover, method, "2025-06-18") == {}
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
