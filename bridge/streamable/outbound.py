"""What one line the core sends to the server becomes over HTTP (how the upstream handles
it, and its POST's headers), and what an HTTP answer becomes for the core: lines, each a
JSON-RPC message.

Must not do I/O (no sockets, no trio): the upstream (`bridge/shell/servers/remote/upstream.py`)
carries the requests out.
Every request the core sends gets exactly one answer line back, whatever the server did:
its own answer, or an error line built here that names the URL, what happened and the fix.
Rules: the 2026-07-28 streamable-http.mdx (§Sending Messages, §Request Metadata,
§Backward Compatibility) and the 2025-11-25 transports.mdx (§Streamable HTTP).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from bridge.core.codec import Message, decode, encode
from bridge.core.eras import META_PROTOCOL_VERSION, METHOD_NOT_FOUND
from bridge.core.errors import SERVER_ERROR
from bridge.streamable.headers import NAMED_BY, encoded
from bridge.streamable.media import ACCEPT, JSON

# How much of an unexpected body an error quotes.
QUOTE_CHARS: Final = 200
# What a legacy endpoint may answer a modern POST with (§Backward Compatibility).
LEGACY_STATUSES: Final = frozenset({400, 404, 405})


class Kind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


@dataclass(frozen=True, slots=True)
class ServerBound:
    """One message the core sent the server, with what its POST's headers need."""

    kind: Kind
    body: bytes
    id: str | int | None = None
    method: str | None = None
    version: str | None = None
    """The modern protocol version its `_meta` names (None: a legacy-era message)."""
    name: str | None = None
    """params.name or params.uri, for Mcp-Name."""
    cancels: str | int | None = None
    """For notifications/cancelled: the request it cancels."""
    params: object = None
    """A modern tools/call's params, for its Mcp-Param-* headers (None for the rest)."""


def read_outgoing(line: bytes) -> ServerBound | None:
    """The message on `line` (the core writes one valid JSON object a line); None if not."""
    message = decode(line)
    if not isinstance(message, dict):
        return None
    method = message.get("method")
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if not isinstance(method, str):
        return ServerBound(Kind.RESPONSE, line, id=message.get("id"))
    if "id" not in message:
        cancels = params.get("requestId") if method == "notifications/cancelled" else None
        return ServerBound(Kind.NOTIFICATION, line, method=method,
                        version=version if isinstance(version, str) else None, cancels=cancels)
    name = params.get(NAMED_BY.get(method, ""))
    modern = isinstance(version, str)
    return ServerBound(Kind.REQUEST, line, id=message["id"], method=method,
                    version=version if modern else None,
                    name=name if isinstance(name, str) else None,
                    params=params if modern and method == "tools/call" else None)


# What the upstream does with each line -----------------------------------------------------


class Handling(Enum):
    """What the upstream does with one line the core sent: decided here by the line's kind,
    its method and the server's era; the upstream carries it out."""

    OPEN_SESSION = "open-session"
    """`initialize`: the server is legacy; POSTed before the next line is read, since every
    later POST carries the session id its answer gives (transports.mdx §Session Management)."""
    LISTEN = "listen"
    """`subscriptions/listen`: a stream held for the session, not work: POSTed at once,
    outside the bound on requests in flight."""
    TAKE_TURN = "take-turn"
    """Any other request: POSTed in order as connections free up."""
    CLOSE_STREAM = "close-stream"
    """A cancellation to a modern server: closing the request's stream is the cancel message
    (streamable-http.mdx §Cancellation); nothing is POSTed."""
    POST_THEN_CLOSE = "post-then-close"
    """A cancellation to a legacy server: a disconnection is no cancel there (transports.mdx
    §Sending Messages), so the notification is POSTed, then the request's stream closed."""
    OPEN_LISTENING = "open-listening"
    """A legacy server's `notifications/initialized`: POSTed while the session's GET stream
    opens (transports.mdx §Listening for Messages from the Server)."""
    POST = "post"
    """Any other notification, or a legacy server's answer to its own request: POSTed, and
    accepted with 202."""
    DROP = "drop"
    """A response to a modern server: it sends no requests of its own, so nothing awaits one
    (streamable-http.mdx §Sending Messages)."""

    @property
    def cancels(self) -> bool:
        """Whether the line cancels a request: nothing to send when it has not left yet."""
        return self in (Handling.CLOSE_STREAM, Handling.POST_THEN_CLOSE)


def opens_session(out: ServerBound) -> bool:
    """Whether `out`'s answer opens a legacy session: its headers name the session id, and
    its result the protocol version, that every later request carries."""
    return out.kind is Kind.REQUEST and out.method == "initialize"


def handling(out: ServerBound, *, legacy: bool) -> Handling:
    """What the upstream does with `out`; `legacy`: the core opened a legacy session."""
    if opens_session(out):
        return Handling.OPEN_SESSION
    if out.kind is Kind.REQUEST:
        return Handling.LISTEN if out.method == "subscriptions/listen" else Handling.TAKE_TURN
    if out.kind is Kind.RESPONSE:
        return Handling.POST if legacy else Handling.DROP
    if out.method == "notifications/cancelled":
        return Handling.POST_THEN_CLOSE if legacy else Handling.CLOSE_STREAM
    if out.method == "notifications/initialized" and legacy:
        return Handling.OPEN_LISTENING
    return Handling.POST


