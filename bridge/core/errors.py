"""Every error the bridge answers with itself, as opposed to one a peer sent and it relays.

Must not send: each builder returns an `OwnError`, and `Context.fail(side, id, error)` answers
with it, so a reader finds every word the bridge says about itself here, and what says it.
Codes: JSON-RPC 2.0 §5.1 and the revision's `schema.ts` (`eras.py` names them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.core.eras import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)

# The `data` of an error the bridge makes itself (TRANSLATION.md §3.4).
SOURCE: dict[str, Any] = {"source": "mcp-rosetta"}


@dataclass(frozen=True, slots=True)
class OwnError:
    """A JSON-RPC error object of the bridge's own making."""

    code: int
    message: str
    data: Any = None


def server_lost(reason: str, data: dict[str, Any] | None, method: str) -> OwnError:
    """A client request the server took and never answered: it crashed, or the bridge stops.
    `reason` says which (restarts.Outage); `data` (default: the bridge as the source) gains
    the method."""
    return OwnError(INTERNAL_ERROR, reason, {**(data if data is not None else SOURCE),
                                             "method": method})


def timed_out(seconds: float, method: str) -> OwnError:
    """A client request request_timeout ended before the server answered."""
    return OwnError(INTERNAL_ERROR,
                    f"mcp-rosetta: no answer from the server within {seconds:g} s",
                    {"source": "mcp-rosetta", "method": method})


# Mode B ------------------------------------------------------------------------------------
# The bridge as a modern server in front of a legacy one (modern_server_legacy_client/).

# 2025-11-25 client/sampling.mdx §Error Handling: what a client says for "User rejected
# sampling".
USER_REJECTED = -1


# A modern request's envelope (basic/index.mdx §_meta "Per-request protocol fields"):
# a missing required field is -32602; versioning.mdx: an unsupported version is -32022.

def envelope_missing() -> OwnError:
    return OwnError(INVALID_PARAMS, "Missing required params._meta (protocolVersion and "
                                    "clientCapabilities) for MCP 2026-07-28")


def envelope_field_missing(field: str) -> OwnError:
    return OwnError(INVALID_PARAMS, f"Missing required _meta field {field}")


def version_unsupported(requested: str) -> OwnError:
    return OwnError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                    {"supported": [MODERN_PROTOCOL_VERSION], "requested": requested})


def client_info_invalid(field: str) -> OwnError:
    return OwnError(INVALID_PARAMS, f"{field} must be an Implementation object")


def log_level_invalid(level: Any) -> OwnError:
    """logging.mdx: an unknown logLevel SHOULD be -32602."""
    return OwnError(INVALID_PARAMS, f"Invalid log level: {level!r}")


def progress_token_invalid() -> OwnError:
    return OwnError(INVALID_PARAMS, "progressToken must be a string or a number")


# The session and its methods.

def method_not_served(method: str) -> OwnError:
    """A method the bridge does not serve: removed in 2026-07-28, a legacy task method
    (TRANSLATION.md §4.3), or a server request no legacy client answers."""
    return OwnError(METHOD_NOT_FOUND, f"Method not found: {method}")


def legacy_server_unavailable(failure: str) -> OwnError:
    """The bridge's own handshake with the legacy server failed (`failure`: why)."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the legacy server could not be "
                                    f"initialized: {failure}", {"source": "mcp-rosetta"})


def never_sent(reason: str, data: dict[str, Any] | None) -> OwnError:
    """A request still waiting for the handshake when the bridge stops: no method added,
    since it never reached the server."""
    return OwnError(INTERNAL_ERROR, reason, data or {"source": "mcp-rosetta"})


# Listen streams (subscriptions.mdx).

def listen_filter_invalid() -> OwnError:
    return OwnError(INVALID_PARAMS, "subscriptions/listen needs a notifications filter object "
                                    "(resourceSubscriptions: an array of URI strings)")


def subscription_id_taken() -> OwnError:
    return OwnError(INVALID_REQUEST, "This id already names an open subscription")


# Parked calls and their rounds (mrtr.mdx).

def retry_fields_invalid() -> OwnError:
    return OwnError(INVALID_PARAMS, "requestState must be a string and inputResponses an object")


def request_state_invalid(reason: str, explanation: str) -> OwnError:
    """mrtr.mdx §Server Requirements: reject a requestState that fails verification."""
    return OwnError(INVALID_PARAMS, f"Invalid requestState: {explanation}", {"reason": reason})


def round_cancelled(request_id: Any) -> OwnError:
    """The client cancelled an earlier round of the call whose current round this answers."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the call was cancelled (its round "
                                    f"{request_id!r} was cancelled)", {"source": "mcp-rosetta"})


def url_elicitation_undeclared() -> OwnError:
    """A legacy -32042 for a request that did not declare elicitation.url (§5.9)."""
    return OwnError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "The server requires URL mode elicitation for this request",
                    {"requiredCapabilities": {"elicitation": {"url": {}}}})


def url_elicitation_malformed(error: dict[str, Any]) -> OwnError:
    return OwnError(INTERNAL_ERROR, "mcp-rosetta: the server asked for URL elicitation "
                                    "(-32042) without a valid data.elicitations list",
                    {"legacyError": error})


def url_elicitation_declined(server_text: str, declined: list[str]) -> OwnError:
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server requires URL elicitation the "
                                    f"user did not accept ({server_text})",
                    {"declined": declined})


# Answers to the legacy server's own questions, as a legacy client would give them.

def sampling_unavailable() -> OwnError:
    return OwnError(USER_REJECTED, "Sampling request rejected: no request in flight can carry it")


def capability_part_undeclared(need: tuple[str, ...]) -> OwnError:
    """A missing sub-capability: invalid params (2025-11-25 client/elicitation.mdx §Error
    Handling, for modes)."""
    return OwnError(INVALID_PARAMS, f"The request did not declare the {'.'.join(need)} capability")


def capability_undeclared(area: str) -> OwnError:
    """A whole capability missing: an unknown method to a legacy client."""
    return OwnError(METHOD_NOT_FOUND, f"Method not found: the request did not declare {area}")


def answer_unfit(problem: str) -> OwnError:
    """The client's answer cannot be held by the legacy server's revision."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {problem}", {"source": "mcp-rosetta"})


def question_abandoned(reason: str) -> OwnError:
    """The call behind a question ended before the client answered it."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {reason}")
