"""Mode B roots: what a legacy server that asks outside calls is told, and when.

Rules: client/roots.mdx (both eras); TRANSLATION.md §5.8.3, §5.8.5;
bridge/core/modern_server_legacy_client/roots.py.
Each call mints its key, then a nonce per input round, then its legacy request id; the tests
name minted ids with placeholders (`h.minted(...)`, tests/core/harness.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from tests.core.harness import (
    LEGACY_INIT_RESULT,
    OLD_SRV,
    SECRET,
    Harness,
    answer,
    fail,
    modern,
    no_requests_to,
    one,
    request,
    sent,
)
from tests.core.test_golden import _schema

Message = dict[str, Any]

ROOTS_CAPS = {"roots": {}}
ALL_INPUTS = {"elicitation": {}, "sampling": {}, "roots": {}}
WORK = [{"uri": "file:///work", "name": "work"}]
HOME = [{"uri": "file:///home/me"}]
CALL = {"name": "read", "arguments": {"path": "a.txt"}}
DONE = {"content": [{"type": "text", "text": "ok"}]}
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
EVERY_CALL = CoreConfig(roots_refresh=0)  # every call that declares roots asks for them


def started(first_caps: Message | None = None,
            config: CoreConfig | None = None) -> tuple[Harness, Message]:
    """Mode B up to the bridge's initialize of the legacy server, which it returns."""
    h = Harness(config)
    h.bridge.secret = SECRET
    probe = one(h.start(), "server")
    h.client(modern("d1", "server/discover", caps=ROOTS_CAPS if first_caps is None
                    else first_caps))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert init["method"] == "initialize"
    return h, init


def session(first_caps: Message | None = None, config: CoreConfig | None = None,
            told: Message | None = None) -> Harness:
    """A ready session whose legacy server asked roots/list as soon as it was initialized
    (as server-filesystem does), and got `told` (default: no roots)."""
    h, init = started(first_caps, config)
    h.server(answer(init, LEGACY_INIT_RESULT))
    asked = h.server(request("init-roots", "roots/list"))
    assert sent(asked, "client") == []
    assert one(asked, "server") == {"jsonrpc": "2.0", "id": "init-roots",
                                    "result": told or {"roots": []}}
    discovered = h.server(answer(h.sent_request("ping"), {}))
    assert one(discovered, "client")["id"] == "d1"
    return h


def call(id: Any, caps: Message | None = None, **extra: Any) -> Message:
    return modern(id, "tools/call", {**CALL, **extra}, caps=ROOTS_CAPS if caps is None else caps)


def roots_round(h: Harness, first: Message) -> str:
    """The bridge's own roots round on `first`: nothing to the server; its requestState."""
    actions = h.client(first)
    assert sent(actions, "server") == []
    reply = one(actions, "client")
    assert reply["id"] == first["id"]
    assert reply["result"]["resultType"] == "input_required"
    assert reply["result"]["inputRequests"] == {"q1": {"method": "roots/list"}}
    state: str = reply["result"]["requestState"]
    return state


def retry(id: Any, state: str, roots: Any, caps: Message | None = None) -> Message:
    return call(id, caps, inputResponses={"q1": {"roots": roots}}, requestState=state)


def forwarded(actions: list[Any]) -> Message:
    legacy: Message = one(actions, "server")
    assert legacy["method"] == "tools/call" and legacy["params"] == CALL, legacy
    return legacy


# What the legacy server is promised -------------------------------------------------------


def test_list_changed_is_declared_when_the_client_declares_roots() -> None:
    _, init = started(ROOTS_CAPS)
    assert init["params"]["capabilities"]["roots"] == {"listChanged": True}
    _, init = started({"sampling": {}})
    assert init["params"]["capabilities"]["roots"] == {}


# Answers the bridge gives itself ----------------------------------------------------------


def test_configured_roots_answer_questions_until_the_clients_are_known() -> None:
    config = CoreConfig(roots=("file:///srv/data",))
    h = session(config=config, told={"roots": [{"uri": "file:///srv/data"}]})
    state = roots_round(h, call(1))
    actions = h.client(retry(2, state, WORK))
    assert sent(actions, "server") == [LIST_CHANGED]
    assert sent(h.server(request(7, "roots/list")), "server")[0] == {
        "jsonrpc": "2.0", "id": 7, "result": {"roots": WORK}}


