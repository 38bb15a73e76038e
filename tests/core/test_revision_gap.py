"""Transcripts of mode P after a restart onto a legacy server that negotiates another revision
than the client was answered with: the client keeps seeing its own.

A newer server's messages are shaped for the client's revision (core/downgrade.py for results,
core/legacy_server_modern_client/legacy_inputs.py for its requests), and what that revision
has no form for is refused to the server; an older server's messages pass as they are, valid
in the client's newer revision.
What the client receives is validated against its revision's schema.
"""

from __future__ import annotations

from typing import Any

from tests.core.harness import Harness, answer, initialize, one, request, restarted, sent
from tests.core.test_golden import _schema
from tests.core.test_resume import legacy_result, note, refused

Message = dict[str, Any]

TOOL_NEW = {"name": "t", "title": "T", "icons": [{"src": "https://x/i.png"}],
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True}, "execution": {"taskSupport": "optional"}}


def restarted_at(client: str, server: str, caps: Message | None = None) -> Harness:
    """Mode P between legacy peers at `client`; the server restarts and answers the replayed
    initialize with `server`."""
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize(client, caps=caps or {"sampling": {}, "elicitation": {}}))
    forwarded = one(h.server(refused(probe)), "server")
    assert one(h.server(answer(forwarded, legacy_result(client))), "client")["result"][
        "protocolVersion"] == client
    h.client(note("notifications/initialized"))
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    replay = one(h.server(refused(probe)), "server")
    assert sent(h.server(answer(replay, legacy_result(server))), "client") == [
        note("notifications/tools/list_changed")]
    return h


def changed(h: Harness) -> list[dict[str, Any]]:
    return [log.fields for log in h.logs if log.event == "session.version_changed"]


def test_results_of_a_newer_server_are_shaped_for_the_clients_revision() -> None:
    h = restarted_at("2024-11-05", "2025-11-25")
    assert changed(h) == [{"client": "2024-11-05", "server": "2025-11-25",
                           "outcome": "shaped for 2024-11-05"}]
    forwarded = one(h.client(request(1, "tools/list")), "server")
    reply = one(h.server(answer(forwarded, {"tools": [TOOL_NEW]})), "client")
    assert reply["result"] == {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    _schema("2024-11-05", "ListToolsResult").validate(reply["result"])
    forwarded = one(h.client(request(2, "tools/call", {"name": "t"})), "server")
    reply = one(h.server(answer(forwarded, {
        "content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}],
        "structuredContent": {"n": 1}})), "client")
    assert reply["result"] == {"content": [{"type": "text", "text": "file:///a (a)"},
                                           {"type": "text", "text": '{"n":1}'}]}
    _schema("2024-11-05", "CallToolResult").validate(reply["result"])


def test_progress_of_a_newer_server_loses_what_the_clients_revision_lacks() -> None:
    h = restarted_at("2024-11-05", "2025-06-18")
    progress = note("notifications/progress", {"progressToken": "p", "progress": 1,
                                               "message": "half"})
    [relayed] = sent(h.server(progress), "client")
    assert relayed["params"] == {"progressToken": "p", "progress": 1}
    _schema("2024-11-05", "ProgressNotification").validate(relayed)


def test_a_notification_the_clients_revision_has_not_is_dropped() -> None:
    h = restarted_at("2025-06-18", "2025-11-25")
    done = note("notifications/elicitation/complete", {"elicitationId": "e1"})
    assert sent(h.server(done), "client") == []


def test_a_request_of_a_newer_server_is_shaped_for_the_client() -> None:
    h = restarted_at("2025-06-18", "2025-11-25")
    asked = request(40, "elicitation/create", {
        "mode": "form", "message": "Color?", "requestedSchema": {"type": "object", "properties": {
            "c": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}]}}}})
    question = one(h.server(asked), "client")
    _schema("2025-06-18", "ElicitRequest").validate(question)
    assert question["params"] == {"message": "Color?", "requestedSchema": {
        "type": "object", "properties": {"c": {"type": "string", "enum": ["r"],
                                               "enumNames": ["Red"]}}}}
    reply = one(h.client(answer(question, {"action": "accept", "content": {"c": "r"}})), "server")
    assert reply == {"jsonrpc": "2.0", "id": 40,
                     "result": {"action": "accept", "content": {"c": "r"}}}


def test_a_request_the_clients_revision_cannot_hold_is_refused_to_the_server() -> None:
    h = restarted_at("2025-06-18", "2025-11-25")
    asked = request(41, "sampling/createMessage", {"maxTokens": 9, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c", "content": []}]}]})
    actions = h.server(asked)
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 41, "error": {
        "code": -32603, "message": "mcp-rosetta: the client speaks 2025-06-18: sampling message "
        "0 holds tool_result content, which revision 2025-06-18 has no form for (it arrived in "
        "2025-11-25)", "data": {"source": "mcp-rosetta"}}}]


def test_an_older_server_is_relayed_as_it_is() -> None:
    h = restarted_at("2025-11-25", "2025-06-18")
    assert changed(h) == [{"client": "2025-11-25", "server": "2025-06-18",
                           "outcome": "relayed as it is (older)"}]
    forwarded = one(h.client(request(1, "tools/list")), "server")
    tools = {"tools": [{"name": "t", "title": "T", "inputSchema": {"type": "object"}}]}
    reply = one(h.server(answer(forwarded, tools)), "client")
    assert reply["result"] == tools
    _schema("2025-11-25", "ListToolsResult").validate(reply["result"])


def test_the_same_revision_changes_nothing() -> None:
    h = restarted_at("2025-06-18", "2025-06-18")
    assert changed(h) == []
    forwarded = one(h.client(request(1, "tools/list")), "server")
    reply = one(h.server(answer(forwarded, {"tools": [TOOL_NEW]})), "client")
    assert reply["result"] == {"tools": [TOOL_NEW]}  # mode P translates nothing


def test_an_unknown_revision_is_shaped_for_the_client_too() -> None:
    h = restarted_at("2025-06-18", "2099-01-01")
    assert changed(h)[0]["outcome"] == "shaped for 2025-06-18"
    forwarded = one(h.client(request(1, "tools/list")), "server")
    reply = one(h.server(answer(forwarded, {"tools": [TOOL_NEW]})), "client")
    assert "icons" not in reply["result"]["tools"][0]
