"""`mcp-rosetta check` as a legacy MCP client, without I/O: the handshake it performs and how
it answers the server's own requests.

Must not send anything (bridge/shell/check.py and check_wire.py do): it only builds messages.
Rules: the 2025-11-25 lifecycle.mdx (§Initialization) and basic/utilities/ping.mdx.
"""

from __future__ import annotations

from typing import Final

from bridge.core.codec import Message
from bridge.core.eras import LATEST_LEGACY_VERSION, METHOD_NOT_FOUND
from bridge.core.jsonrpc import RequestId, error_response, notification, request

INITIALIZED: Final = notification("notifications/initialized")
"""Sent once the server answered `initialize`: the session may start."""


def initialize_request(request_id: RequestId, client_info: Message) -> Message:
    """The legacy handshake's request, as the bridge sends it: the latest legacy version and
    no client capabilities."""
    params = {"protocolVersion": LATEST_LEGACY_VERSION, "capabilities": {},
              "clientInfo": client_info}
    return request(request_id, "initialize", params)


def answer_server_request(message: Message) -> Message:
    """The answer to a request the server sends check: check declares no client
    capabilities, so the server may ping (answered with {}) and gets nothing else."""
    if message["method"] == "ping":
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
    return error_response(message["id"], METHOD_NOT_FOUND,
                          f"mcp-rosetta check does not serve {message['method']}")
