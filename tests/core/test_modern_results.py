"""Transcripts of mode B's results: whatever a legacy server puts in them, the modern client
gets a result valid for 2026-07-28, with the bridge's resultType and cache hints.

A legacy result has no `resultType`, `ttlMs` or `cacheScope` in its era (basic/index.mdx
§ResultType, server/utilities/caching.mdx): a legacy server's fields by those names mean
something else, or nothing, and must not reach the client as if it meant them.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from tests.core.harness import OLD_SRV, answer, mode_b, modern, one
from tests.core.test_golden import _schema

Message = dict[str, Any]

ODD = {"resultType": "input_required", "ttlMs": -5, "cacheScope": "everyone"}


@pytest.mark.parametrize(("method", "params", "result", "definition"), [
    ("tools/list", None, {"tools": []}, "ListToolsResult"),
    ("resources/read", {"uri": "file:///a"},
     {"contents": [{"uri": "file:///a", "text": "x"}]}, "ReadResourceResult"),
    ("prompts/list", None, {"prompts": []}, "ListPromptsResult"),
])
def test_the_bridges_cache_hints_replace_a_legacy_servers_own(
        method: str, params: Message | None, result: Message, definition: str) -> None:
    h, _ = mode_b(config=CoreConfig(cache_ttl_ms=1500))
    forwarded = one(h.client(modern(1, method, params)), "server")
    reply = one(h.server(answer(forwarded, {**result, **ODD})), "client")
    assert reply["result"] == {**result, "resultType": "complete", "ttlMs": 1500,
                               "cacheScope": "private", "_meta": OLD_SRV}
    _schema("2026-07-28", definition).validate(reply["result"])


def test_a_result_of_a_method_without_cache_hints_loses_the_legacy_servers() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(1, "tools/call", {"name": "t"})), "server")
    content = [{"type": "text", "text": "ok"}]
    reply = one(h.server(answer(forwarded, {"content": content, **ODD})), "client")
    assert reply["result"] == {"content": content, "resultType": "complete", "_meta": OLD_SRV}
    _schema("2026-07-28", "CallToolResult").validate(reply["result"])


def test_a_legacy_servers_own_server_info_in_meta_is_replaced_by_the_handshakes() -> None:
    h, _ = mode_b()
    forwarded = one(h.client(modern(1, "tools/call", {"name": "t"})), "server")
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "Liar", "version": "0"}, "k": 1}
    reply = one(h.server(answer(forwarded, {"content": [], "_meta": meta})), "client")
    assert reply["result"]["_meta"] == {**OLD_SRV, "k": 1}


def test_the_retried_result_of_a_parked_call_is_never_cached_whatever_the_server_said() -> None:
    h, _ = mode_b(config=CoreConfig(cache_ttl_ms=1500))
    legacy = one(h.client(modern(1, "resources/read", {"uri": "file:///a"},
                                 caps={"elicitation": {}})), "server")
    h.server({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create",
              "params": {"message": "ok?", "requestedSchema": {"type": "object",
                                                               "properties": {}}}})
    parked = one(h.advance(0.05), "client")["result"]
    retry = modern(2, "resources/read", {"uri": "file:///a", "requestState": parked[
        "requestState"], "inputResponses": {"q1": {"action": "accept", "content": {}}}},
        caps={"elicitation": {}})
    assert one(h.client(retry), "server")["id"] == 9
    reply = one(h.server(answer(legacy, {"contents": [], "ttlMs": 99999,
                                         "cacheScope": "public"})), "client")
    assert (reply["id"], reply["result"]["ttlMs"], reply["result"]["cacheScope"]) == (
        2, 0, "private")
