"""Mode A's per-request copies give what the rules give, built the long way: the envelope a
session stamps from its prebuilt `_meta` (envelope.EnvelopeStamp), and a result downgraded by
deleting the members that can be modern (downgrade.result_for_legacy). Each is held to a
reference written here from the rules alone, on generated params and results, and neither may
change what it was given."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bridge.core.codec import Message
from bridge.core.downgrade import _BY_METHOD, result_for_legacy
from bridge.core.envelope import envelope_stamp, stamp_envelope
from bridge.core.eras import (
    LEGACY_PROTOCOL_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSION,
)

_ENVELOPE = (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL)
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
                    st.just({"a": 1}), st.just([1, 2]))
_META_KEYS = st.sampled_from([*_ENVELOPE, "progressToken", "trace", META_SERVER_INFO,
                              META_SUBSCRIPTION_ID, "x/custom"])


def _reference_stamp(params: Message | None, caps: Message, info: Message | None,
                     level: str | None) -> Message:
    """basic/index.mdx §_meta, key by key: the client's own `_meta` keys stay where they are,
    the envelope's replace the client's, and a level is carried only if the session has one."""
    new: Message = {} if params is None else dict(params)
    old = new.get("_meta")
    meta: Message = dict(old) if isinstance(old, dict) else {}
    meta[META_PROTOCOL_VERSION] = MODERN_PROTOCOL_VERSION
    meta[META_CLIENT_CAPABILITIES] = caps
    if info is not None:
        meta[META_CLIENT_INFO] = info
    if level is not None:
        meta[META_LOG_LEVEL] = level
    else:
        meta.pop(META_LOG_LEVEL, None)
    new["_meta"] = meta
    return new


@st.composite
def _params(draw: st.DrawFn) -> Message | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    params: Message = draw(st.dictionaries(st.sampled_from(["name", "arguments", "uri"]),
                                           _VALUES, max_size=3))
    meta = draw(st.one_of(st.none(), _VALUES,
                          st.dictionaries(_META_KEYS, _VALUES, max_size=4)))
    if meta is not None or draw(st.booleans()):
        params["_meta"] = meta
    return params


@settings(max_examples=400, deadline=None)
@given(_params(), st.dictionaries(st.sampled_from(["roots", "sampling", "elicitation"]),
                                  st.just({}), max_size=3),
       st.one_of(st.none(), st.just({"name": "c", "version": "1"})),
       st.one_of(st.none(), st.sampled_from(["debug", "error"])))
def test_a_session_stamp_gives_the_envelope_built_key_by_key(
        params: Message | None, caps: Message, info: Message | None,
        level: str | None) -> None:
    before = copy.deepcopy(params)
    stamp = envelope_stamp(client_capabilities=caps, client_info=info, log_level=level)
    expected = _reference_stamp(params, caps, info, level)
    first, second = stamp.stamp(params), stamp.stamp(params)
    assert first == expected
    assert list(first["_meta"]) == list(expected["_meta"])  # the client's keys keep their place
    assert list(first) == list(expected)
    assert first["_meta"] is not second["_meta"]  # every request its own copy of the envelope
    assert first["_meta"] is not stamp.members
    assert stamp_envelope(params, client_capabilities=caps, client_info=info,
                          log_level=level) == expected
    assert params == before


_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")
_RESULT_KEYS = st.sampled_from(["content", "isError", "structuredContent", "tools",
                                "nextCursor", *_MODERN_ONLY, "_meta"])
_BLOCKS = st.lists(st.sampled_from([{"type": "text", "text": "t"},
                                    {"type": "resource_link", "uri": "u", "name": "n"},
                                    {"type": "audio", "data": "", "mimeType": "audio/wav"}]),
                   max_size=3)


def _reference_strip(result: Message) -> Message:
    """basic/index.mdx §ResultType and caching.mdx: the modern-only members go, and of
    `_meta` its modern keys (the whole `_meta` if nothing else is left)."""
    out = {k: v for k, v in result.items() if k not in _MODERN_ONLY}
    meta = out.get("_meta")
    if isinstance(meta, dict) and ({META_SERVER_INFO, META_SUBSCRIPTION_ID} & meta.keys()):
        kept = {k: v for k, v in meta.items() if k not in (META_SERVER_INFO,
                                                            META_SUBSCRIPTION_ID)}
        if kept:
            out["_meta"] = kept
        else:
            del out["_meta"]
    return out


@st.composite
def _results(draw: st.DrawFn) -> Message:
    result: Message = {}
    for key in draw(st.lists(_RESULT_KEYS, max_size=6, unique=True)):
        if key == "_meta":
            result[key] = draw(st.one_of(_VALUES, st.dictionaries(_META_KEYS, _VALUES,
                                                                  max_size=3)))
        elif key == "content":
            result[key] = draw(st.one_of(_BLOCKS, _VALUES))
        else:
            result[key] = draw(_VALUES)
    return result


@settings(max_examples=500, deadline=None)
@given(_results(), st.sampled_from(["tools/call", "tools/list", "ping", "resources/read"]),
       st.sampled_from(LEGACY_PROTOCOL_VERSIONS))
# The cases the tools/call shortcut must not skip: a revision older than 2025-06-18, and
# structuredContent at any revision.
@example({"resultType": "complete", "content": [{"type": "resource_link", "uri": "u",
                                                  "name": "n"}]}, "tools/call", "2025-03-26")
@example({"content": [], "structuredContent": 3, "ttlMs": 0}, "tools/call", "2025-11-25")
def test_a_result_downgraded_in_one_copy_is_the_one_stripped_and_shaped(
        result: Message, method: str, version: str) -> None:
    before = copy.deepcopy(result)
    # The reference: stripped, then always shaped by the method's own rule (a tools/call
    # result too, which result_for_legacy shapes only when it can need it).
    stripped = _reference_strip(result)
    shape = _BY_METHOD.get(method)
    expected = shape(stripped, version) if shape is not None else stripped
    got: Any = result_for_legacy(result, method, version)
    assert got == expected
    assert list(got) == list(expected)
    assert not set(_MODERN_ONLY) & set(got)
    meta = got.get("_meta")
    assert not (isinstance(meta, dict) and {META_SERVER_INFO, META_SUBSCRIPTION_ID} & set(meta))
    assert result == before  # the server's result is never changed


def test_a_tools_call_result_of_a_recent_revision_keeps_its_content_as_it_came() -> None:
    content = [{"type": "text", "text": "hello"}]
    result = {"resultType": "complete", "content": content, "isError": False,
              "_meta": {META_SERVER_INFO: {"name": "s", "version": "1"}}}
    legacy = result_for_legacy(result, "tools/call", LEGACY_PROTOCOL_VERSIONS[-1])
    assert legacy == {"content": content, "isError": False}
    assert legacy["content"] is content  # the bulk is not rebuilt


def test_a_structured_result_still_gets_its_text_block_at_a_recent_revision() -> None:
    result = {"resultType": "complete", "content": [], "structuredContent": [1, 2]}
    legacy = result_for_legacy(result, "tools/call", LEGACY_PROTOCOL_VERSIONS[-1])
    assert legacy == {"content": [{"type": "text", "text": "[1,2]"}]}
