"""The results each era expects of requests the other era lacks, made from what it offers:
a legacy InitializeResult from a DiscoverResult (§7.4), the empty results of the rest (§4.1).

Must not decide when a handshake happens: the mode handlers call these builders.
"""

from __future__ import annotations

from bridge.core.capabilities import server_caps_to_legacy
from bridge.core.codec import Message
from bridge.core.config import default_bridge_info
from bridge.core.downgrade import implementation_for
from bridge.core.eras import META_SERVER_INFO

# Removed in 2026-07-28 (TRANSLATION.md §4.1); a legacy server answers them with {}.
_EMPTY_RESULTS = frozenset({"ping", "logging/setLevel", "resources/subscribe",
                            "resources/unsubscribe"})


def server_info_of(discover: Message | None) -> Message | None:
    """The serverInfo a DiscoverResult names in its `_meta` (optional in modern, §1.2)."""
    meta = discover.get("_meta") if isinstance(discover, dict) else None
    info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else None


def legacy_result(server: Message, method: str, version: str,
                  bridge_info: Message | None = None) -> Message | None:
    """What the bridge answers itself, as a legacy server, for a method the modern era removed.

    `server` is the modern server's DiscoverResult; `version` the revision negotiated with
    the legacy client. `initialize` → an InitializeResult (naming `bridge_info`, by default
    mcp-rosetta, when the server names itself nowhere); `ping`, `logging/setLevel`,
    `resources/subscribe` and `resources/unsubscribe` → `{}`; any other method → None (it is
    not answered locally but forwarded).
    """
    if method == "initialize":
        return initialize_result(server, version, bridge_info or default_bridge_info())
    if method in _EMPTY_RESULTS:
        return {}
    return None


def initialize_result(discover: Message, version: str, fallback_info: Message) -> Message:
    """A legacy InitializeResult for revision `version`, from a modern DiscoverResult.

    `listChanged`/`subscribe` are left out: only the caller knows if it can deliver them.
    `logging` is always in: the bridge serves logging/setLevel itself (it puts the level on
    every request), so it can offer logging even when the server sends logs without declaring
    it. serverInfo is required in legacy, so the bridge's own stands in when absent (§11.23).
    """
    info = server_info_of(discover) or fallback_info
    capabilities = server_caps_to_legacy(discover.get("capabilities"), version)
    capabilities.setdefault("logging", {})
    result: Message = {
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": implementation_for(info, version),
    }
    if isinstance(discover.get("instructions"), str):
        result["instructions"] = discover["instructions"]
    return result
