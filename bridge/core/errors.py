"""Every error the bridge answers with itself, as opposed to one a peer sent and it relays.

Must not send: each builder returns an `OwnError`, and `Context.fail(side, id, error)` answers
with it, so a reader finds every word the bridge says about itself here, and what says it.
Codes: JSON-RPC 2.0 §5.1 and the revision's `schema.ts` (`eras.py` names them).
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from bridge.core.jsonrpc import WireId
from bridge.core.record import record

# The `data` of an error the bridge makes itself (TRANSLATION.md §3.4).
SOURCE: Message = {"source": "mcp-rosetta"}


@record(frozen=True)
class OwnError:
    """A JSON-RPC error object of the bridge's own making."""

    code: int
    message: str
    data: object = None


def server_lost(reason: str, data: Message | None, method: str) -> OwnError:
    """A client request the server took and never answered: it crashed, or the bridge stops.
    `reason` says which (restarts.Outage); `data` (default: the bridge as the source) gains
    the method."""
    return OwnError(INTERNAL_ERROR, reason, {**(data if data is not None else SOURCE),
                                             "method": method})


# How a timed-out request's error begins (observe.py tells a timeout by it).
NO_ANSWER_WITHIN = "mcp-rosetta: no answer from the server within"


def timed_out(seconds: float, method: str) -> OwnError:
    """A client request request_timeout ended before the server answered."""
    return OwnError(INTERNAL_ERROR, f"{NO_ANSWER_WITHIN} {seconds:g} s",
                    {"source": "mcp-rosetta", "method": method})


def method_not_served(method: str) -> OwnError:
    """A method the bridge does not serve: removed in 2026-07-28, a task method (tasks are
    not bridged and never advertised, TRANSLATION.md §4.3), or a server request no legacy
    client answers."""
    return OwnError(METHOD_NOT_FOUND, f"Method not found: {method}")


def invalid_log_level(level: object) -> OwnError:
    """A level logging.mdx does not name (`logging/setLevel`, or a modern request's
    logLevel, which SHOULD be -32602)."""
    return OwnError(INVALID_PARAMS, f"Invalid log level: {level!r}")


# Relay and lifecycle ----------------------------------------------------------------------


def unfit_for_client(version: str, problem: str) -> OwnError:
    """Mode P behind a revision gap: a server request the client's revision has no form for."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the client speaks {version}: {problem}",
                    SOURCE)


def session_ended(reason: str, data: Message | None) -> OwnError:
    """A client request still owed when the session ends (the bridge stops, or its server
    never served) that no server holds (no method added): `reason` says why; `data`
    (default: the bridge as the source) what is known of the server."""
    return OwnError(INTERNAL_ERROR, reason, data or SOURCE)


SHUTTING_DOWN = "mcp-rosetta is shutting down"
"""How every `shutdown_message` begins (what a count of refusals knows it by)."""


def shutting_down(message: str) -> OwnError:
    """A request that arrives while the bridge winds down (`message`: the config's
    `shutdown_message`)."""
    return OwnError(INTERNAL_ERROR, message, SOURCE)


def no_era_named() -> OwnError:
    """A first request that shows neither era (it may be answered again, correctly)."""
    return OwnError(INVALID_REQUEST,
                    "The first request must be initialize (legacy MCP) or carry "
                    '_meta["io.modelcontextprotocol/protocolVersion"] (MCP 2026-07-28)')


def invalid_message(code: int, reason: str) -> OwnError:
    """A message the bridge will not carry (limits.py, batch.py): why, under JSON-RPC's code."""
    return OwnError(code, f"Invalid message: {reason}")


def unreadable_answer(side: str, reason: str) -> OwnError:
    """What stands in for a peer's answer the bridge could not carry, so whoever waits on it
    hears why."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the {side}'s answer is {reason}",
                    SOURCE)


# JSON-RPC 2.0 §5.1 leaves -32000 to -32099 to implementations; 2026-07-28 reserves
# -32020 and up, so the bridge's own "cannot serve you" is -32000.
SERVER_ERROR = -32000


def cannot_serve(message: str, data: object = None) -> OwnError:
    """The one answer of a client that cannot be served at all (refusal.py)."""
    return OwnError(SERVER_ERROR, f"mcp-rosetta: {message}", data)


# Mode A ----------------------------------------------------------------------------------
# The legacy server a legacy client sees (legacy_server_modern_client/).


def already_initialized() -> OwnError:
    """A second `initialize` (lifecycle.mdx: a session is initialized once)."""
    return OwnError(INVALID_REQUEST, "Already initialized")


def unservable(message: str, data: Message) -> OwnError:
    """An `initialize` the bridge cannot serve: the server speaks no revision it bridges."""
    return OwnError(INVALID_PARAMS, message, data)


def no_server_requests(method: str) -> OwnError:
    """A modern server's request: its revision has none. mrtr.mdx: a server asks the client
    for input inside an InputRequiredResult; stdio.mdx: it "MUST NOT write JSON-RPC
    requests"; streamable-http.mdx: it "MUST NOT send independent JSON-RPC requests"."""
    return OwnError(METHOD_NOT_FOUND,
                    f"Method not found: {method}: revision {MODERN_PROTOCOL_VERSION} has no "
                    f"requests from server to client (a server asks for input with an "
                    f"InputRequiredResult)", SOURCE)


