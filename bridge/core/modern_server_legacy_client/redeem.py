"""Mode B's requestState redeemed: the parked call a client's retry resumes, or why it resumes
none (mrtr.mdx §Server Requirements: requestState is attacker-controlled input, verified
before use, and used once).

Must not resume the call: the parking (inputs.py) does. This opens the state
(request_state.py) and checks it against the live calls, whose nonce makes each state single
use, and words the refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import WireId
from bridge.core.modern_server_legacy_client.parked_call import ParkedCall
from bridge.core.modern_server_legacy_client.request_state import (
    expired,
    request_digest,
    unseal,
)


class StateProblem(Enum):
    """Why a requestState resumes no call (the value is the `reason` the client is given)."""

    TAMPERED = "tampered"
    EXPIRED = "expired"
    MISMATCH = "mismatch"
    ENDED = "ended"
    REPLAYED = "replayed"


_STATE_PROBLEMS = {
    StateProblem.TAMPERED: "it was not issued by this bridge, or it was altered",
    StateProblem.EXPIRED: "it has expired",
    StateProblem.MISMATCH: "it belongs to another request (the method or params differ)",
    StateProblem.ENDED: "the call it resumes has ended (answered, cancelled or timed out)",
    StateProblem.REPLAYED: "it was already used; retry with the requestState of the latest round",
}


def redeem(secret: bytes, state: str, method: str, params: Message,
           calls: Mapping[str, ParkedCall], now: float) -> ParkedCall | StateProblem:
    """The live call `state` resumes (of `calls`, by key), or why it resumes none."""
    payload = unseal(secret, state)
    if payload is None:
        return StateProblem.TAMPERED
    if expired(payload, now):
        return StateProblem.EXPIRED
    if payload["d"] != request_digest(method, params):
        return StateProblem.MISMATCH
    call = calls.get(payload["k"])
    if call is None:
        return StateProblem.ENDED
    if call.nonce != payload["n"]:
        return StateProblem.REPLAYED
    return call


def state_error(problem: StateProblem) -> errors.OwnError:
    """The error that tells a client why its retry resumes nothing (-32602)."""
    return errors.request_state_invalid(problem.value, _STATE_PROBLEMS[problem])


def reject_state(ctx: Context, request_id: WireId, problem: StateProblem) -> None:
    """The retry resumes nothing: the client is told why."""
    ctx.log("warning", "mrtr.state_rejected", client_id=request_id, reason=problem.value)
    ctx.fail(CLIENT, request_id, state_error(problem))
