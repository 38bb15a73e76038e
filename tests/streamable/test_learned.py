"""What answers teach the upstream's next requests, without sockets: a modern tools/list's
annotations, a legacy `initialize`'s version, the tools screened out, the relearning after a
HeaderMismatch."""

from __future__ import annotations

import json
from typing import Any

from bridge.core.codec import encode
from bridge.core.eras import HEADER_MISMATCH, META_PROTOCOL_VERSION
from bridge.streamable.learned import (
    invalid_annotation,
    legacy_version,
    lists_tools,
    needs_relearn,
    screen_tools,
    tools_listing,
)
from bridge.streamable.outbound import Kind, ServerBound, read_outgoing

META = {META_PROTOCOL_VERSION: "2026-07-28"}


def sent(message: dict[str, Any]) -> ServerBound:
    out = read_outgoing(encode({"jsonrpc": "2.0", **message}).rstrip(b"\n"))
    assert out is not None
    return out


def test_a_modern_tools_list_teaches_a_legacy_one_does_not() -> None:
    assert lists_tools(sent({"id": 1, "method": "tools/list", "params": {"_meta": META}}))
    assert not lists_tools(sent({"id": 1, "method": "tools/list"}))
    assert not lists_tools(sent({"id": 1, "method": "prompts/list", "params": {"_meta": META}}))


def test_a_legacy_initialize_result_names_the_version_later_requests_carry() -> None:
    initialize = sent({"id": 1, "method": "initialize", "params": {}})
    result = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}}
    assert legacy_version(initialize, result) == "2025-06-18"
    assert legacy_version(initialize, {"jsonrpc": "2.0", "id": 1, "result": {}}) is None
    assert legacy_version(sent({"id": 1, "method": "tools/list"}), result) is None


def mismatch(request_id: object) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id,
                   "error": {"code": HEADER_MISMATCH, "message": "Header mismatch"}})


def test_a_header_mismatch_to_a_modern_call_asks_for_a_relearn() -> None:
    call = sent({"id": "rosetta-5", "method": "tools/call",
                 "params": {"name": "w", "arguments": {}, "_meta": META}})
    legacy_call = sent({"id": "rosetta-5", "method": "tools/call", "params": {"name": "w"}})
    other = encode({"jsonrpc": "2.0", "id": "rosetta-5",
                    "error": {"code": -32602, "message": "mentions -32020"}})
    assert needs_relearn(call, mismatch("rosetta-5"))
    assert not needs_relearn(call, other)
    assert not needs_relearn(legacy_call, mismatch("rosetta-5"))


def test_the_relearning_lists_the_tools_page_by_page_in_the_calls_version() -> None:
    call = sent({"id": "rosetta-5", "method": "tools/call",
                 "params": {"name": "w", "arguments": {}, "_meta": META}})
    first, second = tools_listing(call, 0), tools_listing(call, 1, "c1")
    assert (first.kind, first.method, first.version) == (Kind.REQUEST, "tools/list", "2026-07-28")
    assert json.loads(first.body) == {"jsonrpc": "2.0", "id": "rosetta-upstream-tools-0",
                                      "method": "tools/list", "params": {"_meta": META}}
    assert json.loads(second.body)["params"] == {"_meta": META, "cursor": "c1"}
    assert second.id == "rosetta-upstream-tools-1"


def test_tools_with_invalid_annotations_are_screened_out_and_named() -> None:
    listing = sent({"id": 2, "method": "tools/list", "params": {"_meta": META}})
    good = {"name": "good", "inputSchema": schema(r={"type": "string", "x-mcp-header": "R"})}
    bad = {"name": "bad", "inputSchema": schema(r={"type": "number", "x-mcp-header": "N"})}
    answer = {"jsonrpc": "2.0", "id": 2, "result": {"tools": [good, bad], "nextCursor": "n"}}
    screen = screen_tools(listing, answer)
    assert screen is not None
    assert json.loads(screen.line) == {"jsonrpc": "2.0", "id": 2,
                                       "result": {"tools": [good], "nextCursor": "n"}}
    assert [name for name, _ in screen.excluded] == ["bad"]
    assert "'number'" in screen.excluded[0][1]
    assert screen_tools(listing, {**answer, "result": {"tools": [good]}}) is None
    assert screen_tools(sent({"id": 2, "method": "tools/list"}), answer) is None  # legacy


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_invalid_x_mcp_header_annotations_are_named() -> None:
    good = schema(region={"type": "string", "x-mcp-header": "Region"},
                  opts=schema(dry={"type": "boolean", "x-mcp-header": "Dry"}))
    assert invalid_annotation(good) is None
    assert invalid_annotation({"type": "object"}) is None
    bad = {
        "empty": schema(a={"type": "string", "x-mcp-header": ""}),
        "token": schema(a={"type": "string", "x-mcp-header": "Bad Name"}),
        "twice": schema(a={"type": "string", "x-mcp-header": "Same"},
                        b={"type": "string", "x-mcp-header": "same"}),
        "number": schema(a={"type": "number", "x-mcp-header": "N"}),
        "object": schema(a={"type": "object", "x-mcp-header": "O"}),
        "items": schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
        "oneOf": schema(a={"oneOf": [{"type": "string", "x-mcp-header": "One"}]}),
    }
    for case, tool_schema in bad.items():
        assert invalid_annotation(tool_schema), case
