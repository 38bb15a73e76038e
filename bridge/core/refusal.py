"""The one answer a client gets when it cannot be served at all (the daemon is full, or its
server cannot start): an error to its first request.

Must not keep state: it reads the first line the client sent, if any, only for its id.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.errors import cannot_serve
from bridge.core.jsonrpc import error_response, parse_inbound


def refusal(first_line: bytes | None, message: str, data: object = None) -> Message:
    """An error response to the request on `first_line` (id null if there is none to read)."""
    inbound = parse_inbound(first_line) if first_line else None
    request_id = inbound.id if inbound is not None and inbound.kind == "request" else None
    error = cannot_serve(message, data)
    return error_response(request_id, error.code, error.message, error.data)
