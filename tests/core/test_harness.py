"""The harness's placeholders for bridge-minted ids (tests/core/harness.py, `Placeholder`)."""

from __future__ import annotations

import pytest

from bridge.core.events import Send
from tests.core.harness import (
    ClientRequests,
    Harness,
    UnboundPlaceholder,
    answer,
    fail,
    mode_b,
    modern,
    one,
)


def test_a_placeholder_binds_to_the_first_minted_id_it_meets_and_then_equals_only_that() -> None:
    h, _ = mode_b()
    listed = one(h.client(modern(1, "tools/list")), "server")
    prompts = one(h.client(modern(2, "prompts/list")), "server")
    call = h.minted("list")
    assert call.value is None
    assert listed["id"] == call
    assert call() == listed["id"]
    assert prompts["id"] != call  # bound: another minted id is not it
    assert call == listed["id"]
    assert h.minted("list") is call  # one placeholder per name and harness


def test_two_placeholders_never_bind_the_same_id() -> None:
    h, _ = mode_b()
    listed = one(h.client(modern(1, "tools/list")), "server")
    assert listed["id"] == h.minted("list")
    assert listed["id"] != h.minted("other")
    assert h.minted("other").value is None
    assert h.minted("ping") != h.minted("list")


def test_a_placeholder_binds_only_to_an_id_this_bridge_minted() -> None:
    h, _ = mode_b()
    unbound = h.minted("unbound")
    # the bridge's shape, but not minted (yet), or not the bridge's shape at all
    for value in ("rosetta-77", "rosetta-0", "rosetta-04", "rosetta-", "x-rosetta-4", 4, None,
                  ["rosetta-4"]):
        assert value != unbound
    assert unbound.value is None


def test_a_placeholder_is_resolved_in_what_the_test_sends() -> None:
    h, _ = mode_b()
    listed = one(h.client(modern(1, "tools/list")), "server")
    assert listed["id"] == h.minted("list")
    reply = one(h.server(answer({"id": h.minted("list")}, {"tools": []})), "client")
    assert reply["id"] == 1


def test_sending_an_unbound_placeholder_is_a_test_error_that_names_it() -> None:
    h, _ = mode_b()
    one(h.client(modern(1, "tools/list")), "server")
    with pytest.raises(UnboundPlaceholder, match="placeholder 'list' is used before it was bound"):
        h.server(answer({"id": h.minted("list")}, {"tools": []}))
    with pytest.raises(UnboundPlaceholder, match="'list'"):
        h.minted("list")()


def test_a_placeholder_shows_its_name_and_bound_id_in_an_assertion_diff() -> None:
    h, _ = mode_b()
    listed = one(h.client(modern(1, "tools/list")), "server")
    assert repr(h.minted("list")) == "<minted list>"
    assert listed["id"] == h.minted("list")
    assert repr(h.minted("list")) == f"<minted list={listed['id']!r}>"
    with pytest.raises(AssertionError) as failed:
        wrong = {"id": "rosetta-12345"}
        assert wrong == {"id": h.minted("list")}
    assert f"<minted list={listed['id']!r}>" in str(failed.value)


def test_the_harness_catches_a_bridge_that_gives_two_requests_one_id() -> None:
    # A mint that repeats itself stands for a bridge that reuses an id while it is in flight
    # (or routes one exchange's message under another's id): the placeholder of the second
    # request cannot take the id the first one holds.
    h = Harness(mint_id=lambda: "rosetta-1")
    probe = one(h.start(), "server")
    assert probe["id"] == h.minted("probe")
    h.client(modern("d1", "server/discover"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    with pytest.raises(AssertionError):
        assert init == {**init, "id": h.minted("initialize")}
    assert h.minted("initialize").value is None


def test_the_harness_catches_a_message_under_a_wrong_minted_id() -> None:
    h, _ = mode_b()
    listed = one(h.client(modern(1, "tools/list", meta={"progressToken": 7})), "server")
    assert listed["params"]["_meta"]["progressToken"] == h.minted("token")
    assert listed["id"] == h.minted("list")
    # the forward as it would read had the bridge sent it under its progress token's id
    wrong = {**listed, "id": h.minted("token")()}
    with pytest.raises(AssertionError):
        assert wrong == {**listed, "id": h.minted("list")}


def _send(message: dict[str, object], request: object = None) -> Send:
    return Send("client", message, None, request)


def test_the_harness_holds_every_message_to_the_client_to_the_request_it_names() -> None:
    requests = ClientRequests()
    requests.received(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}')
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    requests.check(_send(progress, 7))
    requests.check(_send(progress))  # belonging to none is always a possible answer
    with pytest.raises(AssertionError, match="not have in flight"):
        requests.check(_send(progress, "7"))  # the id's JSON type is part of it
    with pytest.raises(AssertionError, match="names request 8"):
        requests.check(_send({"jsonrpc": "2.0", "id": 7, "result": {}}, 8))
    requests.check(_send({"jsonrpc": "2.0", "id": 7, "result": {}}, 7))
    with pytest.raises(AssertionError, match="not have in flight"):
        requests.check(_send(progress, 7))  # answered: nothing may name it any more
