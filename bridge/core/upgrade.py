"""Legacy results made fit for a modern client (TRANSLATION.md §7.1, sharp edge 14).

Must not touch a message in place: additions are made on a shallow copy.
"""

from __future__ import annotations

from typing import Any

from bridge.core.eras import META_SERVER_INFO

# caching.mdx: the results that must carry ttlMs and cacheScope when complete.
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list", "resources/read"})


def result_for_modern(result: dict[str, Any], method: str | None, *,
                      server_info: dict[str, Any] | None = None, ttl_ms: int = 0,
                      cache_scope: str = "private") -> dict[str, Any]:
    """A legacy result as a modern server sends it: resultType, cache hints, serverInfo."""
    out = dict(result)
    out.setdefault("resultType", "complete")
    if method in CACHEABLE:
        out.setdefault("ttlMs", ttl_ms)
        out.setdefault("cacheScope", cache_scope)
    if server_info is not None:
        meta = out.get("_meta")
        out["_meta"] = {**meta, META_SERVER_INFO: server_info} if isinstance(meta, dict) \
            else {META_SERVER_INFO: server_info}
    return out
