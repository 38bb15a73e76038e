"""Every answer the HTTP front gives itself, before (or instead of) the core: its HTTP status
and, where the spec asks for one, its JSON-RPC error.

Must not decide when: the front's `router.py` and `headers.py` do; this module only words
each answer, one builder each, so a reader finds everything the front says about itself here (as
`bridge/core/errors.py` is for the core). Codes: `bridge.core.eras`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus

from bridge.core.codec import Message, encode
from bridge.core.eras import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_PROTOCOL_VERSIONS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSION,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from bridge.core.modern_server_legacy_client.redeem import StateProblem, state_error
from bridge.streamable.media import ACCEPT, EVENT_STREAM, JSON
from bridge.streamable.target import logged


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


def host_forbidden(host: str) -> Reply:
    return forbidden(f"Host {host or '(none)'} is not this server's; to accept it, add it to "
                     "allowed_hosts (--allow-host)")


def origin_forbidden(origin: str) -> Reply:
    return forbidden(f"Origin {origin} is not this server's; to accept it, add it to "
                     "allowed_origins (--allow-origin)")


def unauthorized(problem: str, *, presented: bool, request_id: object = None) -> Reply:
    """RFC 6750 §3: 401 with a `WWW-Authenticate` challenge; `invalid_token` once a token
    was presented and is not accepted (§3.1). The error answers the request's id when the
    body is a request, so a client matches it to what it sent."""
    challenge = 'Bearer realm="mcp-rosetta"' + (', error="invalid_token"' if presented else "")
    reply = _error(401, request_id, INVALID_REQUEST, f"Unauthorized: {problem}",
                   reason=problem)
    return Reply(401, reply.body, (*reply.headers, ("www-authenticate", challenge)),
                 reply.reason)


def refused_token(status: int, problem: str, challenge: str | None,
                  request_id: object = None) -> Reply:
    """An OAuth resource's refusal (Authorization §Error Handling): 401 for no token or one
    not taken, 403 for a scope the token lacks, 503 while the authorization server cannot
    be asked; `challenge` (WWW-Authenticate) names where to sign in and what to ask for."""
    label = {401: "Unauthorized", 403: "Forbidden"}.get(status, "Unavailable")
    reply = _error(status, request_id, INVALID_REQUEST, f"{label}: {problem}", reason=problem)
    extra = (("www-authenticate", challenge),) if challenge is not None else ()
    return Reply(status, reply.body, (*reply.headers, *extra), reply.reason)


def oauth_metadata(document: Message) -> Reply:
    """The front's protected resource metadata (RFC 9728 §3.2): a JSON document."""
    return Reply(200, encode(document), (("content-type", JSON),),
                 reason="the protected resource metadata")


def not_found_path(target: str) -> Reply:
    """The reason names the target as the log may write it (`target.logged`)."""
    return Reply(404, b"", reason=f"no MCP endpoint at {logged(target)}")


def not_found(code: int, message: str, reason: str) -> Reply:
    """404 with a body saying why and what to do instead."""
    return _error(404, None, code, message, reason=reason)


def method_not_allowed(method: str) -> Reply:
    """§Backward Compatibility (Earlier Streamable HTTP Revisions): a GET or DELETE that
    names no legacy session (no `Mcp-Session-Id`) is 405, as at a modern-only endpoint."""
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


def unexpected_event(kind: str) -> Reply:
    return rejected(400, f"expected a request, got {kind}")


def head_too_large(limit: int) -> Reply:
    return rejected(431, f"request head over {limit} bytes")


def version_not_served(version: str) -> Reply:
    return rejected(505, f"HTTP/{version} is not served here")


def length_and_chunks() -> Reply:
    return rejected(400, "Content-Length and Transfer-Encoding both present")


def declared_too_large(declared: str, limit: int) -> Reply:
    return rejected(413, f"Content-Length {declared} is over {limit}")


def body_too_large(limit: int) -> Reply:
    return rejected(413, f"body over {limit} bytes")


def cut_inside_request() -> Reply:
    return rejected(400, "the connection closed inside the request")


def pipelined() -> Reply:
    return rejected(400, "a request arrived before the last one was answered")


def bodies_full(held: int, limit: int) -> Reply:
    return rejected(503, f"the front holds {held} bytes of request bodies already (its limit "
                         f"for all connections at once is {limit})")


def over_capacity(limit: int) -> Reply:
    """One connection more than the front serves at once: 503, and when to come back."""
    reply = _error(503, None, INVALID_REQUEST,
                   f"Service Unavailable: {limit} connections already open "
                   f"(max_connections = {limit}); try again later, or reuse a "
                   "keep-alive connection", {"max_connections": limit},
                   reason=f"over max_connections ({limit})")
    return Reply(reply.status, reply.body, (*reply.headers, ("retry-after", "1")),
                 reply.reason)


