"""Results, errors and notifications made fit for a legacy revision (TRANSLATION.md §3.4,
§7.1, §10.3).

Must not touch a message in place: every change is made on a copy, and only of the parts
that change, so what the bridge does not know passes through as it came.
"""

from __future__ import annotations

from collections.abc import Callable

from bridge.core.codec import Message, encode
from bridge.core.eras import (
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    MODERN_RESULT_META_KEYS,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
)


def implementation_for(info: Message, version: str) -> Message:
    """An Implementation (clientInfo/serverInfo) with only the fields `version` defines."""
    drop: set[str] = set()
    if version < V2025_06_18:
        drop.add("title")
    if version < V2025_11_25:
        drop.update(("icons", "description", "websiteUrl"))
    if not drop.intersection(info):
        return info
    return {k: v for k, v in info.items() if k not in drop}


def _metadata_for(item: object, version: str) -> object:
    """A Tool/Resource/Prompt/argument without the descriptive fields `version` lacks."""
    if not isinstance(item, dict):
        return item
    drop: list[str] = []
    if version < V2025_06_18:
        drop += ["title", "_meta"]
    if version < V2025_11_25:
        drop.append("icons")
    if not any(key in item for key in drop):
        return item
    return {k: v for k, v in item.items() if k not in drop}


def _content_for(block: object, version: str) -> object:
    """A content block the revision can parse: resource links and audio become text."""
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "resource_link" and version < V2025_06_18:
        label = block.get("name") or block.get("title") or ""
        return {"type": "text", "text": f"{block.get('uri', '')} ({label})"}
    if kind == "audio" and version < V2025_03_26:
        return {"type": "text", "text": f"[audio {block.get('mimeType', '')} omitted]"}
    if version < V2025_06_18:
        return _metadata_for(block, version)
    return block


def _contents_for(blocks: object, version: str) -> object:
    if not isinstance(blocks, list) or version >= V2025_06_18:
        return blocks
    return [_content_for(block, version) for block in blocks]


def _tool_for(tool: object, version: str) -> object:
    if not isinstance(tool, dict):
        return tool
    out = dict(tool)
    out.pop("execution", None)  # tasks are not bridged (TRANSLATION.md §4.3)
    schema = out.get("outputSchema")
    # Legacy revisions require an object root; before 2025-06-18 there is no outputSchema.
    if schema is not None and (version < V2025_06_18 or not _is_object_schema(schema)):
        del out["outputSchema"]
    if version < V2025_03_26:
        out.pop("annotations", None)
    return _metadata_for(out, version)


def _is_object_schema(schema: object) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def _list_for(
    key: str, item_for: Callable[[object, str], object]
) -> Callable[[Message, str], Message]:
    def downgrade(result: Message, version: str) -> Message:
        items = result.get(key)
        if isinstance(items, list):
            result[key] = [item_for(item, version) for item in items]
        return result

    return downgrade


def _prompt_for(prompt: object, version: str) -> object:
    prompt = _metadata_for(prompt, version)
    if isinstance(prompt, dict) and isinstance(prompt.get("arguments"), list) \
            and version < V2025_06_18:
        prompt = dict(prompt)
        prompt["arguments"] = [_metadata_for(arg, version) for arg in prompt["arguments"]]
    return prompt


def _call_tool_result(result: Message, version: str) -> Message:
    structured = result.get("structuredContent")
    if "structuredContent" in result and (version < V2025_06_18
                                          or not isinstance(structured, dict)):
        # Modern structuredContent may be any JSON value (SEP-2106); legacy wants an object
        # or nothing. tools.mdx: structured content SHOULD also come as serialized text.
        del result["structuredContent"]
        content = result.get("content")
        blocks = list(content) if isinstance(content, list) else []
        if not any(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
            blocks.append({"type": "text", "text": encode(structured).decode().rstrip("\n")})
        result["content"] = blocks
    if "content" in result and version < V2025_06_18:  # later revisions take every block
        result["content"] = _contents_for(result["content"], version)
    return result


def _get_prompt_result(result: Message, version: str) -> Message:
    messages = result.get("messages")
    if isinstance(messages, list) and version < V2025_06_18:
        result["messages"] = [_prompt_message_for(m, version) for m in messages]
    return result


def _prompt_message_for(message: object, version: str) -> object:
    if not isinstance(message, dict) or "content" not in message:
        return message
    return {**message, "content": _content_for(message["content"], version)}


_BY_METHOD: dict[str, Callable[[Message, str], Message]] = {
    "tools/list": _list_for("tools", _tool_for),
    "tools/call": _call_tool_result,
    "prompts/list": _list_for("prompts", _prompt_for),
    "prompts/get": _get_prompt_result,
    "resources/list": _list_for("resources", _metadata_for),
    "resources/templates/list": _list_for("resourceTemplates", _metadata_for),
}


def result_for_legacy(result: Message, method: str | None, version: str) -> Message:
    """A modern result as a legacy server of revision `version` would have sent it: without
    resultType, cache hints and modern `_meta` keys, and with the method's own fields fit
    for `version`. One shallow copy of the top level, from which the few members that can
    be modern are deleted (a `_meta` copied only if it keeps keys of its own): the result's
    bulk, its content, is never rebuilt unless the revision needs it changed."""
    out = result.copy()
    # The fields only a modern result carries (basic/index.mdx §ResultType, caching.mdx),
    # one test each: a copy and three pops cost twice as much.
    if "resultType" in out:
        del out["resultType"]
    if "ttlMs" in out:
        del out["ttlMs"]
    if "cacheScope" in out:
        del out["cacheScope"]
    meta = out.get("_meta")
    if isinstance(meta, dict) and not MODERN_RESULT_META_KEYS.isdisjoint(meta):
        if MODERN_RESULT_META_KEYS.issuperset(meta):  # most often serverInfo alone
            del out["_meta"]
        else:  # the original `_meta` is never changed
            out["_meta"] = {k: v for k, v in meta.items() if k not in MODERN_RESULT_META_KEYS}
    if method == "tools/call":  # the common result: shaped only if it can need it
        if "structuredContent" in out or version < V2025_06_18:
            return _call_tool_result(out, version)
        return out
    by_method = _BY_METHOD.get(method) if method is not None else None
    return by_method(out, version) if by_method is not None else out


def progress_for_legacy(params: Message, version: str) -> Message:
    """Progress params for a revision: `message` only exists since 2025-03-26."""
    if version < V2025_03_26 and "message" in params:
        return {k: v for k, v in params.items() if k != "message"}
    return params


def error_for_legacy(error: Message, method: str) -> Message:
    """A modern server's error as a legacy client knows it: a resource not found is -32002
    there. server/resources.mdx (2026-07-28) moved "not found" to -32602, which also means
    bad params, so only what says it is a missing resource is rewritten."""
    if method != "resources/read" or error.get("code") != INVALID_PARAMS:
        return error
    data = error.get("data")
    if (isinstance(data, dict) and "uri" in data) \
            or "not found" in str(error.get("message", "")).lower():
        return {**error, "code": LEGACY_RESOURCE_NOT_FOUND}
    return error
