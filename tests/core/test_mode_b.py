"""Mode B (modern client, legacy server): handshake, discover, envelope checks, requests,
errors, logging, progress, cancellation, batches and shutdown."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.events import Stop
from tests.core.harness import (
    LEGACY_INIT_RESULT,
    OLD_SRV,
    Harness,
    answer,
    fail,
    mode_b,
    modern,
    no_requests_to,
    one,
    request,
    sent,
)

CLIENT_INFO = {"name": "NewClient", "version": "3.1", "title": "New"}
SUPERSET = {"roots": {}, "sampling": {"tools": {}, "context": {}},
            "elicitation": {"form": {}, "url": {}}}
DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"logging": {}, "completions": {}, "prompts": {"listChanged": True},
                     "resources": {"subscribe": True, "listChanged": True},
                     "tools": {"listChanged": True}},
    "instructions": "Legacy tools.",
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": OLD_SRV,
}


def notify(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


# Opening: probe, handshake, discover ------------------------------------------------------


@pytest.mark.parametrize("probe_answer", [
    {"code": -32601, "message": "Method not found"},
    {"code": -32602, "message": "Invalid request parameters"},
    None,  # no answer at all: the probe times out
])
def test_a_legacy_probe_answer_leads_to_the_bridges_own_handshake(probe_answer: Any) -> None:
    h = Harness(CoreConfig(probe_timeout=2.0))
    probe = one(h.start(), "server")
    first = modern("d1", "server/discover",
                   meta={"io.modelcontextprotocol/clientInfo": CLIENT_INFO})
    assert sent(h.client(first), "server") == []
    if probe_answer is None:
        actions = h.advance(2.0)
    else:
        actions = h.server({"jsonrpc": "2.0", "id": probe["id"], "error": probe_answer})
    assert h.bridge.mode == "B"
    assert sent(actions, "client") == []
    assert one(actions, "server") == {
        "jsonrpc": "2.0", "id": h.minted("initialize"), "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": SUPERSET,
                   "clientInfo": CLIENT_INFO}}
    actions = h.server(answer({"id": h.minted("initialize")}, LEGACY_INIT_RESULT))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": h.minted("ping"), "method": "ping"},
    ]
    assert sent(actions, "client") == []
    actions = h.server(answer({"id": h.minted("ping")}, {}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": "d1", "result": DISCOVER}]


def test_the_bridge_names_itself_when_the_first_request_names_no_client() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list", meta={"io.modelcontextprotocol/clientInfo": {"name": "x"}}))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert init["params"]["clientInfo"] == {"name": "mcp-rosetta", "version": "0.1.0"}


def test_requests_wait_for_the_handshake_then_go_in_order() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert sent(h.client(modern(2, "prompts/list")), "server") == []
    assert sent(h.client(modern(3, "server/discover")), "client") == []
    h.server(answer(init, LEGACY_INIT_RESULT))
    actions = h.server(answer(h.sent_request("ping"), {}))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": h.minted("tools/list"), "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": h.minted("prompts/list"), "method": "prompts/list", "params": {}},
    ]
    assert [m["id"] for m in sent(actions, "client")] == [3]


def test_discover_translates_capabilities_and_keeps_what_the_server_lacks_out() -> None:
    init = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "tasks": {}},
            "serverInfo": {"name": "Tiny", "version": "1", "title": "T"}}
    _, actions = mode_b(init=init)
    assert one(actions, "client")["result"] == {
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "Tiny", "version": "1",
                                                         "title": "T"}}}


def test_the_configured_ttl_goes_on_discover_and_lists() -> None:
    h, actions = mode_b(config=CoreConfig(cache_ttl_ms=60000))
    assert one(actions, "client")["result"]["ttlMs"] == 60000
    forwarded = one(h.client(modern(1, "resources/list")), "server")
    reply = one(h.server(answer(forwarded, {"resources": []})), "client")
    assert reply["result"] == {"resources": [], "resultType": "complete", "ttlMs": 60000,
                               "cacheScope": "private", "_meta": OLD_SRV}


@pytest.mark.parametrize(("reply", "why"), [
    (lambda init: fail(init, -32603, "boom"),
     "it answered initialize with error -32603: boom"),
    (lambda init: answer(init, {"protocolVersion": "2026-07-28", "capabilities": {}}),
     "it answered initialize with protocol version '2026-07-28'"),
])
def test_a_failed_handshake_is_reported_on_every_request(reply: Any, why: str) -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list"))
    h.server(fail(probe, -32601, "Method not found"))
    error = {"code": -32603, "message": f"mcp-rosetta: the legacy server could not be "
                                        f"initialized: {why}", "data": {"source": "mcp-rosetta"}}
    assert one(h.server(reply(h.sent_request("initialize"))), "client") == {
        "jsonrpc": "2.0", "id": 1, "error": error}
    assert one(h.client(modern(2, "tools/list")), "client") == {"jsonrpc": "2.0", "id": 2,
                                                                "error": error}


def test_silence_on_initialize_fails_after_the_handshake_timeout() -> None:
    h = Harness(CoreConfig(handshake_timeout=3.0))
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list"))
    h.server(fail(probe, -32601, "Method not found"))
    assert sent(h.advance(2.9), "client") == []
    reply = one(h.advance(0.1), "client")
    assert reply["error"]["message"] == ("mcp-rosetta: the legacy server could not be "
                                         "initialized: no answer to initialize within 3 s")


def test_silence_on_the_settling_ping_only_delays_the_requests() -> None:
    h = Harness(CoreConfig(handshake_timeout=3.0))
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.server(answer(init, LEGACY_INIT_RESULT))
    forwarded = one(h.advance(3.0), "server")
    assert forwarded == {"jsonrpc": "2.0", "id": h.minted("list"), "method": "tools/list",
                         "params": {}}
    late = h.server(answer(h.sent_request("ping"), {}))  # the late pong changes nothing
    assert sent(late, "server") == [] and sent(late, "client") == []


# The envelope every modern request must carry (basic/index.mdx) ---------------------------


@pytest.mark.parametrize(("params", "code", "message", "data"), [
    (None, -32602, "Missing required params._meta (protocolVersion and clientCapabilities) "
                   "for MCP 2026-07-28", None),
    ({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}, -32602,
     "Missing required _meta field io.modelcontextprotocol/protocolVersion", None),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728,
                "io.modelcontextprotocol/clientCapabilities": {}}}, -32602,
     "Missing required _meta field io.modelcontextprotocol/protocolVersion", None),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, -32602,
     "Missing required _meta field io.modelcontextprotocol/clientCapabilities", None),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientCapabilities": {}}}, -32022,
     "Unsupported protocol version", {"supported": ["2026-07-28"], "requested": "2025-11-25"}),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "loud"}}, -32602,
     "Invalid log level: 'loud'", None),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": "me"}}, -32602,
     "io.modelcontextprotocol/clientInfo must be an Implementation object", None),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": [],
                "progressToken": True}}, -32602,
     "Missing required _meta field io.modelcontextprotocol/clientCapabilities", None),
])
def test_a_request_without_a_valid_envelope_is_refused_as_a_modern_server_must(
        params: Any, code: int, message: str, data: Any) -> None:
    h, _ = mode_b()
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    actions = h.client(request(7, "tools/call", params))
    assert sent(actions, "server") == []
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 7, "error": error}


def test_an_unsupported_version_first_is_refused_without_a_handshake() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(request(1, "tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2027-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}))
    actions = h.server(fail(probe, -32601, "Method not found"))
    assert sent(actions, "server") == []
    assert one(actions, "client")["error"] == {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2027-01-01"}}


# Requests and results ---------------------------------------------------------------------


def test_the_envelope_and_mrtr_fields_are_stripped_and_results_made_modern() -> None:
    h, _ = mode_b()
    actions = h.client(modern("l", "tools/list", {"cursor": "c2", "inputResponses": {},
                                                  "requestState": "x"},
                              meta={"traceparent": "00-ab-cd-01",
                                    "io.modelcontextprotocol/clientInfo": CLIENT_INFO}))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": h.minted("list"),
                                      "method": "tools/list",
                                      "params": {"cursor": "c2",
                                                 "_meta": {"traceparent": "00-ab-cd-01"}}}
    tools = [{"name": "a", "inputSchema": {"type": "object"},
              "execution": {"taskSupport": "optional"}},
             {"name": "b", "inputSchema": {"type": "object"}}]
    reply = one(h.server(answer({"id": h.minted("list")}, {"tools": tools, "nextCursor": "c3"})),
                "client")
    assert reply == {"jsonrpc": "2.0", "id": "l", "result": {
        "tools": [{"name": "a", "inputSchema": {"type": "object"}},
                  {"name": "b", "inputSchema": {"type": "object"}}],
        "nextCursor": "c3", "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
        "_meta": OLD_SRV}}


def test_a_non_cacheable_result_gets_resulttype_and_server_info_only() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(5, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"},
        "context": {"arguments": {}}})), "server")
    assert forwarded["params"]["context"] == {"arguments": {}}  # a 2025-11-25 server knows it
    reply = one(h.server(answer(forwarded, {"completion": {"values": ["xy"]},
                                            "_meta": {"k": 1}})), "client")
    assert reply == {"jsonrpc": "2.0", "id": 5, "result": {
        "completion": {"values": ["xy"]}, "resultType": "complete",
        "_meta": {"k": 1, "io.modelcontextprotocol/serverInfo": {"name": "OldSrv",
                                                                 "version": "0.9"}}}}


def test_completion_context_is_stripped_for_servers_older_than_2025_06_18() -> None:
    h, _ = mode_b(init={**LEGACY_INIT_RESULT, "protocolVersion": "2025-03-26"})
    forwarded = one(h.client(modern(5, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"},
        "context": {"arguments": {}}})), "server")
    assert forwarded["params"] == {"ref": {"type": "ref/prompt", "name": "p"},
                                   "argument": {"name": "a", "value": "x"}}


@pytest.mark.parametrize(("legacy", "modern_error"), [
    ({"code": -32002, "message": "Resource not found", "data": {"uri": "file:///x"}},
     {"code": -32602, "message": "Resource not found", "data": {"uri": "file:///x"}}),
    ({"code": -32042, "message": "Needs a URL", "data": {"elicitations": []}},
     {"code": -32603, "message": "mcp-rosetta: the server requires URL elicitation, which a "
                                 "2026-07-28 client can be asked for only on tools/call, "
                                 "resources/read and prompts/get: Needs a URL",
      "data": {"legacyCode": -32042, "legacyData": {"elicitations": []}}}),
    ({"code": -32050, "message": "Custom"},
     {"code": -32603, "message": "mcp-rosetta: the server answered with legacy error code "
                                 "-32050: Custom", "data": {"legacyCode": -32050}}),
    ({"code": -32000, "message": "Implementation defined"},
     {"code": -32000, "message": "Implementation defined"}),
])
def test_legacy_errors_become_what_a_modern_server_may_send(legacy: Any, modern_error: Any) -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern("r", "resources/templates/list")), "server")
    reply = one(h.server({"jsonrpc": "2.0", "id": forwarded["id"], "error": legacy}), "client")
    assert reply == {"jsonrpc": "2.0", "id": "r", "error": modern_error}


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe", "tasks/get"])
def test_methods_the_modern_era_removed_are_unknown(method: str) -> None:
    h, _ = mode_b()
    actions = h.client(modern(9, method))
    assert sent(actions, "server") == []
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32601, "message": f"Method not found: {method}"}}


def test_the_legacy_servers_ping_is_answered_by_the_bridge() -> None:
    h, _ = mode_b()
    actions = h.server(request(77, "ping"))
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 77, "result": {}}


def test_other_legacy_server_requests_are_unknown_methods() -> None:
    h, _ = mode_b()
    actions = h.server(request("s1", "tasks/get", {"taskId": "t"}))
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": "s1", "error": {
        "code": -32601, "message": "Method not found: tasks/get"}}


def test_client_notifications_other_than_cancelled_and_responses_are_dropped() -> None:
    h, _ = mode_b()
    assert sent(h.client(notify("notifications/initialized")), "server") == []
    assert sent(h.client(notify("notifications/roots/list_changed")), "server") == []
    actions = h.client({"jsonrpc": "2.0", "id": "x", "result": {}})
    assert sent(actions, "server") == [] and sent(actions, "client") == []


def test_a_forwarded_request_times_out_when_configured() -> None:
    h, _ = mode_b(config=CoreConfig(request_timeout=5.0))
    forwarded = one(h.client(modern(1, "tools/list", meta={"progressToken": 4})), "server")
    actions = h.advance(5.0)
    assert one(actions, "server") == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": forwarded["id"],
                                                 "reason": "mcp-rosetta request timeout"}}
    assert one(actions, "client")["error"]["message"] == \
        "mcp-rosetta: no answer from the server within 5 s"
    assert h.bridge.handler.progress.owners == {}  # type: ignore[union-attr]


# Cancellation -----------------------------------------------------------------------------


def test_cancelling_a_forwarded_request_cancels_it_at_the_server_and_answers_nothing() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(3, "resources/list")), "server")
    actions = h.client(notify("notifications/cancelled", {"requestId": 3, "reason": "bored"}))
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": forwarded["id"], "reason": "bored"}}
    assert sent(h.server(answer(forwarded, {"resources": []})), "client") == []


def test_cancelling_a_request_that_waits_for_the_handshake_drops_it() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern(1, "tools/list"))
    h.client(modern("2", "prompts/list"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.client(notify("notifications/cancelled", {"requestId": "2"}))
    h.server(answer(init, LEGACY_INIT_RESULT))
    actions = h.server(answer(h.sent_request("ping"), {}))
    assert [m["method"] for m in sent(actions, "server")] == ["tools/list"]


# Logging (logging.mdx, TRANSLATION.md §8) -------------------------------------------------


def log(level: str, data: str) -> dict[str, Any]:
    return notify("notifications/message", {"level": level, "logger": "srv", "data": data})


def test_log_level_sets_the_legacy_level_and_messages_reach_only_requests_that_asked() -> None:
    h, _ = mode_b()
    assert sent(h.server(log("error", "before")), "client") == []  # nothing in flight
    plain = one(h.client(modern(1, "tools/list")), "server")
    assert sent(h.server(log("emergency", "unasked")), "client") == []
    actions = h.client(modern(2, "prompts/list",
                              meta={"io.modelcontextprotocol/logLevel": "warning"}))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": h.minted("setLevel"), "method": "logging/setLevel",
         "params": {"level": "warning"}},
        {"jsonrpc": "2.0", "id": h.minted("prompts/list"), "method": "prompts/list", "params": {}},
    ]
    assert sent(h.server(answer({"id": h.minted("setLevel")}, {})), "client") == []
    assert sent(h.server(log("info", "too low")), "client") == []
    assert sent(h.server(log("warning", "at level")), "client") == [log("warning", "at level")]
    assert sent(h.server(log("critical", "above")), "client") == [log("critical", "above")]
    h.server(answer({"id": h.minted("prompts/list")}, {"prompts": []}))
    assert sent(h.server(log("critical", "after")), "client") == []
    h.server(answer(plain, {"tools": []}))


def test_the_legacy_level_changes_only_when_the_needed_level_does() -> None:
    h, _ = mode_b()
    debug = {"io.modelcontextprotocol/logLevel": "debug"}
    error = {"io.modelcontextprotocol/logLevel": "error"}
    assert [m["method"] for m in sent(h.client(modern(1, "tools/list", meta=error)), "server")] \
        == ["logging/setLevel", "tools/list"]
    actions = h.client(modern(2, "tools/list", meta=debug))
    assert sent(actions, "server")[0]["params"] == {"level": "debug"}
    # debug is still in flight: a new error-level request needs no change
    assert [m["method"] for m in sent(h.client(modern(3, "tools/list", meta=error)), "server")] \
        == ["tools/list"]
    assert sent(h.server(log("debug", "d")), "client") == [log("debug", "d")]


def test_no_set_level_for_a_server_without_logging() -> None:
    init = {**LEGACY_INIT_RESULT, "capabilities": {"tools": {}}}
    h, _ = mode_b(init=init)
    actions = h.client(modern(1, "tools/list", meta={"io.modelcontextprotocol/logLevel": "info"}))
    assert [m["method"] for m in sent(actions, "server")] == ["tools/list"]
    assert sent(h.server(log("info", "x")), "client") == [log("info", "x")]


# Progress (§9.3) --------------------------------------------------------------------------


def test_progress_is_re_pointed_at_the_clients_token_of_the_same_json_type() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(1, "resources/list", meta={"progressToken": 7})), "server")
    assert forwarded["params"] == {"_meta": {"progressToken": h.minted("token")}}
    progress = {"progressToken": h.minted("token"), "progress": 1, "total": 2, "message": "half"}
    assert sent(h.server(notify("notifications/progress", progress)), "client") == [
        notify("notifications/progress", {**progress, "progressToken": 7})]
    h.server(answer(forwarded, {"resources": []}))
    assert sent(h.server(notify("notifications/progress", progress)), "client") == []


def test_progress_for_unknown_tokens_is_dropped() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(1, "resources/list")), "server")
    assert forwarded["params"] == {}
    for token in (h.minted("probe"), 5, None):
        assert sent(h.server(notify("notifications/progress",
                                    {"progressToken": token, "progress": 1})), "client") == []


# Batches from a 2025-03-26 server ---------------------------------------------------------


def test_a_2025_03_26_server_may_batch_and_its_elements_are_handled_one_by_one() -> None:
    h, _ = mode_b(init={**LEGACY_INIT_RESULT, "protocolVersion": "2025-03-26"})
    forwarded = one(h.client(modern(1, "resources/list", meta={"progressToken": "p"})), "server")
    assert forwarded["params"]["_meta"]["progressToken"] == h.minted("token")
    batch = [notify("notifications/progress", {"progressToken": h.minted("token"), "progress": 1}),
             request(9, "ping"),
             answer(forwarded, {"resources": []})]
    actions = h.server(batch)
    assert sent(actions, "client") == [
        notify("notifications/progress", {"progressToken": "p", "progress": 1}),
        {"jsonrpc": "2.0", "id": 1, "result": {"resources": [], "resultType": "complete",
                                               "ttlMs": 0, "cacheScope": "private",
                                               "_meta": OLD_SRV}}]
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


def test_a_batch_from_a_server_of_another_revision_is_invalid() -> None:
    h, _ = mode_b()
    actions = h.server([request(9, "ping")])
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert any(log.event == "message.invalid" for log in h.logs)


# Shutdown ---------------------------------------------------------------------------------


def test_shutdown_answers_every_waiting_request_and_closes_streams_gracefully() -> None:
    h, _ = mode_b()
    one(h.client(modern(1, "tools/list")), "server")
    h.client(modern("s", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    actions = h.shutdown()
    assert sent(actions, "client") == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603,
                                              "message": "mcp-rosetta is shutting down",
                                              "data": {"source": "mcp-rosetta",
                                                       "method": "tools/list"}}},
        {"jsonrpc": "2.0", "id": "s", "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": "s", **OLD_SRV}}},
    ]
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)
    no_requests_to(actions)


def test_after_client_eof_the_bridge_waits_only_for_answers_the_client_is_owed() -> None:
    h, _ = mode_b()
    h.client(modern("s", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    forwarded = one(h.client(modern(1, "tools/list")), "server")
    actions = h.close("client")
    assert not any(isinstance(a, Stop) for a in actions)
    actions = h.server(answer(forwarded, {"tools": []}))
    assert [m["id"] for m in sent(actions, "client")] == [1, "s"]  # the stream closes last
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)
