"""A change a tenant's server raised, in the envelope and under the pass one node sends the
others: only changes a listen stream may ask for, for one tenant, from the fleet."""

from __future__ import annotations

import json

import pytest

from bridge.fleet import changes, passes
from bridge.fleet.keys import derive
from bridge.fleet.passes import Forwarded

KEYS = derive(b"k" * 32)
NOW = 1_800_000_000.0
TOOLS = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
UPDATED = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
           "params": {"uri": "file:///a", "_meta": {"k": "é"}}}


@pytest.mark.parametrize("message", [TOOLS, UPDATED])
def test_a_change_travels_as_its_method_and_params(message: dict[str, object]) -> None:
    body = changes.envelope(message)
    assert body is not None
    assert json.loads(body) == {k: v for k, v in message.items() if k != "jsonrpc"}
    assert changes.opened(body) == message


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}},
    {"jsonrpc": "2.0", "method": "notifications/progress"},
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "method": "notifications/resources/updated",
     "params": {"uri": "x" * changes.MAX_BYTES}},
])
def test_what_is_no_change_or_too_large_is_not_sent(message: dict[str, object]) -> None:
    assert changes.envelope(message) is None


@pytest.mark.parametrize(("body", "problem"), [
    (b"{", "one JSON object"),
    (b"\xff", "one JSON object"),
    (b"[]", "names one of"),
    (b'{"method":"tools/call"}', "names one of"),
    (b'{"method":"notifications/tools/list_changed","params":[1]}', "params are an object"),
    (b'{"method":"notifications/resources/updated"}', "names its uri"),
    (b'{"method":"notifications/resources/updated","params":{"uri":3}}', "names its uri"),
    (b" " * (changes.MAX_BYTES + 1), "at most"),
])
def test_an_envelope_that_carries_no_change_is_refused_saying_why(body: bytes,
                                                                  problem: str) -> None:
    refused = changes.opened(body)
    assert isinstance(refused, str) and problem in refused


def test_a_change_s_pass_names_its_node_and_tenant_and_binds_its_body() -> None:
    body = changes.envelope(TOOLS)
    assert body is not None
    value = changes.issue(KEYS.changes, "node-a", NOW, "c0ffee", body)
    assert changes.check(KEYS.changes, value, NOW + 1, body) == Forwarded("node-a", "c0ffee")
    shared = changes.issue(KEYS.changes, "node-a", NOW, None, body)
    assert changes.check(KEYS.changes, shared, NOW, body) == Forwarded("node-a", None)
    other = changes.envelope(UPDATED)
    assert other is not None
    assert "not signed" in str(changes.check(KEYS.changes, value, NOW, other))
    assert "clocks" in str(changes.check(KEYS.changes, value, NOW + passes.FRESH_S + 1, body))


def test_a_change_s_pass_and_a_forwarded_request_s_are_not_interchangeable() -> None:
    """Each is signed with a key of its own: neither can be taken for the other."""
    body = changes.envelope(TOOLS)
    assert body is not None
    bound = passes.Bound("POST", changes.PATH, "", body)
    forwarded = passes.issue(KEYS.passes, "node-a", NOW, "c0ffee", bound)
    assert isinstance(changes.check(KEYS.changes, forwarded, NOW, body), str)
    change = changes.issue(KEYS.changes, "node-a", NOW, "c0ffee", body)
    assert isinstance(passes.check(KEYS.passes, change, NOW, bound), str)
    assert len({KEYS.ids, KEYS.passes, KEYS.credentials, KEYS.changes}) == 4
