"""Which era one HTTP request belongs to, on an endpoint that serves both.

Must not refuse anything: the era only chooses the path (`headers.py` checks a modern request,
the front's `legacy.py` holds the sessions of legacy ones); each path words its own refusals.
"""

from __future__ import annotations

import enum

from bridge.core.eras import (
    LEGACY_PROTOCOL_VERSIONS,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
OPENS_SESSION = "initialize"
"""The request that opens a legacy session (§Session Management 1: without a session id)."""
ASSUMED_LEGACY_VERSION = "2025-03-26"
"""2025-11-25 transports.mdx §Protocol Version Header: a request without the header, and no
other way to tell, is taken as 2025-03-26."""


class Era(enum.Enum):
    MODERN = "modern"
    LEGACY = "legacy"


def era_of(headers: dict[str, str], message: object) -> Era:
    """The era of a request (`message`: its decoded body; None for GET and DELETE).

    A request that names 2026-07-28 (in `_meta.protocolVersion` or `MCP-Protocol-Version`) is
    modern. One with an `Mcp-Session-Id` (2025-11-25 transports.mdx §Session Management: a
    modern request has no session), an `initialize` (how a legacy session begins), or an
    `MCP-Protocol-Version` naming a legacy revision is legacy. Anything else takes the modern
    path, whose checks name what it lacks (a legacy request without its session id is
    refused there too, as §Session Management asks, with 400).
    """
    version = headers.get(VERSION_HEADER)
    if version == MODERN_PROTOCOL_VERSION or _names_modern(message):
        return Era.MODERN
    if SESSION_HEADER in headers or version in LEGACY_PROTOCOL_VERSIONS:
        return Era.LEGACY
    if isinstance(message, dict) and message.get("method") == OPENS_SESSION:
        return Era.LEGACY
    return Era.MODERN


def _names_modern(message: object) -> bool:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get(META_PROTOCOL_VERSION) == MODERN_PROTOCOL_VERSION