def front_stopping() -> Reply:
    """A request whose answer the front stopped before the core gave it."""
    return Reply(503, b"", (("connection", "close"),), "the front is stopping")


NOTHING_TAKEN = "mcp-rosetta-nothing-taken"
"""The header of a node's drain refusals (`node_draining`, `node_stopping`), its value the
node's stage: this node took nothing of the request, so none of its servers saw it. A fleet
peer that offered the node a tenant's request (`forward.Forwarder.offer`) offers it to the
next node of the tenant's order instead of passing this answer on."""


def node_draining(request_id: object) -> Reply:
    """A new session or tenant at a node told to stop: 503 with Retry-After, so the client
    (or a balancer that retries a 503) sends it again and another node takes it."""
    refused = _error(503, request_id, INTERNAL_ERROR,
                     "Service Unavailable: this node is draining (it is being stopped) and "
                     "takes no new session; send the request again: another node takes it",
                     {"node": "draining"}, reason="the node is draining: no new session")
    return _nothing_taken("draining", refused)


def node_stopping(request_id: object) -> Reply:
    """A request at a node whose drain is over: its sessions are being ended, and nothing new
    reaches its servers."""
    refused = _error(503, request_id, INTERNAL_ERROR,
                     "Service Unavailable: this node stopped; send the request again (a "
                     "legacy session: initialize again): another node takes it",
                     {"node": "stopped"}, reason="the node is stopping")
    return _nothing_taken("stopped", refused)


def _nothing_taken(stage: str, reply: Reply) -> Reply:
    """`reply` with Retry-After and NOTHING_TAKEN: a drain's refusal."""
    return Reply(reply.status, reply.body,
                 (*reply.headers, ("retry-after", "1"), (NOTHING_TAKEN, stage)), reply.reason)


def health_method_not_allowed(method: str, path: str) -> Reply:
    return Reply(405, b"", (("allow", "GET"),), f"{method}: {path} takes GET")


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


def stream_not_acceptable(request_id: object, method: str) -> Reply:
    """§Sending Messages 2 and 6: a request whose answer can only be an event stream, from a
    client whose Accept does not list one, is 406 (RFC 9110 §15.5.7), naming the header."""
    return _error(406, request_id, INVALID_REQUEST,
                  f"Not Acceptable: {method} is answered with an event stream; send "
                  f"Accept: {ACCEPT}", reason=f"{method} needs Accept: {EVENT_STREAM}")


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


# Legacy sessions (2025-11-25 transports.mdx).

def session_missing(method: object) -> Reply:
    """§Session Management 2: a request other than `initialize` without the session id."""
    return _error(400, None, INVALID_REQUEST,
                  f"Bad Request: {method} needs the Mcp-Session-Id header its session's "
                  "initialize answer gave; send initialize first to open a session")


def session_unknown(reason: str = "unknown or ended session") -> Reply:
    """§Session Management 3 and 4: an unknown or ended session is 404; the client starts a
    new one with `initialize`. In a fleet, a session whose node is gone has ended too
    (`reason` says so in the log)."""
    return _error(404, None, INVALID_REQUEST,
                  "Session not found: it ended or never existed; send initialize without "
                  "Mcp-Session-Id to start a new one", reason=reason)


def session_node_gone(reason: str) -> Reply:
    """A legacy session whose node of the fleet is gone (stopped, or lost): it ended with it,
    404 as §Session Management 4 says, the message naming why (`reason`: which node)."""
    return _error(404, None, INVALID_REQUEST,
                  f"Session not found: the node that held it is gone ({reason}); send "
                  "initialize without Mcp-Session-Id to start a new one", reason=reason)


def parked_call_lost(request_id: object, reason: str) -> Reply:
    """A retry of a call parked at a node of the fleet that is gone (or is no longer the
    fleet's): the call ended with its node, so the retry is answered as its core answers
    the retry of a call that ended (-32602, reason "ended"; mrtr.mdx §Server Requirements),
    and the client makes the call anew. `reason` says which node, in the log."""
    error = state_error(StateProblem.ENDED)
    return _error(STATUS_OF_CODE.get(error.code, 200), request_id, error.code,
                  f"{error.message}: the node that held it is gone ({reason}); make the "
                  "call again", error.data, reason=reason)


