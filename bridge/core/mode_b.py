"""Mode B: a modern client in front of a legacy server; the bridge is a modern server.

Must not forward anything yet: until mode B is built it answers every request with an error
that names what is missing, so a modern client fails clearly instead of hanging.
"""

from __future__ import annotations

from typing import Any

from bridge.core.context import Context
from bridge.core.eras import INTERNAL_ERROR
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import Inbound
from bridge.core.probe import Probe


class ModeB:
    mode = "B"
    client_batching = False

    def __init__(self, ctx: Context, probe: Probe, secret: bytes) -> None:
        self.ctx = ctx

    def on_client(self, inbound: Inbound) -> None:
        if inbound.kind == "request":
            self.ctx.reply_error(
                CLIENT, inbound.message["id"], INTERNAL_ERROR,
                "mcp-rosetta: the server speaks only legacy MCP (initialize handshake), and "
                "bridging a 2026-07-28 client to a legacy server is not available yet",
                {"source": "mcp-rosetta", "serverEra": "legacy"})
        elif inbound.kind == "invalid":
            self.ctx.reject(CLIENT, inbound)

    def on_server(self, inbound: Inbound) -> None:
        self.ctx.debug("message.dropped", side="server", reason="mode B not available")

    def on_timer(self, key: Any) -> None:
        return

    def fail_pending(self, reason: str) -> None:
        return