# Learning the client's roots at the first chance ------------------------------------------


def test_a_server_that_asked_at_start_is_told_the_clients_roots_before_the_call() -> None:
    h = session()
    state = roots_round(h, call(1))
    actions = h.client(retry(2, state, WORK))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [LIST_CHANGED]  # the call waits for the server
    actions = h.server(request(8, "roots/list"))  # it asks again, as told
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": 8, "result": {"roots": WORK}},
        {"jsonrpc": "2.0", "id": h.minted("check"), "method": "ping"}]
    assert sent(h.server(answer({"id": h.minted("check")}, {})), "server") == []  # it has read them
    assert sent(h.advance(0.099), "server") == []  # and roots_settle lets it apply them
    legacy = forwarded(h.advance(0.001))
    assert one(h.server(answer(legacy, DONE)), "client") == {
        "jsonrpc": "2.0", "id": 2, "result": {**DONE, "resultType": "complete", "_meta": OLD_SRV}}


def test_a_call_that_does_not_declare_roots_is_not_asked_for_them() -> None:
    h = session()
    actions = h.client(call(1, caps={"sampling": {}}))
    no_requests_to(actions)
    assert sent(actions, "client") == []
    forwarded(actions)
    h = session()
    forwarded(h.client(call(1, caps={})))


def test_a_server_that_never_asked_outside_a_call_is_never_asked_for_by_the_bridge() -> None:
    h, init = started()
    h.server(answer(init, LEGACY_INIT_RESULT))
    h.server(answer(h.sent_request("ping"), {}))
    legacy = forwarded(h.client(call(1)))
    h.server(answer(legacy, DONE))
    forwarded(h.client(call(2)))


def test_roots_a_server_asked_for_during_a_call_are_known_and_not_told_again() -> None:
    h, init = started(config=EVERY_CALL)
    h.server(answer(init, LEGACY_INIT_RESULT))
    h.server(answer(h.sent_request("ping"), {}))
    legacy = forwarded(h.client(call(1)))
    h.server(request(5, "roots/list"))
    reply = one(h.advance(0.05), "client")
    actions = h.client(retry(2, reply["result"]["requestState"], WORK))
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 5, "result": {"roots": WORK}}]
    h.server(answer(legacy, DONE))
    # Asked later outside a call, it gets the same: nothing changed, nothing to tell.
    assert one(h.server(request(6, "roots/list")), "server")["result"] == {"roots": WORK}
    state = roots_round(h, call(3))  # from now on it relies on being told
    assert sent(h.client(retry(4, state, WORK)), "server")[0]["method"] == "tools/call"


def test_a_retry_without_the_roots_answer_goes_ahead_without_them() -> None:
    h = session()
    state = roots_round(h, call(1))
    legacy = forwarded(h.client(call(2, inputResponses={}, requestState=state)))
    h.server(answer(legacy, DONE))
    assert one(h.server(request(9, "roots/list")), "server")["result"] == {"roots": []}


# Telling the server when the roots change -------------------------------------------------


def caught_up(h: Harness, retried: list[Any], roots: Any) -> Message:
    """After a retry that changed the roots: the server asks again and the call goes out."""
    assert sent(retried, "server") == [LIST_CHANGED]
    again = sent(h.server(request("again", "roots/list")), "server")
    assert again[0] == {"jsonrpc": "2.0", "id": "again", "result": {"roots": roots}}
    assert again[1]["method"] == "ping"
    assert sent(h.server(answer(again[1], {})), "server") == []
    return forwarded(h.advance(0.1))


def test_with_no_refresh_time_every_call_asks_and_the_server_hears_only_changes() -> None:
    h = session(config=EVERY_CALL)
    legacy = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    h.server(answer(legacy, DONE))
    # The same roots: the call goes straight on.
    legacy = forwarded(h.client(retry(4, roots_round(h, call(3)), WORK)))
    h.server(answer(legacy, DONE))
    # The client's roots changed between calls: the server is told and asks again.
    legacy = caught_up(h, h.client(retry(6, roots_round(h, call(5)), HOME)), HOME)
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 6


def test_by_default_the_clients_roots_are_trusted_for_a_minute() -> None:
    h = session()
    legacy = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    h.server(answer(legacy, DONE))
    h.advance(58.9)
    legacy = forwarded(h.client(call(3)))
    h.server(answer(legacy, DONE))
    h.advance(1)
    roots_round(h, call(4))


