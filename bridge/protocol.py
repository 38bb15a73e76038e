"""mcp-rosetta's public library API: the two eras' vocabulary, for any Python code to import.

Must not hold bridge state or do I/O: these are pure functions over plain dicts, the same
ones the bridge itself runs on every message.

    >>> from bridge.protocol import build_request, MODERN_PROTOCOL_VERSION
    >>> build_request(1, "tools/list", None, era="modern")["params"]["_meta"][
    ...     "io.modelcontextprotocol/protocolVersion"] == MODERN_PROTOCOL_VERSION
    True
"""

from __future__ import annotations

from typing import Any

from bridge.core.codec import encode
from bridge.core.downgrade import result_for_legacy
from bridge.core.envelope import build_request, strip_envelope
from bridge.core.eras import (
    BATCHING_VERSION,
    ENVELOPE_KEYS,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_LEGACY_VERSION,
    LEGACY_PROTOCOL_VERSIONS,
    LEGACY_RESOURCE_NOT_FOUND,
    LEGACY_URL_ELICITATION_REQUIRED,
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSION,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    Era,
    detect_era,
    is_modern_error,
    legacy_request,
)
from bridge.core.handshake import initialize_result
from bridge.core.jsonrpc import Inbound, parse_inbound
from bridge.core.upgrade import result_for_modern

__all__ = [
    "BATCHING_VERSION",
    "ENVELOPE_KEYS",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_LEGACY_VERSION",
    "LEGACY_PROTOCOL_VERSIONS",
    "LEGACY_RESOURCE_NOT_FOUND",
    "LEGACY_URL_ELICITATION_REQUIRED",
    "LOG_LEVELS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_PROTOCOL_VERSION",
    "PARSE_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Era",
    "Inbound",
    "build_request",
    "decline_input_response",
    "detect_era",
    "format_message",
    "is_modern_error",
    "legacy_context",
    "legacy_request",
    "legacy_result",
    "normalize_result",
    "parse_inbound",
]


def normalize_result(result: dict[str, Any], *, to_era: Era, method: str | None = None,
                     version: str = LATEST_LEGACY_VERSION,
                     server_info: dict[str, Any] | None = None, ttl_ms: int = 0,
                     cache_scope: str = "private") -> dict[str, Any]:
    """`result` of `method` as the other era would have sent it; the input is not changed.

    to_era="legacy": strips resultType, ttlMs, cacheScope and modern `_meta` keys, and
    downgrades fields newer than `version` (TRANSLATION.md §10.3). to_era="modern": adds
    resultType "complete", ttlMs/cacheScope on the six cacheable methods, and serverInfo.
    """
    if to_era == "legacy":
        return result_for_legacy(result, method, version)
    return result_for_modern(result, method, server_info=server_info, ttl_ms=ttl_ms,
                             cache_scope=cache_scope)


def decline_input_response(request: dict[str, Any]) -> dict[str, Any] | None:
    """The "no, thank you" answer to an input request, or None to leave its key out.

    elicitation → {"action": "decline"}; roots → {"roots": []}; sampling or anything else
    → None (there is no declining sample: mrtr.mdx says the client simply does not retry).
    """
    method = request.get("method") if isinstance(request, dict) else None
    if method == "elicitation/create":
        return {"action": "decline"}
    if method == "roots/list":
        return {"roots": []}
    return None


def legacy_context(params: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any] | None:
    """Request `params` made fit for a legacy peer whose session is `context`.

    `context["protocolVersion"]` is the revision negotiated with it. The modern envelope and
    MRTR fields are removed, and `completion/complete`'s `context` argument (new in
    2025-06-18) is dropped for older revisions when `context["method"]` names that method.
    """
    stripped = strip_envelope(params)
    version = context.get("protocolVersion", LATEST_LEGACY_VERSION)
    if (stripped is not None and context.get("method") == "completion/complete"
            and version < "2025-06-18"):
        stripped.pop("context", None)
    return stripped


def legacy_result(server: dict[str, Any], method: str, version: str) -> dict[str, Any] | None:
    """What the bridge answers itself, as a legacy server, for a method modern removed.

    `server` is the modern server's DiscoverResult; `version` the revision negotiated with
    the legacy client. `initialize` → an InitializeResult; `ping`, `logging/setLevel`,
    `resources/subscribe` and `resources/unsubscribe` → `{}`; any other method → None
    (it is not answered locally but forwarded).
    """
    if method == "initialize":
        return initialize_result(server, version, {"name": "mcp-rosetta", "version": "0"})
    if method in ("ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
        return {}
    return None


def format_message(message: Any) -> bytes:
    """One message as one newline-terminated UTF-8 line with no embedded newline (stdio.mdx)."""
    return encode(message)
