"""Results as the other era would have sent them: one entry point over both directions.

Must not hold the field maps themselves: downgrade.py (modern to legacy) and upgrade.py
(legacy to modern) own them; this only picks the direction.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.downgrade import result_for_legacy
from bridge.core.eras import LATEST_LEGACY_VERSION, Era
from bridge.core.upgrade import result_for_modern


def normalize_result(result: Message, *, to_era: Era, method: str | None = None,
                     version: str = LATEST_LEGACY_VERSION,
                     server_info: Message | None = None, ttl_ms: int = 0,
                     cache_scope: str = "private") -> Message:
    """`result` of `method` as the other era would have sent it; the input is not changed.

    to_era="legacy": strips resultType, ttlMs, cacheScope and modern `_meta` keys, and
    downgrades fields newer than `version` (TRANSLATION.md §10.3). to_era="modern": adds
    resultType "complete", ttlMs/cacheScope on the six cacheable methods, and serverInfo.
    """
    if to_era == "legacy":
        return result_for_legacy(result, method, version)
    return result_for_modern(result, method, server_info, ttl_ms, cache_scope)