def test_roots_refresh_sets_how_long_they_are_trusted() -> None:
    h = session(config=CoreConfig(roots_refresh=5.0))
    legacy = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    h.server(answer(legacy, DONE))
    h.advance(4.5)  # learned at 0, caught up at 0.1: now 4.6
    h.server(answer(forwarded(h.client(call(3))), DONE))
    h.advance(0.5)
    roots_round(h, call(4))


def test_a_client_that_says_its_roots_changed_is_asked_at_the_next_call() -> None:
    # 2026-07-28 removed notifications/roots/list_changed, but a client that still sends it
    # gives the one sign of change a modern client can: the next call asks.
    h = session()
    legacy = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    h.server(answer(legacy, DONE))
    actions = h.client(LIST_CHANGED)
    assert sent(actions, "server") == [] and [log.event for log in actions] == ["roots.stale"]
    legacy = caught_up(h, h.client(retry(4, roots_round(h, call(3)), HOME)), HOME)
    h.server(answer(legacy, DONE))
    h.server(answer(forwarded(h.client(call(5))), DONE))  # fresh again: no round


# Questions during calls that did not declare roots ----------------------------------------


def known_roots(config: CoreConfig | None = None) -> Harness:
    """A session whose client gave WORK in a roots round, the call done."""
    h = session(config=config)
    legacy = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    h.server(answer(legacy, DONE))
    return h


@pytest.mark.parametrize("caps", [{}, {"sampling": {}}], ids=["shared", "exclusive"])
def test_a_call_that_declares_no_roots_gets_the_known_roots_for_the_servers_question(
        caps: Message) -> None:
    h = known_roots()
    legacy = forwarded(h.client(call(3, caps=caps)))
    actions = h.server(request(11, "roots/list"))
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 11, "result": {"roots": WORK}}]
    _schema("2025-11-25", "ListRootsResult").validate(sent(actions, "server")[0]["result"])
    assert sent(actions + h.advance(1), "client") == []  # nobody is asked
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 3


def test_configured_roots_answer_the_question_of_a_call_that_declares_none() -> None:
    h = session(config=CoreConfig(roots=("file:///srv/data",)),
                told={"roots": [{"uri": "file:///srv/data"}]})
    forwarded(h.client(call(1, caps={})))
    assert sent(h.server(request(12, "roots/list")), "server") == [
        {"jsonrpc": "2.0", "id": 12, "result": {"roots": [{"uri": "file:///srv/data"}]}}]


@pytest.mark.parametrize("caps", [{}, {"sampling": {}}], ids=["shared", "exclusive"])
def test_with_no_roots_known_a_call_that_declares_none_fails_with_32021(caps: Message) -> None:
    """§5.8.3: nobody can answer for the client, so the question is refused, and the call
    that asked needs roots it did not declare."""
    h = session()
    legacy = forwarded(h.client(call(1, caps=caps)))
    actions = h.server(request(13, "roots/list"))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "the request did not declare roots"}},
        {"jsonrpc": "2.0", "id": 13, "error": {
            "code": -32601, "message": "Method not found: the request did not declare roots"}}]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "The server requires the roots capability for this request",
        "data": {"requiredCapabilities": {"roots": {}}}}}
    assert sent(h.server(answer(legacy, DONE)), "client") == []


def test_with_no_roots_known_and_two_shared_calls_the_question_is_only_refused() -> None:
    h = session()
    first = forwarded(h.client(call(1, caps={})))
    forwarded(h.client(call(2, caps={})))
    actions = h.server(request(13, "roots/list"))
    assert sent(actions, "client") == []
    assert one(actions, "server")["error"]["code"] == -32601
    assert one(h.server(answer(first, DONE)), "client")["id"] == 1


def test_without_list_changed_the_bridge_asks_only_while_it_knows_nothing() -> None:
    h = session(first_caps={"sampling": {}})
    actions = h.client(retry(2, roots_round(h, call(1)), WORK))
    legacy = forwarded(actions)  # no list_changed: the server was not promised any
    h.server(answer(legacy, DONE))
    assert one(h.server(request(9, "roots/list")), "server")["result"] == {"roots": WORK}
    forwarded(h.client(call(3)))


