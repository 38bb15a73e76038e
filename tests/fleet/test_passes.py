"""A forwarded request's pass: signed by a node of the fleet, for that request, lately."""

from __future__ import annotations

import pytest

from bridge.fleet import passes
from bridge.fleet.keys import derive
from bridge.fleet.passes import Bound, Forwarded

KEY = derive(b"k" * 32).passes
NOW = 1_800_000_000.0
POST = Bound("POST", "/mcp", "sid", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')


def test_a_pass_says_who_forwarded_it_and_for_which_credential() -> None:
    value = passes.issue(KEY, "node-a", NOW, "c0ffee", POST)
    assert passes.check(KEY, value, NOW + 1, POST) == Forwarded("node-a", "c0ffee")


def test_without_tokens_a_pass_carries_no_credential() -> None:
    value = passes.issue(KEY, "node-a", NOW, None, POST)
    assert passes.check(KEY, value, NOW, POST) == Forwarded("node-a", None)


@pytest.mark.parametrize("other", [
    Bound("DELETE", "/mcp", "sid", POST.body),
    Bound("POST", "/other", "sid", POST.body),
    Bound("POST", "/mcp", "sid2", POST.body),
    Bound("POST", "/mcp", "sid", b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}'),
])
def test_a_pass_carries_no_other_request(other: Bound) -> None:
    value = passes.issue(KEY, "node-a", NOW, "c0ffee", POST)
    assert "not signed with this node's fleet key" in str(passes.check(KEY, value, NOW, other))


def test_another_key_or_a_changed_credential_is_refused() -> None:
    value = passes.issue(derive(b"o" * 32).passes, "node-a", NOW, "c0ffee", POST)
    assert "fleet_key_file" in str(passes.check(KEY, value, NOW, POST))
    name, stamp, _, tag = passes.issue(KEY, "node-a", NOW, "c0ffee", POST).split(".")
    assert isinstance(passes.check(KEY, f"{name}.{stamp}.-.{tag}", NOW, POST), str)


@pytest.mark.parametrize("age", [passes.FRESH_S + 1, -passes.FRESH_S - 1])
def test_a_stale_pass_is_refused_naming_the_clocks(age: int) -> None:
    value = passes.issue(KEY, "node-a", NOW, None, POST)
    problem = passes.check(KEY, value, NOW + age, POST)
    assert isinstance(problem, str) and "clocks" in problem and "node-a" in problem
    assert passes.check(KEY, value, NOW + passes.FRESH_S, POST) == Forwarded("node-a", None)


@pytest.mark.parametrize("value", ["", "a.b.c", "a.b.c.d.e", "!!.1.-.x", "bm9kZQ.soon.-.x",
                                   "é.1.-.x"])
def test_a_malformed_pass_is_refused(value: str) -> None:
    assert passes.check(KEY, value, NOW, POST) == "the fleet pass is malformed"
