"""The check command as a legacy client, without a server: its handshake's messages and its
answers to the server's own requests."""

from __future__ import annotations

from bridge.check_client import INITIALIZED, answer_server_request, initialize_request
from bridge.core.eras import LATEST_LEGACY_VERSION, METHOD_NOT_FOUND


def test_the_handshake_offers_the_latest_legacy_version_and_no_capabilities() -> None:
    info = {"name": "mcp-rosetta", "version": "1"}
    assert initialize_request(3, info) == {
        "jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": {"protocolVersion": LATEST_LEGACY_VERSION, "capabilities": {},
                   "clientInfo": info}}
    assert INITIALIZED == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_a_ping_is_answered_and_any_other_server_request_refused() -> None:
    assert answer_server_request({"jsonrpc": "2.0", "id": "s1", "method": "ping"}) == {
        "jsonrpc": "2.0", "id": "s1", "result": {}}
    refused = answer_server_request({"jsonrpc": "2.0", "id": 9, "method": "roots/list"})
    assert refused["id"] == 9 and refused["error"]["code"] == METHOD_NOT_FOUND
    assert "roots/list" in refused["error"]["message"]
