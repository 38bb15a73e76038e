"""What the answers teach the upstream's next requests, and what of them the client must not
see: the tools' `x-mcp-header` annotations, and a legacy server's protocol version.

Must not do I/O: the upstream's exchange and event-stream reader (bridge/shell/servers/remote/) ask
it of each answer they read, and send the listing it builds.
Rules: the 2026-07-28 streamable-http.mdx (§Schema Extension, §Client Behavior) and the
2025-11-25 transports.mdx (§Protocol Version Header).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bridge.core.codec import Message, decode, encode
from bridge.core.eras import HEADER_MISMATCH
from bridge.streamable.outbound import Kind, ServerBound, opens_session

LISTING_ID: Final = "rosetta-upstream-tools-"
"""The ids of the upstream's own tools/list requests (a page number follows): none of the
core's, so their answers never reach it."""


# After a HeaderMismatch --------------------------------------------------------------------


def needs_relearn(out: ServerBound, line: bytes) -> bool:
    """Whether `line`, the answer to `out`, asks for the tools to be listed again before the
    one retry (§Client Behavior: a HeaderMismatch to a modern tools/call)."""
    if out.params is None or b"-32020" not in line:
        return False
    message = decode(line)
    error = message.get("error") if isinstance(message, dict) else None
    return isinstance(error, dict) and error.get("code") == HEADER_MISMATCH


def tools_listing(out: ServerBound, page: int, cursor: str | None = None) -> ServerBound:
    """Page `page` of the tools/list the upstream sends itself to relearn the annotations
    before retrying `out`, in `out`'s protocol version (`cursor`: where the last page ended)."""
    assert isinstance(out.params, dict)
    params: dict[str, object] = {"_meta": out.params.get("_meta")}
    if cursor is not None:
        params["cursor"] = cursor
    request_id = f"{LISTING_ID}{page}"
    request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}
    return ServerBound(Kind.REQUEST, encode(request), id=request_id, method="tools/list",
                       version=out.version)


# What an answer teaches --------------------------------------------------------------------


def lists_tools(out: ServerBound) -> bool:
    """Whether `out` is a modern tools/list, whose answer names the tools' annotations (for
    the next calls' Mcp-Param-* headers) and is screened before the client sees it."""
    return out.kind is Kind.REQUEST and out.method == "tools/list" and out.version is not None


def legacy_version(out: ServerBound, answer: object) -> str | None:
    """The protocol version a legacy server's `initialize` result names (None: `out` is no
    `initialize`, or the result names none): every later request carries it
    (transports.mdx §Protocol Version Header)."""
    if not opens_session(out) or not isinstance(answer, dict):
        return None
    result = answer.get("result")
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if isinstance(version, str) else None


@dataclass(frozen=True, slots=True)
class Screened:
    """A tools/list answer without the tools whose annotations are invalid."""

    line: bytes
    """The answer the client gets instead."""
    excluded: tuple[tuple[object, str], ...]
    """Each excluded tool's name and why (§Schema Extension: the client SHOULD log it)."""


def screen_tools(out: ServerBound, answer: object) -> Screened | None:
    """`answer` without the tools whose `x-mcp-header` annotations are invalid (§Schema
    Extension: the client MUST exclude them); None when it has none, or `out` lists no
    tools."""
    if not lists_tools(out) or not isinstance(answer, dict):
        return None
    result = answer.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return None
    kept: list[object] = []
    excluded: list[tuple[object, str]] = []
    for tool in tools:
        why = invalid_annotation(tool.get("inputSchema")) if isinstance(tool, dict) else None
        if why is None:
            kept.append(tool)
        else:
            assert isinstance(tool, dict)
            excluded.append((tool.get("name"), why))
    if not excluded:
        return None
    assert isinstance(result, dict)
    whole: Message = {**answer, "result": {**result, "tools": kept}}
    return Screened(encode(whole), tuple(excluded))


# Tools whose x-mcp-header annotations are invalid ------------------------------------------

HEADER_TYPES: Final = frozenset({"integer", "string", "boolean"})
_TCHARS: Final = frozenset("!#$%&'*+-.^_`|~0123456789"
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def invalid_annotation(schema: object) -> str | None:
    """Why a tool's inputSchema breaks §Schema Extension's constraints on `x-mcp-header`
    (None: it does not). Clients MUST exclude such a tool from tools/list."""
    seen: set[str] = set()
    return _check_schema(schema, reachable=True, seen=seen)


def _check_schema(schema: object, *, reachable: bool, seen: set[str]) -> str | None:
    if isinstance(schema, list):
        for item in schema:
            if (why := _check_schema(item, reachable=False, seen=seen)) is not None:
                return why
        return None
    if not isinstance(schema, dict):
        return None
    for key, value in schema.items():
        if key == "x-mcp-header":
            if (why := _check_header(value, schema, reachable, seen)) is not None:
                return why
        elif key == "properties" and isinstance(value, dict):
            for sub in value.values():
                if (why := _check_schema(sub, reachable=reachable, seen=seen)) is not None:
                    return why
        elif (why := _check_schema(value, reachable=False, seen=seen)) is not None:
            return why  # items, oneOf, $defs, ...: not statically reachable
    return None


def _check_header(name: object, schema: dict[str, object], reachable: bool,
                  seen: set[str]) -> str | None:
    if not isinstance(name, str) or not name:
        return "an empty x-mcp-header"
    if not set(name) <= _TCHARS:
        return f"x-mcp-header {name!r} is not an HTTP field-name token"
    if name.lower() in seen:
        return f"x-mcp-header {name!r} is used twice (names are case-insensitive)"
    seen.add(name.lower())
    if schema.get("type") not in HEADER_TYPES:
        return (f"x-mcp-header {name!r} is on a parameter of type {schema.get('type')!r} "
                "(only integer, string and boolean)")
    if not reachable:
        return (f"x-mcp-header {name!r} is not reachable through properties alone "
                "(items, oneOf, $ref, ...)")
    return None
