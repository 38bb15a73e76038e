"""A 2026-07-28 POST mapped onto the one shared bridge session.

Must not answer for the core: it checks what is the transport's to check (the request
metadata headers against the body, streamable-http.mdx §Request Metadata and §Server
Validation), renames the request's id into a space of the front's own, and routes what the
core sends the client back to the POST it belongs to by `Send.request`. A modern request is
stateless, so every POST is a client message of the one session whatever connection carried
it; the core assumes one client's id space, so two clients' `"id": 1` must not meet there.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from dataclasses import dataclass
from typing import Protocol

from bridge.core.codec import Message, encode
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
)
from bridge.core.events import Send, Spliced
from bridge.shell.http import replies
from bridge.shell.http.replies import Reply
from bridge.shell.http.route import STREAM_BACKLOG, Outgoing, Route
from bridge.shell.logs import Logger

# Methods 2026-07-28 removed (its changelog; the suite's server-stateless checks them): 404.
REMOVED = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe",
                     "resources/unsubscribe", "notifications/initialized"})
# §Standard Request Headers: the methods whose Mcp-Name mirrors params.name or params.uri.
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
LISTEN = "subscriptions/listen"
PREFIX = "http-"


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
    version = headers.get("mcp-protocol-version")
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
    return None


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
            text = _decoded(header)
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
    value = _decoded(header)
    if value is None:
        return "Mcp-Name header is not valid =?base64?…?= (§Value Encoding)"
    if value != body:
        return f"Mcp-Name header value {value!r} does not match body value {body!r}"
    return ""


def _decoded(header: str) -> str | None:
    """§Value Encoding: a value in the `=?base64?…?=` sentinel is decoded, others as sent."""
    if not (header.startswith("=?base64?") and header.endswith("?=")):
        return header
    try:
        return base64.b64decode(header[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


@dataclass(slots=True)
class Exchange:
    """One POST's request while the core has it: where its messages go."""

    original: object
    """The id as the client spelled it (restored on the way out)."""
    wire: str
    """The id the core knows it by."""
    method: str
    route: Route
    """Its messages on their way to the client, within the backlog bound."""
    token: object = None
    """The client's `_meta.progressToken`, if it named one (renamed like the id: two
    clients may both say "t")."""


class Routes(Protocol):
    """Where a POST's route is given up when its client goes away (`Mapping`,
    `legacy.LegacySession`): the line that cancels it at the core, if any."""

    def abandon(self, exchange: Exchange) -> bytes | None: ...


def open_exchange(original: object, wire: str, method: str, log: Logger,
                  backlog: int = STREAM_BACKLOG, **names: object) -> Exchange:
    """A POST's exchange and its route: the one place both eras' POST streams are made, so
    both have the bound (`route.py`). `names`: what the log says the route is for."""
    route = Route(log, backlog, **names, request=original, rpc_method=method)
    return Exchange(original, wire, method, route)


class Mapping:
    """The front's half of the shared session: every POST's request in flight by its id."""

    def __init__(self, log: Logger, backlog: int = STREAM_BACKLOG) -> None:
        self._log = log
        self._backlog = backlog
        self._numbers = itertools.count(1)
        self._routes: dict[str, Exchange] = {}
        self.param_headers = ParamHeaders()

    @property
    def in_flight(self) -> int:
        return len(self._routes)

    def admit(self, message: Message, client: str = "") -> tuple[Exchange, bytes]:
        """`message` renamed for the core: its exchange, and the line to hand the core."""
        wire = f"{PREFIX}{next(self._numbers)}"
        exchange = open_exchange(message.get("id"), wire, str(message.get("method")),
                                 self._log, self._backlog, client=client)
        self._routes[wire] = exchange
        renamed = {**message, "id": wire}
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            exchange.token = meta["progressToken"]
            renamed["params"] = {**params, "_meta": {**meta, "progressToken": wire}}  # type: ignore[dict-item]
        return exchange, encode(renamed)

    def deliver(self, send: Send) -> None:
        """A message the core sends the client: onto the stream of the POST it names. The
        driver calls it, so it must not wait: a POST whose client does not read gives up
        past its bound (`route.py`) instead."""
        message = send.message
        line: bytes | None = send.line.joined() if isinstance(send.line, Spliced) else send.line
        request = send.request
        if not isinstance(message, dict):
            self._log.warning("http.dropped", reason="a batch has no place on a 2026-07-28 "
                                                     "front")
            return
        exchange = self._routes.get(request) if isinstance(request, str) else None
        if exchange is None:
            # A message naming no request (a legacy server's list_changed no stream asked
            # for, an error under id null) or one whose POST is gone (cancelled): a modern
            # client has no stream it could go on (§Receiving Messages: every message on a
            # stream relates to its request).
            self._log.info("http.dropped", method=message.get("method"),
                           request=request, reason="belongs to no open POST" if request
                           is not None else "names no request: no stream to put it on")
            return
        is_answer = "method" not in message and message.get("id") == exchange.wire
        if exchange.token is not None and message.get("method") == "notifications/progress":
            progress = message.get("params")
            if isinstance(progress, dict) and progress.get("progressToken") == exchange.wire:
                message = {**message, "params": {**progress, "progressToken": exchange.token}}
                line = None
        if exchange.method == LISTEN:
            restored = _subscription_restored(message, exchange)
            if restored is not message:
                message, line = restored, None
        if is_answer:
            message = {**message, "id": exchange.original}
            line = None
            del self._routes[exchange.wire]
            if exchange.method == "tools/list" and "result" in message:
                self.param_headers.learn(message["result"])
        final = "method" not in message
        outgoing = Outgoing(encode(message) if line is None else line, final,
                            replies.status_of(message) if final else 200)
        exchange.route.put(outgoing)  # past its bound, the route gives up (and says so)
        if is_answer:
            exchange.route.close()

    def abandon(self, exchange: Exchange) -> bytes | None:
        """The POST's client went away before its answer: the line that cancels it at the
        core (streamable-http.mdx §Cancellation), or None if it was already answered."""
        if self._routes.pop(exchange.wire, None) is None:
            return None
        exchange.route.close()
        return encode({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": exchange.wire,
                                  "reason": "the HTTP client closed the connection"}})

    def abandon_all(self) -> None:
        for exchange in list(self._routes.values()):
            exchange.route.close()
        self._routes.clear()


SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def _subscription_restored(message: Message, exchange: Exchange) -> Message:
    """A listen stream's message with the client's id as its subscription id.

    basic/patterns/subscriptions.mdx §Receiving Notifications: the subscription id is the
    JSON-RPC id of the `subscriptions/listen` request, on the acknowledgement, on every
    notification and on the closing result; a client waits for the acknowledgement naming
    its own id, so the wire id must not reach it.
    """
    key = "params" if "method" in message else "result"
    body = message.get(key)
    meta = body.get("_meta") if isinstance(body, dict) else None
    if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID) != exchange.wire:
        return message
    restored = {**meta, SUBSCRIPTION_ID: exchange.original}
    return {**message, key: {**body, "_meta": restored}}  # type: ignore[dict-item]