def result_type_not_carried(method: str, kind: object) -> OwnError:
    """A result whose resultType the method cannot carry: input_required only answers
    tools/call, resources/read and prompts/get (mrtr.mdx)."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server answered {method} with "
                                    f"resultType {kind!r}, which this method cannot carry")


def version_withdrawn(version: str, supported: list[str]) -> OwnError:
    """The server answered -32022 mid-session and no longer lists the revision spoken."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server no longer supports {version}; "
                                    f"it supports {supported}", {"supported": supported})


def initialize_lost(reason: str, data: Message | None) -> OwnError:
    """An `initialize` still waiting on the session stream when the server was lost."""
    return OwnError(INTERNAL_ERROR, reason, data)


def input_loop_failed(problem: str, data: object = None) -> OwnError:
    """A call's input loop ended without a result: `problem` says why (TRANSLATION.md §5.7);
    `data`, the client's own error when one of its answers ended it."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {problem}",
                    data if data is not None else SOURCE)


def subscriptions_not_offered() -> OwnError:
    """`resources/subscribe` to a server whose streams grant no resource subscriptions."""
    return OwnError(METHOD_NOT_FOUND,
                    "Method not found: the server offers no resource subscriptions")


def uri_not_string() -> OwnError:
    return OwnError(INVALID_PARAMS, "uri must be a string")


def updates_not_offered(uri: str | None) -> OwnError:
    """The server acknowledged a resource's listen stream without that resource."""
    return OwnError(INVALID_PARAMS, f"The server does not offer updates for {uri}")


def unsubscribed(uri: str | None) -> OwnError:
    """A `resources/subscribe` still waiting when the client unsubscribed from its URI."""
    return OwnError(INVALID_PARAMS, f"Unsubscribed from {uri}")


def subscription_refused(error: Message) -> OwnError:
    """The server refused a resource's listen stream: its code and message, for the
    `resources/subscribe` that waits on it."""
    return OwnError(error.get("code", INVALID_PARAMS),
                    str(error.get("message", "subscription refused")))


def subscription_unacknowledged(uri: str | None) -> OwnError:
    """A first subscription's stream got no acknowledgement within probe_timeout."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server did not acknowledge the "
                                    f"subscription to {uri}")


def subscription_lost(reason: str, data: Message | None) -> OwnError:
    """A `resources/subscribe` still waiting for its acknowledgement when the server was lost."""
    return OwnError(INTERNAL_ERROR, reason, data if data is not None else SOURCE)


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


def progress_token_invalid() -> OwnError:
    return OwnError(INVALID_PARAMS, "progressToken must be a string or a number")


# The session and its methods.

def legacy_server_unavailable(failure: str) -> OwnError:
    """The bridge's own handshake with the legacy server failed (`failure`: why)."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the legacy server could not be "
                                    f"initialized: {failure}", SOURCE)


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


def round_cancelled(request_id: WireId) -> OwnError:
    """The client cancelled an earlier round of the call whose current round this answers."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the call was cancelled (its round "
                                    f"{request_id!r} was cancelled)", SOURCE)


def url_elicitation_undeclared() -> OwnError:
    """A legacy -32042 for a request that did not declare elicitation.url (§5.9)."""
    return OwnError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "The server requires URL mode elicitation for this request",
                    {"requiredCapabilities": {"elicitation": {"url": {}}}})


def capability_required(needs: list[tuple[str, ...]]) -> OwnError:
    """A call whose legacy server asked for input its round did not declare (TRANSLATION.md
    §5.8.3): 2026-07-28 basic/index.mdx §_meta ("A server MUST NOT rely on capabilities the
    client has not declared ... MUST return a MissingRequiredClientCapabilityError"), whose
    `data.requiredCapabilities` is a ClientCapabilities object (schema
    §MissingRequiredClientCapabilityError): each path `needs` names (("sampling",),
    ("elicitation", "url")) as nested objects, merged."""
    required: Message = {}
    for need in needs:
        node = required
        for part in need:
            node = node.setdefault(part, {})
    names = sorted({".".join(need) for need in needs})
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    noun = "capability" if len(names) == 1 else "capabilities"
    return OwnError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"The server requires the {what} {noun} for this request",
                    {"requiredCapabilities": required})


def url_elicitation_malformed(error: Message) -> OwnError:
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
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {problem}", SOURCE)


def question_abandoned(reason: str) -> OwnError:
    """The call behind a question ended before the client answered it."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {reason}")
