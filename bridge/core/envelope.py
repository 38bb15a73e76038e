"""The modern per-request `_meta` envelope: stamping it on requests and stripping it off.

Must not decide when to stamp or strip: callers (the mode handlers) decide; this only edits,
by shallow copy, so fields the bridge does not know pass through unchanged.
"""

from __future__ import annotations

from typing import Any

from bridge.core.eras import (
    ENVELOPE_KEYS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    Era,
)

# mrtr.mdx §Client Requirements: retries carry these beside the method's own params.
MRTR_PARAMS = ("inputResponses", "requestState")


def stamp_envelope(
    params: dict[str, Any] | None,
    *,
    client_capabilities: dict[str, Any],
    client_info: dict[str, Any] | None = None,
    log_level: str | None = None,
    version: str = MODERN_PROTOCOL_VERSION,
) -> dict[str, Any]:
    """`params` (created if absent) with a `_meta` that carries the modern envelope.

    The client's own `_meta` keys (progressToken, trace context) are kept; envelope keys it
    sent are replaced, since the bridge is the modern client here (basic/index.mdx §_meta).
    """
    new_params = {} if params is None else dict(params)
    old_meta = new_params.get("_meta")
    meta = dict(old_meta) if isinstance(old_meta, dict) else {}
    meta[META_PROTOCOL_VERSION] = version
    meta[META_CLIENT_CAPABILITIES] = client_capabilities
    if client_info is not None:
        meta[META_CLIENT_INFO] = client_info
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    else:
        meta.pop(META_LOG_LEVEL, None)
    new_params["_meta"] = meta
    return new_params


def strip_envelope(params: dict[str, Any] | None,
                   drop: frozenset[str] = ENVELOPE_KEYS) -> dict[str, Any] | None:
    """`params` without the modern envelope keys (or the `_meta` keys `drop` names) and the
    MRTR fields, for a legacy server.

    An emptied `_meta` is removed; `params` itself stays (legacy accepts `{}`).
    """
    if params is None:
        return None
    new_params = {k: v for k, v in params.items() if k not in MRTR_PARAMS}
    if isinstance(new_params.get("_meta"), dict):
        drop_meta_keys(new_params, drop)
    return new_params


def drop_meta_keys(message: dict[str, Any], keys: frozenset[str]) -> None:
    """Give `message` (the caller's own copy) a `_meta` without `keys`, or none if that
    leaves it empty; the original `_meta` dict is never changed."""
    kept = {k: v for k, v in message["_meta"].items() if k not in keys}
    if kept:
        message["_meta"] = kept
    else:
        del message["_meta"]


def build_request(
    id: str | int,
    method: str,
    params: dict[str, Any] | None,
    *,
    era: Era,
    client_info: dict[str, Any] | None = None,
    client_capabilities: dict[str, Any] | None = None,
    log_level: str | None = None,
) -> dict[str, Any]:
    """A request that a server will classify into `era`.

    modern: `params._meta` carries protocol version, capabilities ({} if none given), client
    info and log level. legacy: the envelope and MRTR fields are stripped.
    """
    if era == "modern":
        new_params: dict[str, Any] | None = stamp_envelope(
            params,
            client_capabilities=client_capabilities or {},
            client_info=client_info,
            log_level=log_level,
        )
    else:
        new_params = strip_envelope(params)
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if new_params is not None:
        message["params"] = new_params
    return message
