"""Transcripts of fields of the wrong type: every field the bridge reads is checked first.

A request with one gets a JSON-RPC error (-32602 mostly) and those behind it are served; a
notification or answer with one is ignored or relayed as it came, never a crash.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from tests.core.harness import (
    DISCOVER_RESULT,
    LEGACY_INIT_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    mode_a,
    mode_b,
    modern,
    modern_meta,
    modern_pair,
    one,
    request,
    sent,
)

ODD = [["debug"], {"level": "debug"}, 3, None, True, "loud"]


def error(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": body}


def note(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


# Requests from the client -----------------------------------------------------------------


@pytest.mark.parametrize("level", ODD)
def test_set_level_with_a_level_of_the_wrong_type_is_invalid_params(level: Any) -> None:
    h, _ = mode_a()
    reply = one(h.client(request(3, "logging/setLevel", {"level": level})), "client")
    assert reply == error(3, -32602, f"Invalid log level: {level!r}")


def test_requests_queued_behind_an_ill_typed_one_are_all_answered() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    for message in (initialize(), request(1, "logging/setLevel", {"level": ["debug"]}),
                    request(2, "tools/list"), request(3, "logging/setLevel", {"level": "info"})):
        assert sent(h.client(message), "client") == []  # queued until the server's era is known
    actions = h.server(answer(probe, DISCOVER_RESULT))
    replies = {r["id"]: r for r in sent(actions, "client")}
    assert replies[1] == error(1, -32602, "Invalid log level: ['debug']")
    assert replies[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert sorted(replies) == [0, 1, 3]
    assert one(actions, "server")["method"] == "tools/list"


@pytest.mark.parametrize("level", [["debug"], {"level": "debug"}, 3, True, "loud"])
def test_a_modern_log_level_of_the_wrong_type_is_invalid_params(level: Any) -> None:
    h, _ = mode_b()
    meta = {"io.modelcontextprotocol/logLevel": level}
    reply = one(h.client(modern(4, "tools/list", meta=meta)), "client")
    assert reply == error(4, -32602, f"Invalid log level: {level!r}")


def test_requests_waiting_for_the_handshake_behind_an_ill_typed_one_are_all_answered() -> None:
    h = Harness()
    h.bridge.secret = b"s"
    probe = one(h.start(), "server")
    for message in (modern(1, "tools/list"),
                    modern(2, "tools/list", meta={"io.modelcontextprotocol/logLevel": [1]}),
                    modern(3, "prompts/list")):
        assert sent(h.client(message), "client") == []  # queued until the server's era is known
    actions = h.server(fail(probe, -32601, "Method not found"))
    assert one(actions, "client") == error(2, -32602, "Invalid log level: [1]")
    init = one(actions, "server")
    _, ping = sent(h.server(answer(init, LEGACY_INIT_RESULT)), "server")
    forwarded = sent(h.server(answer(ping, {})), "server")
    assert [m["method"] for m in forwarded] == ["tools/list", "prompts/list"]


@pytest.mark.parametrize("params", [[1, 2], ["a"]])
def test_params_that_are_an_array_are_invalid_params(params: Any) -> None:
    h, _ = mode_a()
    assert one(h.client(request(8, "tools/call", params)), "client") == \
        error(8, -32602, "Invalid message: params must be an object")


@pytest.mark.parametrize("params", [1, "x", True, None])
def test_params_that_are_not_structured_make_an_invalid_request(params: Any) -> None:
    h, _ = mode_a()
    message = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params}
    assert one(h.client(message), "client") == \
        error(8, -32600, "Invalid message: params must be an object")


def test_an_initialize_with_fields_of_the_wrong_type_negotiates_what_it_can() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(request(0, "initialize", {"protocolVersion": ["2025-06-18"], "capabilities": [1],
                                       "clientInfo": "me"}))
    reply = one(h.server(answer(probe, DISCOVER_RESULT)), "client")
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    forwarded = one(h.client(request(1, "tools/list")), "server")
    meta = forwarded["params"]["_meta"]
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert "io.modelcontextprotocol/clientInfo" not in meta


def test_a_progress_token_of_the_wrong_type_is_forwarded_but_never_tracked() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/call", {"name": "t",
                                                       "_meta": {"progressToken": [1]}})),
                    "server")
    assert forwarded["params"]["_meta"]["progressToken"] == [1]
    progress = note("notifications/progress", {"progressToken": [1], "progress": 1})
    assert sent(h.server(progress), "client") == []


def test_a_cancel_reason_of_the_wrong_type_is_left_out() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/call", {"name": "t"})), "server")
    cancel = one(h.client(note("notifications/cancelled", {"requestId": 1, "reason": [1]})),
                 "server")
    assert cancel == note("notifications/cancelled", {"requestId": forwarded["id"]})


@pytest.mark.parametrize("target", [{"id": 1}, [1], None, 1.5])
def test_a_modern_cancel_naming_no_request_is_ignored(target: Any) -> None:
    h, _ = mode_b()
    one(h.client(modern(1, "tools/call", {"name": "t"})), "server")
    assert sent(h.client(note("notifications/cancelled", {"requestId": target})), "server") == []


# What the server sends --------------------------------------------------------------------


@pytest.mark.parametrize(("request_", "problem"), [
    ({"method": ["elicitation/create"]}, "['elicitation/create'] is not an input request"),
    ({"method": {"m": 1}}, "{'m': 1} is not an input request"),
    ({"method": "elicitation/create", "params": [1]}, "params must be an object"),
    ("roots/list", "None is not an input request"),
])
def test_an_input_request_of_the_wrong_shape_fails_the_call(request_: Any, problem: str) -> None:
    h, _ = mode_a(caps={"elicitation": {}, "roots": {}})
    forwarded = one(h.client(request(5, "tools/call", {"name": "t"})), "server")
    reply = one(h.server(answer(forwarded, {"resultType": "input_required",
                                            "inputRequests": {"k": request_}})), "client")
    assert reply == error(5, -32603, f"mcp-rosetta: input request 'k': {problem}",
                          {"source": "mcp-rosetta"})


def test_a_url_elicitation_whose_url_is_not_a_string_is_asked_as_it_came() -> None:
    h, _ = mode_a(caps={"elicitation": {"url": {}}})
    forwarded = one(h.client(request(5, "tools/call", {"name": "t"})), "server")
    url = {"method": "elicitation/create",
           "params": {"mode": "url", "message": "m", "url": ["https://x"]}}
    asked = one(h.server(answer(forwarded, {"resultType": "input_required",
                                            "inputRequests": {"k": url}})), "client")
    assert asked["params"]["url"] == ["https://x"]


def test_sampling_messages_that_are_not_an_array_reach_an_old_client_as_they_came() -> None:
    h, _ = mode_a("2025-06-18", caps={"sampling": {}})
    forwarded = one(h.client(request(5, "tools/call", {"name": "t"})), "server")
    sampling = {"method": "sampling/createMessage", "params": {"messages": 7, "maxTokens": 1}}
    asked = one(h.server(answer(forwarded, {"resultType": "input_required",
                                            "inputRequests": {"k": sampling}})), "client")
    assert asked["params"] == {"messages": 7, "maxTokens": 1}


@pytest.mark.parametrize("data", [[1], "text", None, {"supported": "2026-07-28"}])
def test_an_unsupported_version_error_with_odd_data_is_reported_not_retried(data: Any) -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(5, "tools/list")), "server")
    actions = h.server(fail(forwarded, -32022, "Unsupported protocol version", data))
    assert one(actions, "client") == error(
        5, -32603, "mcp-rosetta: the server no longer supports 2026-07-28; it supports []",
        {"supported": []})
    assert one(actions, "server")["method"] == "server/discover"


def test_a_rediscovery_answer_of_the_wrong_shape_is_ignored() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(5, "tools/list")), "server")
    actions = h.server(fail(forwarded, -32022, "x", {"supported": []}))
    rediscover = one(actions, "server")
    h.server(answer(rediscover, {"supportedVersions": 5, "capabilities": {}}))
    assert h.bridge.handler.discover == DISCOVER_RESULT  # type: ignore[union-attr]


def test_a_pinned_modern_server_that_answers_the_probe_with_odd_data_is_refused_clearly() -> None:
    h = Harness(CoreConfig(server_era="modern"))
    probe = one(h.start(), "server")
    h.client(request(0, "initialize", {"protocolVersion": "2025-06-18"}))
    reply = one(h.server(fail(probe, -32601, "Method not found", [1])), "client")
    assert reply == error(0, -32602, "mcp-rosetta: server_era is pinned to modern, but the "
                          "server answered server/discover like a legacy server (error -32601: "
                          "'Method not found'); remove --server-era modern (or set server_era = "
                          '"auto") to let mcp-rosetta detect the era',
                          {"supported": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"],
                           "requested": "2025-06-18",
                           "serverAnswered": {"code": -32601, "message": "Method not found",
                                              "data": [1]}})


@pytest.mark.parametrize("target", [lambda h: [h.minted("listen")], lambda h: {"id": 1},
                                    lambda h: 2], ids=["[listen id]", "object", "number"])
def test_a_stream_end_naming_no_stream_is_ignored(target: Any) -> None:
    listing = {**DISCOVER_RESULT, "capabilities": {"tools": {"listChanged": True}}}
    h, _ = mode_a(discover=listing)
    assert sent(h.server(note("notifications/cancelled", {"requestId": target(h)})),
                "client") == []
    assert sent(h.advance(60), "server") == []  # the stream was not taken as ended


@pytest.mark.parametrize("tag", [lambda h: [h.minted("first")], lambda h: {"k": 1}, lambda h: 7],
                         ids=["[minted id]", "object", "number"])
def test_a_stream_tag_of_the_wrong_type_passes_through_untouched(tag: Any) -> None:
    h = modern_pair()
    message = note("notifications/tools/list_changed",
                   {"_meta": {"io.modelcontextprotocol/subscriptionId": tag(h)}})
    assert one(h.server(message), "client") == message


@pytest.mark.parametrize("token", [{"t": 1}, [1], None, True])
def test_legacy_progress_with_a_token_of_the_wrong_type_is_dropped(token: Any) -> None:
    h, _ = mode_b()
    one(h.client(modern(1, "tools/call", {"name": "t"}, meta={"progressToken": "p"})), "server")
    progress = note("notifications/progress", {"progressToken": token, "progress": 1})
    assert sent(h.server(progress), "client") == []


def test_a_legacy_handshake_answer_with_odd_fields_is_adopted_as_far_as_it_is_valid() -> None:
    odd = {**LEGACY_INIT_RESULT, "capabilities": [1], "serverInfo": "old", "instructions": 5}
    _, actions = mode_b(init=odd)
    result = one(actions, "client")["result"]
    assert result["capabilities"] == {}
    assert "instructions" not in result and "_meta" not in result


def test_modern_envelope_capabilities_of_the_wrong_type_are_invalid_params() -> None:
    h, _ = mode_b()
    message = modern(1, "tools/list")
    message["params"]["_meta"] = {**modern_meta(), "io.modelcontextprotocol/clientCapabilities":
                                  ["roots"]}
    assert one(h.client(message), "client") == error(
        1, -32602, "Missing required _meta field io.modelcontextprotocol/clientCapabilities")
