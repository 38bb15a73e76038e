"""Legacy results and errors made fit for a modern client (TRANSLATION.md §3.4, §7.1).

Must not touch a message in place: additions are made on a shallow copy.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    LEGACY_URL_ELICITATION_REQUIRED,
    META_SERVER_INFO,
)

# caching.mdx: the results that must carry ttlMs and cacheScope when complete.
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list", "resources/read"})
# basic/index.mdx §Error Codes: -32020..-32099 are reserved to the spec, with defined meanings
# a legacy server cannot have meant (none of its codes live there but -32042).
_MCP_RESERVED = range(-32099, -32019)


def result_for_modern(result: Message, method: str | None,
                      server_info: Message | None = None, ttl_ms: int = 0,
                      cache_scope: str = "private") -> Message:
    """A legacy result as a modern server sends it: resultType, cache hints, serverInfo.

    A legacy result's own `resultType`, `ttlMs` or `cacheScope` are none of its era's fields
    (whatever they hold, the legacy server did not mean them as 2026-07-28 does), so the
    bridge's values replace them, and cache hints go from results of methods that have none
    (server/utilities/caching.mdx names the six that do).
    """
    out = result.copy()
    out["resultType"] = "complete"  # a legacy result is always whole (basic/index.mdx)
    if method in CACHEABLE:
        out["ttlMs"] = ttl_ms
        out["cacheScope"] = cache_scope
    elif "ttlMs" in out or "cacheScope" in out:
        out.pop("ttlMs", None)
        out.pop("cacheScope", None)
    if server_info is not None:  # `out` is ours already: no second copy
        meta = out.get("_meta")
        out["_meta"] = {**meta, META_SERVER_INFO: server_info} if isinstance(meta, dict) \
            else {META_SERVER_INFO: server_info}
    return out


def with_server_info(result: Message, server_info: Message | None) -> Message:
    """`result` with serverInfo in its `_meta` (basic/index.mdx: SHOULD be on every result)."""
    if server_info is None:
        return result
    out = dict(result)
    _put_server_info(out, server_info)
    return out


def _put_server_info(result: Message, server_info: Message) -> None:
    meta = result.get("_meta")
    result["_meta"] = {**meta, META_SERVER_INFO: server_info} \
        if isinstance(meta, dict) else {META_SERVER_INFO: server_info}


def error_for_modern(error: Message) -> Message:
    """A legacy error as a modern server may send it.

    -32002 (resource not found) became -32602 (server/resources.mdx); a modern server must
    not emit -32002 or -32042, and a legacy server's code in -32020..-32099 (the spec's own
    range) cannot carry the meaning the spec gives it there.
    """
    code = error.get("code")
    if code == LEGACY_RESOURCE_NOT_FOUND:
        return {**error, "code": INVALID_PARAMS}
    if code == LEGACY_URL_ELICITATION_REQUIRED:
        return _internal(error, "the server requires URL elicitation, which a 2026-07-28 "
                                "client can be asked for only on tools/call, resources/read "
                                "and prompts/get")
    if isinstance(code, int) and code in _MCP_RESERVED:
        return _internal(error, f"the server answered with legacy error code {code}")
    return error


def _internal(error: Message, why: str) -> Message:
    out: Message = {"code": INTERNAL_ERROR,
                           "message": f"mcp-rosetta: {why}: {error.get('message', '')}",
                           "data": {"legacyCode": error.get("code")}}
    if "data" in error:
        out["data"]["legacyData"] = error["data"]
    return out