# Requests ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerSession:
    """What a legacy server gave the bridge's `initialize` (transports.mdx §Session
    Management, §Protocol Version Header): sent on every later request."""

    session_id: str | None = None
    protocol_version: str | None = None


def post_headers(out: ServerBound, session: ServerSession | None) -> dict[str, str]:
    """The headers of `out`'s POST, beside the user's own (--header) and Content-Type."""
    headers = {"Accept": ACCEPT}
    if out.version is not None:  # §Protocol Version Header, §Standard Request Headers
        headers["MCP-Protocol-Version"] = out.version
        if out.method is not None:
            headers["Mcp-Method"] = out.method
        if out.name is not None:
            headers["Mcp-Name"] = encoded(out.name)
        return headers
    if session is not None:
        if session.session_id is not None:
            headers["Mcp-Session-Id"] = session.session_id
        if session.protocol_version is not None:
            headers["MCP-Protocol-Version"] = session.protocol_version
    return headers


def logs_refusal(out: ServerBound) -> bool:
    """Whether an HTTP refusal of `out` is worth a warning: a refused `server/discover` is
    how a legacy endpoint says what it is (§Backward Compatibility)."""
    return out.method != "server/discover"


# Answers -----------------------------------------------------------------------------------


def error_line(request_id: str | int | None, code: int, message: str,
               data: object = None) -> bytes:
    error: Message = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error})


def failure_line(request_id: str | int | None, problem: str) -> bytes:
    """The request's answer when the exchange failed: `problem` says what, and the fix."""
    return error_line(request_id, SERVER_ERROR, problem)


def is_answer(message: object, request_id: str | int | None) -> bool:
    return (isinstance(message, dict) and message.get("id") == request_id
            and ("result" in message or "error" in message))


def json_answer(out: ServerBound, body: bytes, url: str) -> bytes:
    """The line for a 200 application/json answer to request `out`: the body as it is when it
    answers it, its error under the request's id when the server gave none, else an error."""
    message = decode(body)
    if is_answer(message, out.id):
        return body if body.endswith(b"\n") else body + b"\n"
    assert out.id is not None
    if isinstance(message, dict) and isinstance(message.get("error"), dict) \
            and message.get("id") is None:
        return encode({"jsonrpc": "2.0", "id": out.id, "error": message["error"]})
    return error_line(out.id, SERVER_ERROR,
                      f"{url} answered {out.method} with JSON that is not its JSON-RPC answer: "
                      f"{quote(body)}; check that the URL is an MCP endpoint")


GIVE_CREDENTIALS: Final = ('give the credentials it asks for with --header '
                           '"Authorization: Bearer ${TOKEN}"')
"""The fix a 401/403 names when no auth provider says better (auth.py's `remedy`)."""


def status_answer(out: ServerBound, status: int, content_type: str, body: bytes, url: str,
                  challenge: str | None = None, remedy: str = GIVE_CREDENTIALS) -> bytes:
    """The line for request `out` answered with HTTP `status` (not 200), or for a 200 that
    is neither JSON nor an event stream.

    A JSON-RPC error in the body is the server's own answer (a modern server names its
    errors so: §Backward Compatibility); else one the bridge words. A legacy endpoint's
    400/404/405 to the probe becomes -32601, as a legacy stdio server answers it.
    """
    assert out.id is not None
    message = decode(body) if content_type == JSON else None
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        return encode({"jsonrpc": "2.0", "id": out.id, "error": message["error"]})
    if out.method == "server/discover" and status in LEGACY_STATUSES:
        return error_line(out.id, METHOD_NOT_FOUND,
                          f"server/discover: {url} answered HTTP {status} (a legacy endpoint)")
    return error_line(out.id, SERVER_ERROR, status_problem(status, content_type, body, url,
                                                           challenge, remedy),
                      {"httpStatus": status})


def status_problem(status: int, content_type: str, body: bytes, url: str,
                   challenge: str | None, remedy: str = GIVE_CREDENTIALS) -> str:
    """What HTTP `status` means for the user, and what to do about it (also the log line's)."""
    if status in (401, 403):
        told = f" (WWW-Authenticate: {challenge})" if challenge else ""
        return f"{url} refused the request with HTTP {status}{told}: {remedy}"
    if status >= 500:
        return f"{url} failed with HTTP {status}: the server is in trouble; try again later"
    if status == 200:
        return (f"{url} answered with {content_type or 'no Content-Type'} instead of JSON or an "
                f"event stream: {quote(body)}; check that the URL is an MCP endpoint")
    if status == 202:
        return f"{url} accepted a request (HTTP 202) without answering it"
    if 300 <= status < 400:
        return (f"{url} redirected (HTTP {status}): redirects are not followed; give the "
                f"URL it names with --url")
    return f"{url} answered HTTP {status}: {quote(body)}"


def quote(body: bytes) -> str:
    text = body[:QUOTE_CHARS].decode("utf-8", "replace").strip()
    return repr(text + ("…" if len(body) > QUOTE_CHARS else ""))