def test_calls_wait_while_the_server_catches_up_but_other_requests_do_not() -> None:
    h = session()
    h.client(retry(2, roots_round(h, call(1)), WORK))
    assert sent(h.client(call(3, caps={}, arguments={})), "server") == []
    listed = one(h.client(modern(4, "tools/list")), "server")
    assert listed["method"] == "tools/list"
    # The server asks again while nothing that may ask runs: answered here, then the calls go
    # in order (the one that may ask first, alone).
    again = sent(h.server(request("again", "roots/list")), "server")
    assert again[0]["result"] == {"roots": WORK}
    h.server(answer(again[1], {}))
    legacy = forwarded(h.advance(0.1))
    assert one(h.server(answer(legacy, DONE)), "server")["params"] == {"name": "read",
                                                                      "arguments": {}}


def test_asked_again_during_another_call_the_server_gets_the_new_roots_from_the_bridge() -> None:
    h = session(config=EVERY_CALL)
    first = caught_up(h, h.client(retry(2, roots_round(h, call(1)), WORK)), WORK)
    # While that call runs, the next one's roots round finds the roots changed.
    actions = h.client(retry(4, roots_round(h, call(3)), HOME))
    assert sent(actions, "server") == [LIST_CHANGED]
    again = sent(h.server(request("again", "roots/list")), "server")
    assert again[0] == {"jsonrpc": "2.0", "id": "again", "result": {"roots": HOME}}
    assert sent(h.advance(1), "client") == []  # not a question of the running call
    h.server(answer(again[1], {}))
    assert sent(h.advance(1), "server") == []  # that call still runs
    actions = h.server(answer(first, DONE))
    assert one(actions, "client")["id"] == 2
    forwarded(actions)


def test_with_no_settle_time_the_calls_go_once_the_ping_is_answered() -> None:
    h = session(config=CoreConfig(roots_settle=0))
    h.client(retry(2, roots_round(h, call(1)), WORK))
    again = sent(h.server(request("again", "roots/list")), "server")
    forwarded(h.server(answer(again[1], {})))


def test_a_server_that_does_not_ask_again_holds_calls_back_only_roots_wait() -> None:
    h = session(config=CoreConfig(roots_wait=2.0))
    h.client(retry(2, roots_round(h, call(1)), WORK))
    assert sent(h.advance(1.9), "server") == []
    forwarded(h.advance(0.1))
    assert [(log.event, log.fields["stage"]) for log in h.logs if log.level == "warning"] == [
        ("roots.not_caught_up", "reask")]
    # Asked late, during the call that just gave its roots: answered with them.
    assert sent(h.server(request(5, "roots/list")), "server") == [
        {"jsonrpc": "2.0", "id": 5, "result": {"roots": WORK}}]
    assert sent(h.advance(1), "client") == []


def test_a_server_that_asks_during_each_call_is_not_asked_twice_per_call() -> None:
    h, init = started(config=EVERY_CALL)
    h.server(answer(init, LEGACY_INIT_RESULT))
    h.server(answer(h.sent_request("ping"), {}))
    legacy = forwarded(h.client(call(1)))
    h.server(request(5, "roots/list"))  # the first time, the server's question is a round
    reply = one(h.advance(0.05), "client")
    h.client(retry(2, reply["result"]["requestState"], WORK))
    h.server(answer(legacy, DONE))
    # Next call: the bridge asks first (the server may keep what it got), and the server's
    # own question during the call gets what the client just said.
    legacy = forwarded(h.client(retry(4, roots_round(h, call(3)), WORK)))
    assert sent(h.server(request(6, "roots/list")), "server") == [
        {"jsonrpc": "2.0", "id": 6, "result": {"roots": WORK}}]
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 4


def test_the_roots_round_is_a_round_like_any_other() -> None:
    h = session()
    state = roots_round(h, call(1, caps=ALL_INPUTS))
    # a request state is single use and bound to the call
    other = modern(2, "tools/call", {"name": "other", "inputResponses": {},
                                     "requestState": state}, caps=ROOTS_CAPS)
    assert one(h.client(other), "client")["error"]["code"] == -32602
    # a cancelled round ends the call: nothing ever reaches the server
    actions = h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 1}})
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert one(h.client(retry(3, state, WORK)), "client")["error"]["code"] == -32602
