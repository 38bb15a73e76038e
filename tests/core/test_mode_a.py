"""Mode A (legacy client, modern server): handshake, envelope, results, errors, ids."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.eras import META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO
from bridge.core.events import Stop
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    mode_a,
    one,
    request,
    sent,
)


@pytest.mark.parametrize(
    ("asked", "agreed"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_initialize_negotiates_each_legacy_revision(asked: str, agreed: str) -> None:
    _, result = mode_a(asked)
    assert result["protocolVersion"] == agreed


def test_initialize_result_comes_from_the_discover_result() -> None:
    _, result = mode_a("2025-11-25")
    assert result == {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "logging": {},
            "completions": {},
            "prompts": {},
            "resources": {},
            "tools": {},
        },
        "serverInfo": {"name": "ModernSrv", "version": "2.0", "title": "Modern", "icons": []},
        "instructions": "Use the tools.",
    }


def test_initialize_for_2024_11_05_drops_what_that_revision_lacks() -> None:
    _, result = mode_a("2024-11-05")
    assert result["serverInfo"] == {"name": "ModernSrv", "version": "2.0"}
    assert "completions" not in result["capabilities"]


def test_server_info_falls_back_to_the_bridge_and_extensions_are_dropped() -> None:
    discover = {
        **DISCOVER_RESULT,
        "_meta": {},
        "capabilities": {"tools": {}, "extensions": {"x": {}}},
    }
    _, result = mode_a(discover=discover)
    assert result["serverInfo"]["name"] == "mcp-rosetta"
    assert result["capabilities"] == {"tools": {}, "logging": {}}


def test_a_server_without_our_version_is_refused_by_name() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    reply = one(
        h.server(answer(probe, {**DISCOVER_RESULT, "supportedVersions": ["2027-01-01"]})), "client"
    )
    assert reply["id"] == 0
    assert reply["error"]["code"] == -32602
    assert "2027-01-01" in reply["error"]["message"]
    assert reply["error"]["data"]["serverSupportedVersions"] == ["2027-01-01"]


def test_initialized_is_swallowed_and_ping_answered_locally() -> None:
    h, _ = mode_a()
    assert h.client({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    assert one(h.client(request("p", "ping")), "client") == {
        "jsonrpc": "2.0",
        "id": "p",
        "result": {},
    }


def test_every_request_gets_the_envelope_and_keeps_the_client_meta() -> None:
    h, _ = mode_a(caps={"roots": {"listChanged": True}, "sampling": {}, "tasks": {}})
    params = {"name": "t", "arguments": {}, "_meta": {"progressToken": "p1", "traceparent": "00-x"}}
    forwarded = one(h.client(request(3, "tools/call", params)), "server")
    assert forwarded["id"] != 3
    assert forwarded["params"] == {
        "name": "t",
        "arguments": {},
        "_meta": {
            "progressToken": "p1",
            "traceparent": "00-x",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}, "sampling": {}},
            META_CLIENT_INFO: {"name": "OldClient", "version": "1.0"},
        },
    }
    bare = one(h.client(request(4, "tools/list")), "server")
    assert set(bare["params"]) == {"_meta"}


@pytest.mark.parametrize("client_id", [7, "7", 0, "", "a-long-id"])
def test_results_reach_the_client_under_its_own_id_without_modern_fields(client_id: Any) -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(client_id, "tools/list")), "server")
    result = {
        "resultType": "complete",
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
        "ttlMs": 100,
        "cacheScope": "public",
        "_meta": {META_SERVER_INFO: {"name": "s", "version": "1"}},
    }
    reply = one(h.server(answer(forwarded, result)), "client")
    assert reply == {
        "jsonrpc": "2.0",
        "id": client_id,
        "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
    }
    assert type(reply["id"]) is type(client_id)


def test_logging_set_level_is_local_and_stamped_on_later_requests() -> None:
    h, _ = mode_a()
    assert (
        one(h.client(request(1, "logging/setLevel", {"level": "warning"})), "client")["result"]
        == {}
    )
    forwarded = one(h.client(request(2, "prompts/list")), "server")
    assert forwarded["params"]["_meta"][META_LOG_LEVEL] == "warning"
    bad = one(h.client(request(3, "logging/setLevel", {"level": "loud"})), "client")
    assert bad["error"]["code"] == -32602


def log_message(level: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": level, "logger": "srv", "data": f"at {level}"}}


def test_logging_is_offered_and_served_even_if_the_server_does_not_declare_it() -> None:
    # The official Python SDK 2.x sends per-request logs without declaring `logging`.
    h, result = mode_a(discover={**DISCOVER_RESULT, "capabilities": {"tools": {}}})
    assert result["capabilities"] == {"tools": {}, "logging": {}}
    reply = one(h.client(request(1, "logging/setLevel", {"level": "warning"})), "client")
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {}}
    forwarded = one(h.client(request(2, "tools/call", {"name": "chatty"})), "server")
    assert forwarded["params"]["_meta"][META_LOG_LEVEL] == "warning"
    relayed = [sent(h.server(log_message(level)), "client")
               for level in ("debug", "info", "warning", "error", "emergency")]
    assert relayed == [[], [], [log_message("warning")], [log_message("error")],
                       [log_message("emergency")]]


def test_logs_below_the_level_are_dropped_even_if_the_server_sends_them() -> None:
    h, _ = mode_a()
    h.client(request(1, "logging/setLevel", {"level": "error"}))
    h.client(request(2, "tools/call", {"name": "chatty"}))
    assert sent(h.server(log_message("warning")), "client") == []
    assert sent(h.server(log_message("critical")), "client") == [log_message("critical")]
    bad = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": 3}}
    assert sent(h.server(bad), "client") == []
    # A lower level lets more through from then on.
    h.client(request(3, "logging/setLevel", {"level": "debug"}))
    assert sent(h.server(log_message("debug")), "client") == [log_message("debug")]


def test_log_messages_and_progress_are_forwarded() -> None:
    h, _ = mode_a("2024-11-05")
    h.client(request(1, "tools/call", {"name": "slow", "_meta": {"progressToken": 5}}))
    log = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": "hello"},
    }
    assert one(h.server(log), "client") == log
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 5, "progress": 1, "total": 2, "message": "half"},
    }
    assert one(h.server(progress), "client")["params"] == {
        "progressToken": 5,
        "progress": 1,
        "total": 2,
    }


def test_progress_never_goes_backwards_for_a_token() -> None:
    h, _ = mode_a()
    h.client(request(1, "tools/call", {"name": "slow", "_meta": {"progressToken": "t"}}))

    def progress(value: float) -> list[Any]:
        return sent(
            h.server(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": "t", "progress": value},
                }
            ),
            "client",
        )

    assert len(progress(1)) == 1
    assert progress(1) == []
    assert progress(0.5) == []
    assert len(progress(2)) == 1


def test_cancel_is_remapped_to_the_server_id_and_late_answers_are_dropped() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(9, "tools/call", {"name": "slow"})), "server")
    cancel = one(
        h.client(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 9, "reason": "user"},
            }
        ),
        "server",
    )
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": forwarded["id"], "reason": "user"},
    }
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []


def test_cancel_of_an_unknown_request_does_nothing() -> None:
    h, _ = mode_a()
    assert (
        sent(
            h.client(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 123},
                }
            ),
            "server",
        )
        == []
    )


def test_resource_not_found_becomes_the_legacy_code() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "resources/read", {"uri": "memo://x"})), "server")
    reply = one(
        h.server(fail(forwarded, -32602, "Resource not found", {"uri": "memo://x"})), "client"
    )
    assert reply["error"] == {
        "code": -32002,
        "message": "Resource not found",
        "data": {"uri": "memo://x"},
    }
    forwarded = one(h.client(request(2, "tools/call", {"name": "t"})), "server")
    reply = one(h.server(fail(forwarded, -32602, "Unknown tool: t")), "client")
    assert reply["error"]["code"] == -32602


def test_unsupported_version_mid_session_rediscovers_and_retries_once() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/call", {"name": "t"})), "server")
    supported = {"supported": ["2026-07-28"], "requested": "2026-07-28"}
    actions = h.server(fail(forwarded, -32022, "Unsupported protocol version", supported))
    rediscover, retry = sent(actions, "server")
    assert rediscover["method"] == "server/discover"
    assert retry["method"] == "tools/call" and retry["id"] != forwarded["id"]
    assert sent(actions, "client") == []
    reply = one(h.server(fail(retry, -32022, "Unsupported protocol version", supported)), "client")
    assert reply["id"] == 1 and reply["error"]["code"] == -32603


def test_unsupported_version_without_ours_fails_naming_the_versions() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/list")), "server")
    actions = h.server(
        fail(
            forwarded,
            -32022,
            "Unsupported protocol version",
            {"supported": ["2027-01-01"], "requested": "2026-07-28"},
        )
    )
    reply = one(actions, "client")
    assert reply["error"]["code"] == -32603 and "2027-01-01" in reply["error"]["message"]


def test_other_errors_pass_through_with_the_client_id() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request("x", "prompts/get", {"name": "nope"})), "server")
    error = {
        "code": -32021,
        "message": "needs elicitation",
        "data": {"requiredCapabilities": {"elicitation": {}}},
    }
    assert one(h.server({"jsonrpc": "2.0", "id": forwarded["id"], "error": error}), "client") == {
        "jsonrpc": "2.0",
        "id": "x",
        "error": error,
    }


def test_tasks_methods_are_not_found() -> None:
    h, _ = mode_a()
    assert one(h.client(request(1, "tasks/list")), "client")["error"]["code"] == -32601


def test_a_second_initialize_is_refused() -> None:
    h, _ = mode_a()
    assert one(h.client(initialize(id=5)), "client")["error"]["code"] == -32600


def test_server_requests_are_refused_never_forwarded() -> None:
    h, _ = mode_a()
    actions = h.server(request(1, "sampling/createMessage", {"messages": []}))
    assert sent(actions, "client") == []
    assert one(actions, "server")["error"]["code"] == -32601


def test_2025_03_26_batches_are_split_and_answered_as_one_array() -> None:
    h, _ = mode_a("2025-03-26")
    batch = [
        request(1, "tools/list"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request(2, "ping"),
        {"bad": True},
    ]
    actions = h.client(batch)
    forwarded = one(actions, "server")
    assert sent(actions, "client") == []
    reply = one(h.server(answer(forwarded, {"resultType": "complete", "tools": []})), "client")
    assert isinstance(reply, list)
    assert sorted(str(r.get("id")) for r in reply) == ["1", "2", "None"]
    assert {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}} in reply


def test_a_batch_from_a_later_revision_is_invalid() -> None:
    h, _ = mode_a("2025-06-18")
    reply = one(h.client([request(1, "ping")]), "client")
    assert reply["error"]["code"] == -32600


def test_with_restarts_off_a_server_exit_answers_every_pending_request_then_stops() -> None:
    h, _ = mode_a(config=CoreConfig(max_restarts=0))
    for n in range(3):
        h.client(request(n, "tools/call", {"name": "slow"}))
    actions = h.exit_child(0)
    replies = sent(actions, "client")
    assert sorted(r["id"] for r in replies) == [0, 1, 2]
    assert all(r["error"]["code"] == -32603 for r in replies)
    assert any(isinstance(a, Stop) and a.code == 69 for a in actions)


def test_shutdown_answers_pending_requests_and_stops_cleanly() -> None:
    h, _ = mode_a()
    h.client(request("a", "tools/list"))
    actions = h.shutdown()
    assert [r["id"] for r in sent(actions, "client")] == ["a"]
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)


def test_a_graceful_shutdown_finishes_what_was_taken_and_refuses_what_comes() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    actions = h.shutdown(grace=10)
    assert not any(isinstance(a, Stop) for a in actions) and sent(actions, "client") == []
    refused = one(h.client(request(2, "tools/list")), "client")
    assert refused["id"] == 2 and refused["error"]["code"] == -32603
    assert refused["error"]["message"] == "mcp-rosetta is shutting down"
    actions = h.server(answer(forwarded, {"content": []}))
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    assert [a.code for a in actions if isinstance(a, Stop)] == [0]


def test_a_graceful_shutdown_ends_when_its_grace_does() -> None:
    h, _ = mode_a()
    h.client(request(1, "tools/call", {"name": "stuck"}))
    h.shutdown(grace=10)
    assert not any(isinstance(a, Stop) for a in h.advance(9.9))
    actions = h.advance(0.1)
    reply = one(actions, "client")
    assert reply["id"] == 1 and reply["error"]["message"] == "mcp-rosetta is shutting down"
    assert [a.code for a in actions if isinstance(a, Stop)] == [0]


def test_a_core_that_stops_says_its_shutdown_message() -> None:
    """The HTTP front's cores name the node's stop, and what to do, in what they still owe
    and in what reaches them while they wind down."""
    said = "mcp-rosetta is shutting down: this node stopped; send the request again"
    h, _ = mode_a(config=CoreConfig(shutdown_message=said))
    h.client(request(1, "tools/call", {"name": "stuck"}))
    h.shutdown(grace=10)
    refused = one(h.client(request(2, "tools/list")), "client")
    assert refused["error"]["message"] == said
    reply = one(h.advance(10), "client")
    assert reply["id"] == 1 and reply["error"]["message"] == said


def test_request_timeout_answers_and_cancels() -> None:
    h, _ = mode_a(config=CoreConfig(request_timeout=10))
    forwarded = one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    actions = h.advance(10)
    assert one(actions, "client")["error"]["code"] == -32603
    assert one(actions, "server")["params"]["requestId"] == forwarded["id"]


def test_invalid_client_input_gets_an_error_not_a_crash() -> None:
    h, _ = mode_a()
    assert one(h.client(b"{oops"), "client")["error"]["code"] == -32700
    reply = one(h.client({"jsonrpc": "2.0", "id": 4, "method": "x", "params": [1]}), "client")
    assert reply["id"] == 4 and reply["error"]["code"] == -32602  # MCP params are objects
    reply = one(h.client({"jsonrpc": "2.0", "id": 5, "method": "x", "params": 1}), "client")
    assert reply["id"] == 5 and reply["error"]["code"] == -32600  # not even JSON-RPC


def test_client_eof_waits_for_the_answers_it_is_owed_then_stops() -> None:
    h, _ = mode_a()
    forwarded = one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    actions = h.close("client")
    assert not any(isinstance(a, Stop) for a in actions)
    actions = h.server(answer(forwarded, {"content": []}))
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)


def test_client_eof_drain_is_bounded() -> None:
    h, _ = mode_a(config=CoreConfig(drain_timeout=3))
    h.client(request(1, "tools/call", {"name": "stuck"}))
    h.close("client")
    actions = h.advance(3)
    assert one(actions, "client")["error"]["code"] == -32603
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)


def test_client_eof_with_nothing_owed_stops_at_once() -> None:
    h, _ = mode_a()
    assert any(isinstance(a, Stop) and a.code == 0 for a in h.close("client"))


def test_debug_logs_name_each_hop_of_a_call_with_its_time() -> None:
    h, _ = mode_a(config=CoreConfig(debug_logs=True))
    h.logs.clear()
    forwarded = one(h.client(request(5, "tools/call", {"name": "slow"})), "server")
    h.now += 0.25
    h.server(answer(forwarded, {"content": []}))
    hops = [(log.event, log.fields) for log in h.logs if log.level == "debug"]
    assert hops == [
        ("request.forwarded", {"to": "server", "method": "tools/call", "client_id": 5,
                               "server_id": forwarded["id"], "exchange": "EnvelopedRequest"}),
        ("response.matched", {"side": "server", "method": "tools/call",
                              "server_id": forwarded["id"], "client_id": 5,
                              "exchange": "EnvelopedRequest", "error": False, "elapsed_ms": 250.0}),
    ]


def test_without_debug_logs_a_call_logs_nothing() -> None:
    h, _ = mode_a()
    h.logs.clear()
    forwarded = one(h.client(request(5, "tools/call", {"name": "slow"})), "server")
    h.server(answer(forwarded, {"content": []}))
    assert h.logs == []