def home_lost(request_id: object, reason: str) -> Reply:
    """A modern request its node sent to the tenant's home, which was lost after it was
    sent (the connection cut before an answer began): it may have run there, so it is not
    sent anywhere else; 502, and the client decides whether to send it again."""
    return _error(502, request_id, INTERNAL_ERROR,
                  f"Bad Gateway: the node that serves this client's requests was lost before "
                  f"it answered ({reason}); the request may have run there", reason=reason)


def fleet_pass_refused(problem: str) -> Reply:
    """A request that says another node of the fleet forwarded it, with a pass this node
    cannot accept: 403, naming why (a key that differs, clocks apart)."""
    return forbidden(problem)


def call_outlived(request_id: object) -> Reply:
    """A retry of a call this node held before it restarted: the call ended with the
    process that held it (-32602, reason "ended"), and the client makes it anew."""
    return _state_lost(request_id, StateProblem.ENDED, "the call it resumes has ended: the "
                       "node that held it restarted; make the call again",
                       "its node restarted since")


def state_unsigned(request_id: object) -> Reply:
    """A retry whose requestState envelope the fleet's key does not sign for this client
    (mrtr.mdx §Server Requirements 4: reject state that fails verification): -32602,
    reason "tampered"."""
    return _state_lost(request_id, StateProblem.TAMPERED, "it was not issued by this fleet "
                       "to this client, or it was altered", "a requestState envelope that "
                       "fails the fleet's check")


def _state_lost(request_id: object, problem: StateProblem, explanation: str,
                reason: str) -> Reply:
    error = state_error(problem)
    return _error(STATUS_OF_CODE.get(error.code, 200), request_id, error.code,
                  f"Invalid requestState: {explanation}", error.data, reason=reason)


def fleet_change_refused(status: int, problem: str) -> Reply:
    """A change another node of the fleet sent (POST only, one change) that this node
    cannot take: 405 for another method, else 400; no body (no client reads it)."""
    headers = (("allow", "POST"),) if status == 405 else ()
    return Reply(status, b"", headers, problem)


def too_many_sessions(request_id: object, limit: int) -> Reply:
    return _error(503, request_id, INTERNAL_ERROR,
                  f"too many sessions (max_sessions = {limit}); try again later, or raise "
                  "max_sessions in the configuration", {"max_sessions": limit})


def too_many_tenants(request_id: object, limit: int) -> Reply:
    """A new credential at `max_tenants`, every tenant in use."""
    return _error(503, request_id, INTERNAL_ERROR,
                  f"too many tenants (max_tenants = {limit}); try again later, or raise "
                  "max_tenants in the configuration", {"max_tenants": limit})


def too_many_servers(request_id: object, limit: int) -> Message:
    """A call that needs a server process of its own while every one is busy and the front
    runs as many as it may: the error its tenant's core would answer it with."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": INTERNAL_ERROR,
        "message": f"every server process is busy and the front runs its most "
                   f"(max_servers_total = {limit}); retry later, or raise max_servers_total "
                   "in the configuration",
        "data": {"max_servers_total": limit}}}


def session_not_started(request_id: object) -> Reply:
    return _error(503, request_id, INTERNAL_ERROR,
                  "the session could not be started (the front's log says why); try again")


def legacy_version_unsupported(request_id: object, version: str) -> Reply:
    """§Protocol Version Header: an invalid or unsupported MCP-Protocol-Version is 400."""
    return _error(400, request_id, INVALID_REQUEST,
                  f"Bad Request: unsupported MCP-Protocol-Version {version!r}",
                  {"supported": [*LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION],
                   "requested": version})


def id_in_flight(request_id: object) -> Reply:
    return _error(400, request_id, INVALID_REQUEST,
                  f"Invalid Request: id {request_id!r} is already in use by a request of this "
                  "session that has not been answered")


def legacy_batch() -> Reply:
    return _error(400, None, INVALID_REQUEST,
                  "Invalid Request: this front takes one JSON-RPC message per POST (no "
                  "batches); send each message in a POST of its own")


def not_acceptable() -> Reply:
    """§Listening for Messages 2: a GET stream needs `Accept: text/event-stream`."""
    return Reply(406, b"", reason="a GET stream needs Accept: text/event-stream")


def stream_taken() -> Reply:
    """One GET stream per session (§Multiple Connections: each message goes on one stream
    only, so a second one would get nothing): 409."""
    return _error(409, None, INVALID_REQUEST,
                  "Conflict: this session's GET stream is already open; close it first",
                  reason="a second GET stream for one session")


def accepted() -> Reply:
    """§Sending Messages 4: a notification or response accepted is 202, no body."""
    return Reply(202, b"")


def session_deleted() -> Reply:
    """§Session Management 5: DELETE ends the session."""
    return Reply(204, b"", reason="session ended by DELETE")
