"""Messages the bridge will not carry (too deep, or too long): the one answer each still owes.

Must not look past the top-level members of the refused message (jsonrpc.refused): a request
gets an error under its id; a response is replaced by an error response, so whoever waits on
it hears why; anything else is a logged drop.
"""

from __future__ import annotations

from bridge.core.context import Context
from bridge.core.eras import INTERNAL_ERROR, INVALID_REQUEST
from bridge.core.events import Side
from bridge.core.jsonrpc import Inbound, error_response


def is_request(inbound: Inbound) -> bool:
    """Whether a refused message is a request, owed an error reply under its id.

    As for any message: one with a usable id is a request unless it has the shape of a
    response (result or error, and no method); a response is never answered.
    """
    members = inbound.message
    return inbound.id is not None and (
        "method" in members or not ("result" in members or "error" in members))


def settle(ctx: Context, side: Side, inbound: Inbound, event: str) -> Inbound | None:
    """Answer a refused message from `side`; the error response standing in for it, if it was
    a response (to be handled like any other, so whoever waits on it hears why), else None."""
    request_id = inbound.id
    if is_request(inbound):
        ctx.log("warning", event, side=side, id=request_id, reason=inbound.reason,
                outcome="refused")
        ctx.reply_error(side, request_id, INVALID_REQUEST, f"Invalid message: {inbound.reason}")
        return None
    if request_id is None:
        ctx.log("warning", event, side=side, reason=inbound.reason, outcome="dropped")
        return None
    ctx.log("warning", event, side=side, id=request_id, reason=inbound.reason,
            outcome="answered with an error")
    return Inbound("response", error_response(
        request_id, INTERNAL_ERROR, f"mcp-rosetta: the {side}'s answer is {inbound.reason}",
        {"source": "mcp-rosetta"}), id=request_id)
