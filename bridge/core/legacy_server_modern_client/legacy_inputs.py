"""Input requests made fit for a legacy client's revision (mode A): elicitation schemas and
sampling messages (TRANSLATION.md §5.5, §10.3).

Must not guess: what the client's revision can hold is translated exactly, and what it cannot
is named (`unfit`), so the call fails with the reason instead of the client meeting a request
its schema does not allow. Never changes a request in place.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import V2025_03_26, V2025_11_25

# Sampling content blocks with no form before 2025-11-25 (client/sampling.mdx §Tool Use).
_TOOL_BLOCKS = frozenset({"tool_use", "tool_result"})


def unfit(method: str, params: Message, version: str) -> str | None:
    """Why a client of `version` cannot be asked this input request, or None if it can."""
    if version >= V2025_11_25:
        return None
    if method == "elicitation/create":
        return _unfit_elicitation(params, version)
    if method == "sampling/createMessage":
        return _unfit_sampling(params, version)
    return None


def for_revision(method: str, params: Message, version: str) -> Message:
    """`params` (which passed `unfit`) as a client of `version` expects them; a new dict."""
    if method == "elicitation/create":
        return elicitation_for(params, version)
    if method == "sampling/createMessage":
        return sampling_for(params, version)
    return dict(params)


# Elicitation -----------------------------------------------------------------------------
#
# 2025-06-18 schema, PrimitiveSchemaDefinition: StringSchema, NumberSchema, BooleanSchema or
# EnumSchema `{type: "string", enum, enumNames?}`; only BooleanSchema has a `default`. The
# 2025-11-25 and 2026-07-28 schemas add the titled single-select `oneOf: [{const, title}]`,
# the multi-select `type: "array"` forms, and `default` on every primitive.


def _fields(params: Message) -> dict[str, object]:
    schema = params.get("requestedSchema")
    fields = schema.get("properties") if isinstance(schema, dict) else None
    return fields if isinstance(fields, dict) else {}


def _unfit_elicitation(params: Message, version: str) -> str | None:
    for name, field in _fields(params).items():
        if isinstance(field, dict) and field.get("type") == "array":
            return (f"elicitation field {name!r} is a multi-select list, which revision "
                    f"{version} cannot ask for (its EnumSchema holds one choice)")
    return None


def elicitation_for(params: Message, version: str) -> Message:
    out = dict(params)
    if version < V2025_11_25:
        out.pop("mode", None)  # 2025-06-18 elicitation has no mode (form only)
        fields = _fields(params)
        if fields:
            schema = dict(params["requestedSchema"])
            schema["properties"] = {name: _field_for(field) for name, field in fields.items()}
            out["requestedSchema"] = schema
    return out


def _field_for(field: object) -> object:
    """One primitive field as 2025-06-18 holds it: a titled `oneOf` as `enum` + `enumNames`
    (the parallel arrays 2025-11-25 keeps as LegacyTitledEnumSchema), no `default` but a
    boolean's."""
    if not isinstance(field, dict):
        return field
    options = field.get("oneOf")
    if field.get("type") == "string" and isinstance(options, list) and "enum" not in field:
        consts = [o.get("const") if isinstance(o, dict) else None for o in options]
        if all(isinstance(c, str) for c in consts):
            out = {k: v for k, v in field.items() if k not in ("oneOf", "default")}
            out["enum"] = consts
            out["enumNames"] = [_title(o) for o in options]
            return out
    if "default" in field and field.get("type") != "boolean":
        return {k: v for k, v in field.items() if k != "default"}
    return field


def _title(option: Message) -> str:
    title = option.get("title")
    return title if isinstance(title, str) else str(option["const"])


# Sampling --------------------------------------------------------------------------------
#
# Before 2025-11-25, SamplingMessage.content is one block: text or image (2024-11-05), or
# audio too (2025-03-26, 2025-06-18); 2025-11-25 allows an array of blocks, tool_use and
# tool_result blocks, `tools` and `toolChoice`.


def _messages(params: Message) -> list[object]:
    given = params.get("messages")
    return given if isinstance(given, list) else []


def _blocks(message: object) -> list[object]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else [content]


def _unfit_sampling(params: Message, version: str) -> str | None:
    if "tools" in params or "toolChoice" in params:
        return f"sampling with tools needs revision 2025-11-25; the client speaks {version}"
    for index, message in enumerate(_messages(params)):
        blocks = _blocks(message)
        if not blocks:
            return f"sampling message {index} has no content"
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(kind, str) and kind in _TOOL_BLOCKS:  # a peer's type may be anything
                return (f"sampling message {index} holds {kind} content, which revision "
                        f"{version} has no form for (it arrived in 2025-11-25)")
            if kind == "audio" and version < V2025_03_26:
                return (f"sampling message {index} holds audio content, which revision "
                        f"{version} has no form for (it arrived in 2025-03-26)")
    return None


def sampling_for(params: Message, version: str) -> Message:
    """Content arrays as one message per block, in order and with the same role: the older
    SamplingMessage holds one block, and a conversation may repeat a role."""
    if version >= V2025_11_25 or not isinstance(params.get("messages"), list):
        return dict(params)  # ill-typed messages pass as they came: the client judges them
    messages: list[object] = []
    for message in _messages(params):
        if not isinstance(message, dict):
            messages.append(message)
            continue
        content = message.get("content")
        base = {k: v for k, v in message.items() if k != "_meta"}  # 2025-11-25 added _meta
        if isinstance(content, list):
            messages.extend({**base, "content": block} for block in content)
        else:
            messages.append(base)
    return {**params, "messages": messages}
