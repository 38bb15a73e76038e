"""What a mode does with each kind of message its server sends, in one place.

Must not know a mode: it reaches the mode through `ServerFace`, the one thing modes A, B and P
share about their server. An answer goes to the exchange that waits for it; the rest to the
mode's own handlers, but for a modern server's request, which every mode refuses alike.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import SERVER
from bridge.core.jsonrpc import Inbound
from bridge.core.router import Router


class ServerFace(Protocol):
    """A mode as its server's messages need it."""

    ctx: Context
    router: Router

    def on_server_notification(self, message: Message) -> None: ...
    def on_server_request(self, message: Message) -> None: ...


def from_server(mode: ServerFace, inbound: Inbound) -> None:
    """Route one classified message from the server (not a batch: a mode that takes them
    unpacks it first)."""
    kind = inbound.kind
    if kind == "response":
        exchange = mode.router.take(SERVER, inbound.message)
        if exchange is not None:
            exchange.answered(inbound.message, inbound.line)
    elif kind == "notification":
        mode.on_server_notification(inbound.message)
    elif kind == "request":
        mode.on_server_request(inbound.message)
    else:
        mode.ctx.log("warning", "message.invalid", side=SERVER, reason=inbound.reason)


def refuse_modern_request(ctx: Context, message: Message) -> None:
    """A modern server's request: its revision has none (a server asks for input inside an
    InputRequiredResult, mrtr.mdx), so no client is asked it. The server is answered -32601
    and the refusal logged."""
    method = message["method"]
    ctx.log("warning", "server.request_refused", side=SERVER, method=method,
            reason="a modern server sends no requests")
    ctx.fail(SERVER, message["id"], errors.no_server_requests(method))
