"""What the front refuses of a request before the core sees it: its method and media type,
its body (one request), and a 2026-07-28 request's metadata headers checked against its body
(streamable-http.mdx §Sending Messages, §Request Metadata, §Server Validation); and the
`Mcp-Param-*` headers of a tool call (§Custom Headers from Tool Parameters), for both faces:
the front checks what a client sends, the upstream writes what a server expects.

Must not rename nor route (`renaming.py`); it reads a request's method, headers and decoded
body and says what is wrong (the refusal, worded by `replies.py`), or writes the headers a
body asks for.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

from bridge.core.codec import DecodeError, Message, decode
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
)
from bridge.streamable import replies
from bridge.streamable.era import SESSION_HEADER, VERSION_HEADER
from bridge.streamable.media import EVENT_STREAM, JSON, accepts, media_type
from bridge.streamable.replies import Reply

LISTEN: Final = "subscriptions/listen"
"""basic/patterns/subscriptions.mdx: its answer is an event stream that stays open."""

# Methods 2026-07-28 removed (its changelog; the suite's server-stateless checks them): 404.
REMOVED = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe",
                     "resources/unsubscribe", "notifications/initialized"})
# §Standard Request Headers: the methods whose Mcp-Name mirrors params.name or params.uri.
NAMED_BY: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


SESSION_METHODS: Final = ("GET", "DELETE")
"""Methods only a legacy session takes (2025-11-25 transports.mdx §Listening for Messages,
§Session Management); without a session id they are 405 (§Backward Compatibility)."""


def refuse_method(method: str, headers: dict[str, str]) -> Reply | None:
    """A request's method and media type, refused or not, before its body is read: POST with
    JSON (§Sending Messages 1), or a GET or DELETE naming a legacy session."""
    if method != "POST":
        if method in SESSION_METHODS and SESSION_HEADER in headers:
            return None
        return replies.method_not_allowed(method)
    media = media_type(headers.get("content-type"))
    return None if media == JSON else replies.unsupported_media(media)


def body_value(body: bytes) -> object:
    """A POST body's one JSON value, or None if it is not one (the only parse of it: the
    core takes the value)."""
    if not body.strip():
        return None
    try:
        return decode(body)
    except DecodeError:
        return None


def refuse_body(message: object) -> Reply | None:
    """A modern POST's decoded body (None: not one JSON value), refused or not: one request
    (§Sending Messages 4 and 5; a notification has no use here)."""
    if message is None:
        return replies.parse_error()
    if not isinstance(message, dict):
        return replies.not_a_request("a POST carries one JSON-RPC object (no batches)")
    if "method" not in message:
        return replies.not_a_request("a client sends no responses on 2026-07-28")
    if "id" not in message:
        return replies.notification_dropped()
    return None


def check(headers: dict[str, str], message: Message,
          params_of: ParamHeaders | None = None) -> Reply | None:
    """What the front refuses of a request before the core sees it, or None. `params_of`:
    the `Mcp-Param-*` headers the tools seen so far declare."""
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or META_PROTOCOL_VERSION not in meta \
            or META_CLIENT_CAPABILITIES not in meta:
        return replies.envelope_missing(
            request_id, f"params._meta needs {META_PROTOCOL_VERSION} and "
                        f"{META_CLIENT_CAPABILITIES} (2026-07-28)")
    version = headers.get(VERSION_HEADER)
    if version is None:
        return replies.header_mismatch(request_id, "MCP-Protocol-Version header missing")
    if version != meta[META_PROTOCOL_VERSION]:
        return replies.header_mismatch(
            request_id, f"MCP-Protocol-Version header value {version!r} does not match "
                        f"body value {meta[META_PROTOCOL_VERSION]!r}")
    if version != MODERN_PROTOCOL_VERSION:
        return replies.version_unsupported(request_id, version)
    said = headers.get("mcp-method")
    if said is None:
        return replies.header_mismatch(request_id, "Mcp-Method header missing")
    if said != method:  # values are case-sensitive (§Case Sensitivity)
        return replies.header_mismatch(
            request_id, f"Mcp-Method header value {said!r} does not match body value "
                        f"{method!r}")
    key = NAMED_BY.get(method) if isinstance(method, str) else None
    if key is not None:
        problem = _name_problem(headers.get("mcp-name"), params, key)  # type: ignore[arg-type]
        if problem:
            return replies.header_mismatch(request_id, problem)
    if method in REMOVED:
        return replies.removed_method(request_id, str(method))
    if method == "tools/call" and params_of is not None:
        problem = params_of.problem(headers, params)  # type: ignore[arg-type]
        if problem:
            return replies.header_mismatch(request_id, problem)
    if method == LISTEN and not takes_stream(headers):
        return replies.stream_not_acceptable(request_id, LISTEN)
    return None


def takes_stream(headers: dict[str, str]) -> bool:
    """Whether the client's `Accept` admits an event stream. §Sending Messages 2 has every
    client list both media types; one that lists only JSON gets the answer alone, as JSON
    (§Sending Messages 6 lets the server choose it; what it would have streamed before the
    answer, progress and logs, is only ever optional), and a request whose answer is a stream
    (`subscriptions/listen`) is refused with 406."""
    return accepts(headers.get("accept"), EVENT_STREAM)


class ParamHeaders:
    """§Custom Headers from Tool Parameters: the `x-mcp-header` annotations of every tool
    the server listed (learned from the `tools/list` answers that pass through the front),
    and the check of a call's `Mcp-Param-{Name}` headers against its arguments
    (§Server Behavior for Custom Headers). A tool never listed is not checked."""

    def __init__(self) -> None:
        self._tools: dict[str, list[tuple[str, tuple[str, ...]]]] = {}

    def learn(self, result: object) -> None:
        tools = result.get("tools") if isinstance(result, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                found: list[tuple[str, tuple[str, ...]]] = []
                _annotated(tool.get("inputSchema"), (), found)
                self._tools[tool["name"]] = found

    def problem(self, headers: dict[str, str], params: Message) -> str:
        declared = self._tools.get(params.get("name"))  # type: ignore[arg-type]
        if not declared:
            return ""
        arguments = params.get("arguments")
        for name, path in declared:
            value = _at(arguments, path)
            header = headers.get(f"mcp-param-{name.lower()}")
            if value is None:
                continue  # §Server Behavior: a null or absent value is not expected
            if header is None:
                return f"Mcp-Param-{name} header missing for argument {'.'.join(path)}"
            if any(not (" " <= c <= "~" or c == "\t") for c in header):
                return f"Mcp-Param-{name} header has invalid characters"
            text = decoded(header)
            if text is None:
                return f"Mcp-Param-{name} header is not valid =?base64?…?= (§Value Encoding)"
            if not _same(text, value):
                return (f"Mcp-Param-{name} header value {text!r} does not match body value "
                        f"{value!r}")
        return ""

    def headers_for(self, params: object) -> dict[str, str]:
        """§Client Behavior: the `Mcp-Param-{Name}` headers of a `tools/call` with these
        params, for a listed tool (values converted and encoded per §Value Encoding; an
        absent or null value, an object or an array, sends no header)."""
        name = params.get("name") if isinstance(params, dict) else None
        declared = self._tools.get(name) if isinstance(name, str) else None
        if not declared:
            return {}
        assert isinstance(params, dict)
        headers: dict[str, str] = {}
        for header, path in declared:
            value = _at(params.get("arguments"), path)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, int | float | str):
                text = str(value)
            else:
                continue
            headers[f"Mcp-Param-{header}"] = encoded(text)
        return headers


def encoded(text: str) -> str:
    """§Value Encoding: plain visible ASCII as it is, anything else (and what looks like the
    sentinel) in the Base64 sentinel form; `_decoded` undoes it."""
    plain = (text == text.strip() and all(" " <= c <= "~" for c in text)
             and not (text.startswith("=?base64?") and text.endswith("?=")))
    return text if plain else "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def _annotated(schema: object, path: tuple[str, ...],
               found: list[tuple[str, tuple[str, ...]]]) -> None:
    """The annotated properties reachable through `properties` keys alone (§Schema Extension)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return
    for key, sub in properties.items():
        if isinstance(sub, dict):
            header = sub.get("x-mcp-header")
            if isinstance(header, str) and header:
                found.append((header, (*path, key)))
            _annotated(sub, (*path, key), found)


def _at(arguments: object, path: tuple[str, ...]) -> object:
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments


def _same(text: str, value: object) -> bool:
    """§Value Encoding's conversions; integers compared as numbers (§Server Validation)."""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(text) == value
        except ValueError:
            return False
    return text == value


def _name_problem(header: str | None, params: Message, key: str) -> str:
    body = params.get(key)
    if header is None:
        return "Mcp-Name header missing"
    value = decoded(header)
    if value is None:
        return "Mcp-Name header is not valid =?base64?…?= (§Value Encoding)"
    if value != body:
        return f"Mcp-Name header value {value!r} does not match body value {body!r}"
    return ""


def decoded(header: str) -> str | None:
    """§Value Encoding: a value in the `=?base64?…?=` sentinel is decoded, others as sent."""
    if not (header.startswith("=?base64?") and header.endswith("?=")):
        return header
    try:
        return base64.b64decode(header[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
