"""Golden cases: the spec's own 2026-07-28 examples, through the bridge, validated against the
schema of the era and revision the receiving peer speaks (tests/fixtures/spec/, copied from the
specification repository; its README says which commit, and under which license)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jsonschema
import pytest

from bridge.core.eras import LEGACY_PROTOCOL_VERSIONS
from tests.core.harness import DISCOVER_RESULT, answer, mode_a, mode_b, modern, one, sent

SPEC = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "spec" / "schema"
EXAMPLES = SPEC / "2026-07-28" / "examples"

# Result type -> the request whose answer it is (the method decides the downgrade).
RESULTS = {
    "CallToolResult": ("tools/call", {"name": "t"}),
    "ListToolsResult": ("tools/list", None),
    "ListPromptsResult": ("prompts/list", None),
    "GetPromptResult": ("prompts/get", {"name": "p"}),
    "ReadResourceResult": ("resources/read", {"uri": "file:///x"}),
    "ListResourcesResult": ("resources/list", None),
    "ListResourceTemplatesResult": ("resources/templates/list", None),
    "CompleteResult": ("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                               "argument": {"name": "a", "value": "x"}}),
}
MODERN_ONLY = ("resultType", "ttlMs", "cacheScope", "io.modelcontextprotocol/")


def _schema(version: str, definition: str) -> jsonschema.protocols.Validator:
    whole = json.loads((SPEC / version / "schema.json").read_text())
    defs = "$defs" if "$defs" in whole else "definitions"
    schema = {**whole, "$ref": f"#/{defs}/{definition}"}
    return jsonschema.validators.validator_for(whole)(schema)


def _examples(kind: str) -> list[Any]:
    files = sorted((EXAMPLES / kind).glob("*.json"))
    # Loud at collection: a missing fixture must not shrink the parametrization to nothing.
    assert files, f"no spec examples for {kind} under {EXAMPLES}"
    return [json.loads(p.read_text()) for p in files]


def _cases() -> list[tuple[str, int]]:
    return [(kind, n) for kind in RESULTS for n in range(len(_examples(kind)))]


@pytest.mark.parametrize("version", LEGACY_PROTOCOL_VERSIONS)
@pytest.mark.parametrize(("kind", "index"), _cases())
def test_spec_results_reach_legacy_clients_valid_for_their_revision(
        kind: str, index: int, version: str) -> None:
    example = _examples(kind)[index]
    method, params = RESULTS[kind]
    h, _ = mode_a(version, caps={"sampling": {}})
    forwarded = one(h.client({"jsonrpc": "2.0", "id": 1, "method": method,
                              **({"params": params} if params else {})}), "server")
    reply = one(h.server(answer(forwarded, example)), "client")
    result = reply["result"]
    _schema(version, kind).validate(result)
    assert [k for k in MODERN_ONLY if k in json.dumps(result)] == []


@pytest.mark.parametrize("version", LEGACY_PROTOCOL_VERSIONS)
def test_the_spec_discover_example_makes_a_valid_initialize_result(version: str) -> None:
    (discover,) = _examples("DiscoverResult")
    _, result = mode_a(version, discover=discover)
    _schema(version, "InitializeResult").validate(result)
    assert result["serverInfo"] == {"name": "ExampleServer", "version": "1.0.0"}
    assert result["instructions"] == discover["instructions"]


def test_the_harness_discover_result_is_a_valid_modern_discover_result() -> None:
    _schema("2026-07-28", "DiscoverResult").validate(DISCOVER_RESULT)


def test_mode_b_discover_answer_is_a_valid_modern_discover_result() -> None:
    _h, actions = mode_b()
    reply = one(actions, "client")
    _schema("2026-07-28", "DiscoverResult").validate(reply["result"])


@pytest.mark.parametrize(("method", "legacy_result", "kind"), [
    ("tools/list", {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
     "ListToolsResult"),
    ("resources/read", {"contents": [{"uri": "file:///a", "text": "x"}]}, "ReadResourceResult"),
    ("tools/call", {"content": [{"type": "text", "text": "hi"}]}, "CallToolResult"),
    ("prompts/list", {"prompts": []}, "ListPromptsResult"),
])
def test_mode_b_results_are_valid_modern_results(method: str, legacy_result: dict[str, Any],
                                                 kind: str) -> None:
    h, _ = mode_b()
    params = {"uri": "file:///a"} if method == "resources/read" else (
        {"name": "t"} if method == "tools/call" else None)
    forwarded = next(m for m in sent(h.client(modern(9, method, params)), "server")
                 if m.get("method") == method)
    reply = one(h.server(answer(forwarded, legacy_result)), "client")
    _schema("2026-07-28", kind).validate(reply["result"])
