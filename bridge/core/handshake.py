"""The handshake results each era expects, made from what the other era offers (§7.4).

Must not decide when a handshake happens: the mode handlers call these builders.
"""

from __future__ import annotations

from typing import Any

from bridge.core.capabilities import server_caps_to_legacy
from bridge.core.downgrade import implementation_for
from bridge.core.eras import META_SERVER_INFO

Message = dict[str, Any]


def server_info_of(discover: Message | None) -> Message | None:
    """The serverInfo a DiscoverResult names in its `_meta` (optional in modern, §1.2)."""
    meta = discover.get("_meta") if isinstance(discover, dict) else None
    info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else None


def initialize_result(discover: Message, version: str, fallback_info: Message) -> Message:
    """A legacy InitializeResult for revision `version`, from a modern DiscoverResult.

    `listChanged`/`subscribe` are left out: only the caller knows if it can deliver them.
    serverInfo is required in legacy, so the bridge's own stands in when absent (§11.23).
    """
    info = server_info_of(discover) or fallback_info
    result: Message = {
        "protocolVersion": version,
        "capabilities": server_caps_to_legacy(discover.get("capabilities"), version),
        "serverInfo": implementation_for(info, version),
    }
    if isinstance(discover.get("instructions"), str):
        result["instructions"] = discover["instructions"]
    return result
