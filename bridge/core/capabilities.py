"""Capability objects translated between the eras (TRANSLATION.md §7.3).

Must not decide what the bridge can deliver (listen streams, logging): callers narrow the
translated capabilities to what they actually implement.
"""

from __future__ import annotations

from bridge.core.codec import Message

# Legacy list_changed notification -> the listen filter flag asking for it (subscriptions.mdx)
# and the server capability area whose `listChanged` offers it.
LIST_CHANGES = {
    "notifications/tools/list_changed": ("toolsListChanged", "tools"),
    "notifications/prompts/list_changed": ("promptsListChanged", "prompts"),
    "notifications/resources/list_changed": ("resourcesListChanged", "resources"),
}

# Server capability keys both eras share; `tasks` and `extensions` are era-specific.
_SHARED_SERVER_KEYS = ("logging", "completions", "prompts", "resources", "tools", "experimental")


def client_caps_to_modern(legacy: object) -> Message:
    """A legacy `initialize` capability set as a modern per-request one.

    roots loses `listChanged` (modern roots has no sub-fields, client/roots.mdx); tasks is
    dropped (an extension in the modern era, which the bridge does not declare).
    """
    if not isinstance(legacy, dict):
        return {}
    modern: Message = {}
    for key, value in legacy.items():
        if key == "tasks":
            continue
        if key == "roots":
            modern["roots"] = {}
        else:
            modern[key] = value
    return modern


def server_caps_to_legacy(modern: object, version: str) -> Message:
    """A modern server's capabilities as a legacy `InitializeResult.capabilities`.

    `listChanged` and `subscribe` are removed: the caller adds back what its listen stream
    can really deliver (subscriptions.mdx). `completions` is unknown before 2025-03-26.
    """
    if not isinstance(modern, dict):
        return {}
    legacy: Message = {}
    for key in _SHARED_SERVER_KEYS:
        if key in modern:
            legacy[key] = modern[key]
    for key in ("tools", "prompts", "resources"):
        value = legacy.get(key)
        if isinstance(value, dict):
            legacy[key] = {k: v for k, v in value.items() if k not in ("listChanged", "subscribe")}
    if version < "2025-03-26":
        legacy.pop("completions", None)
    return legacy


def server_caps_to_modern(legacy: object) -> Message:
    """A legacy server's capabilities as a modern `DiscoverResult.capabilities`."""
    if not isinstance(legacy, dict):
        return {}
    return {key: legacy[key] for key in _SHARED_SERVER_KEYS if key in legacy}


def has_flag(caps: object, area: str, flag: str) -> bool:
    """Whether `caps[area][flag]` is true (e.g. tools.listChanged)."""
    value = caps.get(area) if isinstance(caps, dict) else None
    return isinstance(value, dict) and value.get(flag) is True


def input_capability(method: str, params: object) -> tuple[str, ...]:
    """The client capability path an input request needs (TRANSLATION.md §5.6).

    roots/list needs `roots`; sampling needs `sampling`, and `sampling.tools` for tool use or
    `sampling.context` for includeContext (client/sampling.mdx); elicitation needs the mode's
    sub-capability, `elicitation.form` unless the mode is url (client/elicitation.mdx).
    """
    params = params if isinstance(params, dict) else {}
    if method == "roots/list":
        return ("roots",)
    if method == "sampling/createMessage":
        if "tools" in params or "toolChoice" in params:
            return ("sampling", "tools")
        if params.get("includeContext") in ("thisServer", "allServers"):
            return ("sampling", "context")
        return ("sampling",)
    return ("elicitation", "url") if params.get("mode") == "url" else ("elicitation", "form")


def declares(caps: object, path: tuple[str, ...]) -> bool:
    """Whether `caps` declares the capability at `path` (e.g. ("elicitation", "url")).

    client/elicitation.mdx §Capabilities: an empty `elicitation` object means form mode.
    """
    if path == ("elicitation", "form") and isinstance(caps, dict) and caps.get("elicitation") == {}:
        return True
    node: object = caps
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return False
    return True
