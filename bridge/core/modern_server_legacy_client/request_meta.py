"""The per-request `_meta` a modern server reads and checks before serving a request.

Must not decide what to do with a valid request: it only reads the envelope (basic/index.mdx
§_meta "Per-request protocol fields") and names the error a modern server owes a bad one.
"""

from __future__ import annotations

from typing import Any

from bridge.core.eras import (
    INVALID_PARAMS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_log_level,
    is_progress_token,
)

Message = dict[str, Any]


class RequestMeta:
    """What one modern request declared about itself: version, capabilities, identity, opt-ins."""

    __slots__ = ("capabilities", "client_info", "log_level", "progress_token")

    def __init__(self, capabilities: Message, client_info: Message | None,
                 log_level: str | None, progress_token: Any) -> None:
        self.capabilities = capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.progress_token = progress_token


class Refusal:
    """The JSON-RPC error a modern server answers a malformed request with."""

    __slots__ = ("code", "data", "message")

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data


def read_meta(message: Message) -> RequestMeta | Refusal:
    """The request's envelope, or why a modern server must refuse the request.

    basic/index.mdx: a missing required field is -32602; versioning.mdx: a version the
    server does not support is -32022 naming the supported ones; logging.mdx: an unknown
    logLevel SHOULD be -32602.
    """
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return Refusal(INVALID_PARAMS, "Missing required params._meta (protocolVersion and "
                                       "clientCapabilities) for MCP 2026-07-28")
    version = meta.get(META_PROTOCOL_VERSION)
    if version != MODERN_PROTOCOL_VERSION:  # one test for the common case, then which error
        if not isinstance(version, str):
            return Refusal(INVALID_PARAMS, f"Missing required _meta field {META_PROTOCOL_VERSION}")
        return Refusal(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                       {"supported": [MODERN_PROTOCOL_VERSION], "requested": version})
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(caps, dict):
        return Refusal(INVALID_PARAMS, f"Missing required _meta field {META_CLIENT_CAPABILITIES}")
    info = meta.get(META_CLIENT_INFO)
    if info is not None and not isinstance(info, dict):
        return Refusal(INVALID_PARAMS, f"{META_CLIENT_INFO} must be an Implementation object")
    level = meta.get(META_LOG_LEVEL)
    if level is not None and not is_log_level(level):
        return Refusal(INVALID_PARAMS, f"Invalid log level: {level!r}")
    token = meta.get("progressToken")
    if token is not None and not is_progress_token(token):
        return Refusal(INVALID_PARAMS, "progressToken must be a string or a number")
    return RequestMeta(caps, info, level, token)


def usable_info(info: Message | None) -> bool:
    """Whether an Implementation has what a legacy one requires: a name and a version."""
    return isinstance(info, dict) and isinstance(info.get("name"), str) \
        and isinstance(info.get("version"), str)
