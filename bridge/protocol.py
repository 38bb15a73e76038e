"""mcp-rosetta's public library API: the two eras' vocabulary, for any Python code to import.

Must not define behaviour: every function here is the very one the bridge runs, re-exported
from bridge/core/ where it lives, so the library cannot drift from the bridge. They are pure
functions over plain dicts, with no bridge state and no I/O.

    >>> from bridge.protocol import build_request, MODERN_PROTOCOL_VERSION
    >>> build_request(1, "tools/list", None, era="modern")["params"]["_meta"][
    ...     "io.modelcontextprotocol/protocolVersion"] == MODERN_PROTOCOL_VERSION
    True
"""

from __future__ import annotations

from bridge.core.codec import encode as format_message
from bridge.core.envelope import build_request, legacy_context
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
    is_modern_error,
    legacy_request,
)
from bridge.core.handshake import legacy_result
from bridge.core.jsonrpc import Inbound, parse_inbound
from bridge.core.normalize import normalize_result

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
    "format_message",
    "is_modern_error",
    "legacy_context",
    "legacy_request",
    "legacy_result",
    "normalize_result",
    "parse_inbound",
]
