"""The two eras' names, versions, reserved `_meta` keys and error codes, and era tests.

Must not hold state or translate anything: it only names and classifies.
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard

from bridge.core.codec import RawNumber

Era = Literal["legacy", "modern"]

MODERN_PROTOCOL_VERSION: Final = "2026-07-28"
# The legacy revisions by name, for the rules that depend on which one a peer speaks (the
# dates compare as strings in the order they were published).
V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
V2025_06_18: Final = "2025-06-18"
V2025_11_25: Final = "2025-11-25"
# Oldest first: negotiation falls back to the newest (versioning.mdx §Version Negotiation).
LEGACY_PROTOCOL_VERSIONS: Final = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
LATEST_LEGACY_VERSION: Final = LEGACY_PROTOCOL_VERSIONS[-1]
BATCHING_VERSION: Final = "2025-03-26"  # the only revision with JSON-RPC batches

# basic/index.mdx §_meta "Per-request protocol fields" and "Per-response protocol fields".
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
ENVELOPE_KEYS: Final = frozenset(
    {META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL}
)
MODERN_RESULT_META_KEYS: Final = frozenset({META_SERVER_INFO, META_SUBSCRIPTION_ID})

# JSON-RPC 2.0 §5.1.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# basic/index.mdx §Error Codes (2026-07-28).
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
# Legacy only: resource not found (server/resources.mdx ≤ 2025-11-25) and URL elicitation.
LEGACY_RESOURCE_NOT_FOUND: Final = -32002
LEGACY_URL_ELICITATION_REQUIRED: Final = -32042

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_SEVERITY: Final = {level: rank for rank, level in enumerate(LOG_LEVELS)}


def is_log_level(value: object) -> bool:
    """Whether `value` is one of the eight syslog level names (logging.mdx)."""
    return isinstance(value, str) and value in LOG_SEVERITY


# A progress token as a peer sends it: a string or a number, kept as decoded.
ProgressToken = str | int | float | RawNumber
_TOKEN_TYPES: Final = (str, int, float, RawNumber)


def is_progress_token(value: object) -> TypeGuard[ProgressToken]:
    """ProgressToken is a string or a number (basic/utilities/progress.mdx); a bool is neither."""
    return isinstance(value, _TOKEN_TYPES) and not isinstance(value, bool)


def is_modern_error(error: object) -> bool:
    """True for an error only a modern server sends: a recognized code with its data shape.

    stdio.mdx §Backward Compatibility: fall back to legacy on "any other error"; the fallback
    must not be keyed to one code, so -32601/-32602 and the rest all mean legacy.
    """
    if not isinstance(error, dict):
        return False
    data = error.get("data")
    if not isinstance(data, dict):
        return False
    code = error.get("code")
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        supported = data.get("supported")
        return isinstance(supported, list) and all(isinstance(v, str) for v in supported)
    if code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        return isinstance(data.get("requiredCapabilities"), dict)
    return False


def request_version(message: object) -> str | None:
    """The modern protocol version a request's `_meta` names, if any."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def legacy_request(version: str, request: object) -> str | None:
    """The legacy revision `request` was made under, or None if it is not a legacy request.

    A request carrying the modern `_meta` version is modern; any other is legacy, since only
    a modern request can prove modernity (basic/versioning.mdx). An `initialize` names its own
    revision; any other request is made under `version`, the session's (the one `initialize`
    negotiated, or before it the one assumed).
    """
    if not isinstance(request, dict) or request_version(request) is not None:
        return None
    if request.get("method") == "initialize":
        params = request.get("params")
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        if isinstance(asked, str):
            return asked
    return version
