"""Messages the bridge will not carry (too deep, too long, not JSON): the one answer each owes.

Must not look past the top-level members of the refused message (jsonrpc.refused): a request
gets an error under its id; a response is replaced by an error response, so whoever waits on
it hears why; a client's message whose id cannot be read gets an error with id null (JSON-RPC
2.0 §5), as any other unattributable input does; anything else is a logged drop.
"""

from __future__ import annotations

from bridge.core.context import Context
from bridge.core.eras import INVALID_REQUEST, PARSE_ERROR
from bridge.core.errors import invalid_message, unreadable_answer
from bridge.core.events import CLIENT, Side
from bridge.core.jsonrpc import Inbound, error_response


def event_for(inbound: Inbound) -> str:
    """The log event of a refused message, by why it was refused."""
    return "message.invalid" if inbound.code == PARSE_ERROR else "message.too_deep"


def _is_response(members: dict[str, object]) -> bool:
    return "method" not in members and ("result" in members or "error" in members)


def is_request(inbound: Inbound) -> bool:
    """Whether a refused message is a request, owed an error reply under its id.

    As for any message: one with a usable id is a request unless it has the shape of a
    response (result or error, and no method); a response is never answered.
    """
    return inbound.id is not None and not _is_response(inbound.message)


def unattributed(inbound: Inbound) -> bool:
    """Whether a refused message from the client is owed an error with id null: no id could
    be read, and it is neither a response nor a notification read whole (never answered)."""
    return inbound.id is None and inbound.code is not None \
        and not _is_response(inbound.message)


def settle(ctx: Context, side: Side, inbound: Inbound, event: str) -> Inbound | None:
    """Answer a refused message from `side`; the error response standing in for it, if it was
    a response (to be handled like any other, so whoever waits on it hears why), else None."""
    request_id = inbound.id
    code = INVALID_REQUEST if inbound.code is None else inbound.code
    if is_request(inbound):
        ctx.log("warning", event, side=side, id=request_id, reason=inbound.reason,
                outcome="refused")
        ctx.fail(side, request_id, invalid_message(code, inbound.reason))
        return None
    if request_id is None:
        # The client is told even when it sent no request (JSON-RPC 2.0 §7: invalid JSON is
        # answered with id null); a server is not sent errors it cannot match to anything.
        answered = side == CLIENT and unattributed(inbound)
        ctx.log("warning", event, side=side, reason=inbound.reason,
                outcome="answered with id null" if answered else "dropped")
        if answered:
            ctx.fail(side, None, invalid_message(code, inbound.reason))
        return None
    ctx.log("warning", event, side=side, id=request_id, reason=inbound.reason,
            outcome="answered with an error")
    stand_in = unreadable_answer(side, inbound.reason)
    return Inbound("response", error_response(request_id, stand_in.code, stand_in.message,
                                              stand_in.data), id=request_id)
