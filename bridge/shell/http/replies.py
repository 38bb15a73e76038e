"""Every answer the HTTP front gives itself, before (or instead of) the core: its HTTP status
and, where the spec asks for one, its JSON-RPC error.

Must not decide when: `router.py` and `modern.py` do; this module only words each answer, one
builder each, so a reader finds everything the front says about itself here (as
`bridge/core/errors.py` is for the core). Codes: `bridge.core.eras`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus

from bridge.core.codec import Message, encode
from bridge.core.eras import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSION,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole HTTP answer: status, body (JSON-RPC, or empty), extra headers."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = field(default=())
    reason: str = ""
    """For the log line (`http.request`): why the front answered this itself."""


def _error(status: int, request_id: object, code: int, message: str,
           data: object = None, reason: str = "") -> Reply:
    error: Message = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = encode({"jsonrpc": "2.0", "id": request_id, "error": error})
    return Reply(status, body, (("content-type", JSON),), reason or message)


# HTTP-level refusals (no JSON-RPC: the body, if any, is the spec's optional id-less error).

def forbidden(what: str) -> Reply:
    """streamable-http.mdx §Security & Endpoint: an invalid Origin (and here a Host that
    names no name of this front: DNS rebinding) is 403."""
    return _error(403, None, INVALID_REQUEST, f"Forbidden: {what}", reason=what)


def not_found_path(path: str) -> Reply:
    return Reply(404, b"", reason=f"no MCP endpoint at {path}")


def method_not_allowed(method: str) -> Reply:
    """§Backward Compatibility (Earlier Streamable HTTP Revisions): GET or DELETE to a
    modern-only endpoint is 405. The legacy sessions that would take them come later."""
    return Reply(405, b"", (("allow", "POST"),), f"{method}: this front takes POST only")


def unsupported_media(content_type: str) -> Reply:
    return Reply(415, b"", reason=f"Content-Type {content_type or '(none)'} is not "
                                  "application/json")


# What a client can do about an HTTP/1.1 refusal (`connection.HttpError`), by its status.
FIX_OF_STATUS = {
    413: "send a smaller body: the front's limit is max_message_bytes",
    431: "send a shorter request line and headers",
    501: "send the body with Content-Length or Transfer-Encoding: chunked",
    505: "send HTTP/1.1 (a proxy in front can take HTTP/2)",
    503: "try again in a moment",
}


def rejected(status: int, problem: str) -> Reply:
    """A request HTTP/1.1 itself refuses (malformed, over a limit): the connection closes
    after it, so the error names the cause and what to send instead."""
    fix = FIX_OF_STATUS.get(status, "send one well-formed HTTP/1.1 request")
    reply = _error(status, None, INVALID_REQUEST, f"{_phrase(status)}: {problem}; {fix}",
                   reason=problem)
    if status != 503:
        return reply
    return Reply(reply.status, reply.body, (*reply.headers, ("retry-after", "1")), problem)


def over_capacity(limit: int) -> Reply:
    """One connection more than the front serves at once: 503, and when to come back."""
    reply = _error(503, None, INVALID_REQUEST,
                   f"Service Unavailable: {limit} connections already open "
                   f"(max_connections = {limit}); try again later, or reuse a "
                   "keep-alive connection", {"max_connections": limit},
                   reason=f"over max_connections ({limit})")
    return Reply(reply.status, reply.body, (*reply.headers, ("retry-after", "1")),
                 reply.reason)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


# JSON-RPC answers the front gives itself (§Sending Messages, §Server Validation).

def parse_error() -> Reply:
    return _error(400, None, PARSE_ERROR, "Parse error: the body is not one JSON value")


def not_a_request(what: str) -> Reply:
    """§Sending Messages 4: one request or notification per POST, never a response."""
    return _error(400, None, INVALID_REQUEST, f"Invalid Request: {what}")


def header_mismatch(request_id: object, problem: str) -> Reply:
    """§Server Validation: 400 with HeaderMismatch (-32020)."""
    return _error(400, request_id, HEADER_MISMATCH, f"Header mismatch: {problem}")


def envelope_missing(request_id: object, problem: str) -> Reply:
    """basic/index.mdx `_meta`: a missing per-request field is -32602; on this front 400."""
    return _error(400, request_id, INVALID_PARAMS, f"Invalid params: {problem}")


def version_unsupported(request_id: object, requested: str) -> Reply:
    """§Protocol Version Header: a version the server does not implement is 400 with
    UnsupportedProtocolVersionError. Answered here, not by the shared session's server: a
    stdio server checks the version of its connection, not of each request (the v2 SDK
    answers a later request naming v999.0.0 as if it named the first one's)."""
    return _error(400, request_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                  {"supported": [MODERN_PROTOCOL_VERSION], "requested": requested})


def removed_method(request_id: object, method: str) -> Reply:
    """§Protocol Version Header: a method the server does not implement is 404 with -32601.
    The methods 2026-07-28 removed are refused here, before the shared core: an `initialize`
    would otherwise make the shared session's client legacy."""
    return _error(404, request_id, METHOD_NOT_FOUND, f"Method not found: {method}")


def notification_dropped() -> Reply:
    """§Sending Messages 5: an accepted notification is 202. 2026-07-28 defines none for
    this transport (closing the stream is the cancellation), so it goes no further."""
    return Reply(202, b"", reason="a notification has no use on a 2026-07-28 front")


# The status of an answer the core gave (§Protocol Version Header, §Server Validation): the
# errors a modern server answers at the transport's level keep their HTTP status.
STATUS_OF_CODE = {
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def status_of(answer: Message) -> int:
    error = answer.get("error")
    if isinstance(error, dict):
        return STATUS_OF_CODE.get(error.get("code"), 200)  # type: ignore[arg-type]
    return 200
