"""Transcripts of the server supervised: a crash costs the requests in flight, never the session.

The lifecycle in any mode: the one error each request in flight gets, the back-off and the
budget, the give-up, what the client says while the server restarts, and the probe of the
new server. What each mode re-opens at the new server is in test_resume.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.events import Action, RestartChild, Status, Stop
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    legacy_pair,
    mode_a,
    mode_b,
    modern,
    modern_meta,
    modern_pair,
    one,
    request,
    restarted,
    sent,
)

Message = dict[str, Any]


def restarts(actions: list[Action]) -> int:
    return sum(isinstance(a, RestartChild) for a in actions)


def stops(actions: list[Action]) -> list[int]:
    return [a.code for a in actions if isinstance(a, Stop)]


def logged(h: Harness, event: str) -> list[dict[str, Any]]:
    return [log.fields for log in h.logs if log.event == event]


def statuses(actions: list[Action]) -> list[str]:
    return [a.text for a in actions if isinstance(a, Status)]


def serving_a(config: CoreConfig | None = None) -> Harness:
    """Mode A after initialize: a modern server, no listen stream (nothing to re-open)."""
    return mode_a(config=config)[0]


def answer_probe(h: Harness, probe: Message | None) -> None:
    """The new server is modern."""
    assert probe is not None
    h.server(answer(probe, DISCOVER_RESULT))


# The requests in flight ---------------------------------------------------------------------


def test_each_request_in_flight_gets_one_error_naming_the_exit_status() -> None:
    h = serving_a()
    for n in range(3):
        h.client(request(n, "tools/call", {"name": "slow"}))
    actions = h.exit_child(3)
    assert sorted(sent(actions, "client"), key=lambda r: r["id"]) == [
        {"jsonrpc": "2.0", "id": n, "error": {
            "code": -32603,
            "message": "mcp-rosetta: the server exited with status 3 and is being restarted; "
                       "the request was lost with it",
            "data": {"source": "mcp-rosetta", "exitStatus": 3, "method": "tools/call"}}}
        for n in range(3)]
    assert restarts(actions) == 0 and stops(actions) == []  # the back-off comes first


@pytest.mark.parametrize(("code", "what"), [(-9, "was killed by signal 9"),
                                            (0, "exited with status 0")])
def test_the_error_says_how_the_server_went(code: int, what: str) -> None:
    h = serving_a()
    h.client(request(1, "tools/list"))
    error = one(h.exit_child(code), "client")["error"]
    assert error["message"].startswith(f"mcp-rosetta: the server {what} and is being restarted")
    assert error["data"]["exitStatus"] == code


def test_a_closed_output_waits_for_the_exit_status_the_error_then_names() -> None:
    h = serving_a(CoreConfig(max_restarts=1))
    h.client(request(1, "tools/list"))
    assert sent(h.close("server"), "client") == []  # the exit usually follows at once
    error = one(h.exit_child(1), "client")["error"]
    assert error["message"].startswith("mcp-rosetta: the server exited with status 1 and is being")
    assert error["data"] == {"source": "mcp-rosetta", "exitStatus": 1, "method": "tools/list"}
    restarted(h)
    assert logged(h, "child.restarted") == [{
        "code": 1, "reason": "exited with status 1", "attempt": 1, "max_restarts": 1,
        "backoff_s": 0.5, "mode": "A"}]


def test_a_closed_output_with_no_exit_is_a_crash_after_a_second() -> None:
    h = serving_a(CoreConfig(max_restarts=1))
    h.client(request(1, "tools/list"))
    h.close("server")
    assert sent(h.advance(0.99), "client") == []
    error = one(h.advance(0.01), "client")["error"]
    assert error["message"].startswith("mcp-rosetta: the server closed its output and is being")
    assert error["data"] == {"source": "mcp-rosetta", "exitStatus": None, "method": "tools/list"}
    later = h.exit_child(1)  # the same crash's other word: no second restart, no give-up
    assert restarts(later) == 0 and stops(later) == [] and sent(later, "client") == []
    restarted(h)
    assert [f["code"] for f in logged(h, "child.restarted")] == [1]


def test_an_exit_then_a_closed_output_is_one_crash() -> None:
    h = serving_a(CoreConfig(max_restarts=1))
    h.exit_child(1)
    assert stops(h.close("server")) == []
    assert restarted(h) is not None


# Back-off, budget, give-up ------------------------------------------------------------------


def test_the_back_off_doubles_up_to_its_largest() -> None:
    h = Harness(CoreConfig(restart_backoff=(1.0, 4.0), max_restarts=9, restart_window=1e6))
    answer_probe(h, one(h.start(), "server"))
    waited = []
    for _ in range(5):
        h.exit_child(1)
        deadline = h.bridge.next_deadline()
        assert deadline is not None
        waited.append(deadline - h.now)
        assert restarts(h.advance(deadline - h.now - 0.01)) == 0
        assert restarts(h.advance(0.01)) == 1
        answer_probe(h, one(h.start(), "server"))
    assert waited == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert [f["backoff_s"] for f in logged(h, "child.restarted")] == waited
    assert [f["attempt"] for f in logged(h, "child.restarted")] == [1, 2, 3, 4, 5]


def test_restarts_older_than_the_window_no_longer_count() -> None:
    h = Harness(CoreConfig(restart_backoff=(1.0, 1.0), max_restarts=2, restart_window=30))
    answer_probe(h, one(h.start(), "server"))
    for _ in range(2):
        h.exit_child(1)
        answer_probe(h, restarted(h))
    h.now += 30  # both restarts are now out of the window
    h.exit_child(1)
    answer_probe(h, restarted(h))
    assert [f["attempt"] for f in logged(h, "child.restarted")] == [1, 2, 1]
    actions = h.exit_child(1)
    assert restarts(actions) == 0 and stops(actions) == []  # the second in this window


def test_past_the_budget_the_session_ends_with_69_and_one_clear_line() -> None:
    h = serving_a(CoreConfig(max_restarts=2, restart_window=60))
    for _ in range(2):
        h.exit_child(1)
        answer_probe(h, restarted(h))
    h.client(request("late", "tools/list"))
    actions = h.exit_child(1)
    assert stops(actions) == [69] and restarts(actions) == 0
    reason = ("mcp-rosetta: the server exited with status 1 after 2 restarts within 60 s; "
              "mcp-rosetta gives up")
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": "late", "error": {
        "code": -32603, "message": reason, "data": {"source": "mcp-rosetta", "exitStatus": 1,
                                                    "method": "tools/list"}}}
    assert logged(h, "child.gave_up") == [{"code": 1, "reason": "exited with status 1",
                                            "max_restarts": 2, "window_s": 60.0}]
    assert [log.level for log in h.logs if log.event == "child.gave_up"] == ["error"]
    assert statuses(actions) == ["stopped: the server exited with status 1 and has used up "
                                 "its 2 restarts"]


def test_each_restart_says_so_to_the_service_manager() -> None:
    h = serving_a()
    h.exit_child(2)
    deadline = h.bridge.next_deadline()
    assert deadline is not None
    actions = h.advance(deadline - h.now)
    assert statuses(actions) == ["restarting the server: it exited with status 2 (restart 1 of "
                                 "at most 5 within 60 s)"]
    started = h.start()
    assert statuses(started) == []  # probing
    actions = h.server(answer(one(started, "server"), DISCOVER_RESULT))
    assert statuses(actions) == ["serving; the server restarted 1 time"]


def test_a_restart_that_cannot_start_the_server_counts_as_a_failed_start() -> None:
    h = serving_a(CoreConfig(max_restarts=2, restart_backoff=(1.0, 8.0)))
    h.exit_child(1)
    assert restarts(h.advance(1.0)) == 1
    actions = h.exit_child(127)  # the shell could not exec it: no ChildStarted came
    assert restarts(actions) == 0 and stops(actions) == []
    assert restarts(h.advance(2.0)) == 1  # the second restart of the window: twice as late
    assert stops(h.exit_child(127)) == [69]


def test_with_restarts_off_an_exit_ends_the_session_at_once() -> None:
    h = serving_a(CoreConfig(max_restarts=0))
    h.client(request(1, "tools/list"))
    actions = h.exit_child(1)
    assert stops(actions) == [69]
    assert one(actions, "client")["error"]["message"] == (
        "mcp-rosetta: the server exited with status 1 (restarts are off: max_restarts = 0)")


def test_an_exit_while_the_bridge_stops_is_not_restarted() -> None:
    h = serving_a()
    h.client(request(1, "tools/list"))
    h.close("client")  # draining: the answer is still owed
    actions = h.exit_child(1)
    assert stops(actions) == [69] and restarts(actions) == 0
    assert one(actions, "client")["error"]["message"] == (
        "mcp-rosetta: the server exited with status 1")


def test_a_server_lost_before_the_client_spoke_is_restarted_too() -> None:
    h = Harness()
    answer_probe(h, one(h.start(), "server"))
    assert sent(h.exit_child(1), "client") == []
    probe = restarted(h)
    assert probe is not None and probe["method"] == "server/discover"


# The new server is probed, like the first ---------------------------------------------------


def test_the_new_server_is_probed_and_may_be_of_the_other_era() -> None:
    h = modern_pair()
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None and probe["method"] == "server/discover"
    h.server(fail(probe, -32601, "Method not found"))
    assert h.bridge.mode == "B"
    assert [f["previous"] for f in logged(h, "mode.chosen")] == [None, "P"]


def test_a_new_server_that_exits_on_the_probe_is_restarted_at_once_as_legacy() -> None:
    h = modern_pair()
    h.exit_child(1)
    restarted(h)
    actions = h.exit_child(1)  # on the probe: no back-off, and no probe next time
    assert restarts(actions) == 1
    assert sent(h.start(), "server") == []
    assert h.bridge.mode == "B"
    assert [f["backoff_s"] for f in logged(h, "child.restarted")] == [0.5, 0.0]


# What the client says while the server restarts ------------------------------------------


def test_requests_during_the_restart_wait_and_go_to_the_new_server_in_order() -> None:
    h = serving_a()
    h.exit_child(1)
    for n in range(3):
        assert sent(h.client(request(n, "tools/call", {"name": f"t{n}"})), "client") == []
    probe = restarted(h)
    assert probe is not None
    forwarded = sent(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert [m["params"]["name"] for m in forwarded] == ["t0", "t1", "t2"]
    reply = one(h.server(answer(forwarded[1], {"resultType": "complete", "content": []})),
                "client")
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}


def test_a_waiting_request_is_bounded_by_request_timeout() -> None:
    h = serving_a(CoreConfig(request_timeout=2.0, restart_backoff=(5.0, 5.0)))
    h.exit_child(1)
    h.client(request("w", "tools/list"))
    assert sent(h.advance(1.9), "client") == []
    assert one(h.advance(0.1), "client") == {"jsonrpc": "2.0", "id": "w", "error": {
        "code": -32603, "message": "mcp-rosetta: no answer from the server within 2 s",
        "data": {"source": "mcp-rosetta", "method": "tools/list"}}}
    probe = restarted(h)
    assert probe is not None
    assert sent(h.server(answer(probe, DISCOVER_RESULT)), "server") == []  # nothing left


def test_cancelling_a_waiting_request_removes_it() -> None:
    h = serving_a()
    h.exit_child(1)
    h.client(request(1, "tools/call", {"name": "a"}))
    h.client(request(2, "tools/call", {"name": "b"}))
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert sent(h.client(cancel), "client") == []
    probe = restarted(h)
    assert probe is not None
    forwarded = sent(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert [m["params"]["name"] for m in forwarded] == ["b"]  # and no cancellation


def test_the_client_closing_during_the_restart_still_gets_what_it_is_owed() -> None:
    h = serving_a(CoreConfig(drain_timeout=30))
    h.exit_child(1)
    h.client(request(1, "tools/list"))
    assert stops(h.close("client")) == []
    probe = restarted(h)
    assert probe is not None
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    actions = h.server(answer(forwarded, {"resultType": "complete", "tools": []}))
    assert one(actions, "client")["result"] == {"tools": []}
    assert stops(actions) == [0]


def test_the_client_closing_with_nothing_owed_ends_the_session_during_the_restart() -> None:
    h = serving_a()
    h.exit_child(1)
    assert stops(h.close("client")) == [0]


def test_a_shutdown_during_the_restart_answers_the_waiting_requests() -> None:
    h = serving_a()
    h.exit_child(1)
    h.client(request(1, "tools/list"))
    actions = h.shutdown()
    assert stops(actions) == [0]
    assert one(actions, "client")["error"]["message"] == "mcp-rosetta is shutting down"


def test_mode_b_requests_waiting_for_the_handshake_wait_for_the_next_server() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern("d1", "tools/list"))
    initialize = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert initialize["method"] == "initialize"
    actions = h.exit_child(1)  # before it answered: tools/list never reached the server
    assert sent(actions, "client") == []
    probe = restarted(h)
    assert probe is not None
    initialize = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert initialize["method"] == "initialize"


def test_mode_b_parked_calls_end_and_their_request_state_resumes_nothing() -> None:
    h, _ = mode_b()
    call = one(h.client(modern(1, "tools/call", {"name": "login"}, caps={"elicitation": {}})),
               "server")
    h.server(request(42, "elicitation/create", {"message": "Name?",
                                                "requestedSchema": {"type": "object"}}))
    parked = one(h.advance(0.01), "client")["result"]
    assert parked["resultType"] == "input_required" and call["method"] == "tools/call"
    assert one(h.client(modern(3, "tools/list")), "server")["method"] == "tools/list"
    lost = one(h.exit_child(1), "client")  # the parked call has no request to answer
    assert lost["id"] == 3 and lost["error"]["data"] == {
        "source": "mcp-rosetta", "exitStatus": 1, "method": "tools/list"}
    probe = restarted(h)
    assert probe is not None
    h.client(modern(2, "tools/call", {"name": "login", "requestState": parked["requestState"],
                                      "inputResponses": {"q1": {"action": "accept"}}},
                    caps={"elicitation": {}}))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    _, ping = sent(h.server(answer(init, {**init["params"], "serverInfo": {
        "name": "OldSrv", "version": "1"}, "capabilities": {"tools": {}}})), "server")
    reply = one(h.server(answer(ping, {})), "client")
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"reason": "ended"}



# A server that never served is not restarted ---------------------------------------------

TRACEBACK = ("Traceback (most recent call last):", '  File "<string>", line 1, in <module>',
             "ModuleNotFoundError: No module named 'missing_module'")


def test_a_server_that_exits_before_answering_anything_fails_the_session_with_its_stderr() -> None:
    h = Harness()
    one(h.start(), "server")
    h.client(initialize())
    actions = h.exit_child(1, stderr_tail=TRACEBACK)
    message = ("mcp-rosetta: the server exited with status 1 before it answered anything; run "
               "the server command by hand to see why. Its stderr ended with: "
               "ModuleNotFoundError: No module named 'missing_module'")
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 0, "error": {
        "code": -32603, "message": message,
        "data": {"source": "mcp-rosetta", "exitStatus": 1, "stderrTail": list(TRACEBACK)}}}
    assert stops(actions) == [69] and restarts(actions) == 0
    [line] = [log for log in h.logs if log.event == "child.failed"]
    assert line.level == "error" and line.fields["reason"] == message
    assert logged(h, "child.restarted") == []
    assert statuses(actions) == [f"stopped: {message}"]


@pytest.mark.parametrize(("code", "cause"), [
    (127, "'mcp-srv' was not found on PATH=/usr/bin:/bin"),
    (126, "'/opt/srv' is not executable (chmod +x it)")])
def test_a_server_that_cannot_be_started_says_why_in_the_shells_words(code: int,
                                                                       cause: str) -> None:
    h = Harness()
    h.client(initialize())  # held: no ChildStarted ever comes
    actions = h.exit_child(code, cause=cause)
    error = one(actions, "client")["error"]
    assert error["message"] == f"mcp-rosetta: the server could not be started: {cause}"
    assert error["data"] == {"source": "mcp-rosetta", "exitStatus": code, "cause": cause}
    assert stops(actions) == [69] and restarts(actions) == 0


def test_the_stderr_an_error_carries_is_bounded() -> None:
    h = Harness()
    h.client(initialize())
    tail = tuple(f"line {n} " + "x" * 1000 for n in range(50))
    data = one(h.exit_child(1, stderr_tail=tail), "client")["error"]["data"]
    assert len(data["stderrTail"]) == 10 and data["stderrTail"][0].startswith("line 40 ")
    assert {len(line) for line in data["stderrTail"]} == {400}


def test_a_failed_start_before_the_client_spoke_answers_its_first_request_then_stops() -> None:
    h = Harness(CoreConfig(probe_timeout=3.0))
    one(h.start(), "server")
    actions = h.exit_child(2)
    assert stops(actions) == [] and sent(actions, "client") == []  # nobody to tell yet
    reply = one(h.client(request(1, "ping")), "client")  # no server: a ping gets it too
    assert reply["error"]["message"].startswith("mcp-rosetta: the server exited with status 2 "
                                                "before it answered anything")
    assert reply["error"]["data"]["exitStatus"] == 2
    assert stops(h.advance(0)) == [69]


def test_a_failed_start_with_a_silent_client_stops_after_the_probe_timeout() -> None:
    h = Harness(CoreConfig(probe_timeout=3.0))
    one(h.start(), "server")
    h.exit_child(2)
    assert stops(h.advance(2.9)) == []
    assert stops(h.advance(0.1)) == [69]


def test_a_failed_start_ends_at_once_when_the_client_closes() -> None:
    h = Harness()
    one(h.start(), "server")
    h.exit_child(2)
    assert stops(h.close("client")) == [69]


def test_a_server_started_again_after_exiting_0_on_the_probe_may_fail_too() -> None:
    h = Harness()
    one(h.start(), "server")
    h.client(initialize())
    assert restarts(h.exit_child(0)) == 1  # on the probe: once more, unprobed, as legacy
    forwarded = one(h.start(), "server")
    assert forwarded["method"] == "initialize"
    h.close("server")
    actions = h.exit_child(0)
    assert restarts(actions) == 0 and stops(actions) == [69]
    assert one(actions, "client")["error"]["message"].startswith(
        "mcp-rosetta: the server exited with status 0 before it answered anything")


def test_a_server_taken_as_legacy_by_timeout_that_dies_silent_fails_too() -> None:
    h = Harness(CoreConfig(probe_timeout=1.0))
    one(h.start(), "server")
    h.client(initialize())
    h.advance(1.0)  # the fallback: the initialize went to the server
    h.close("server")
    actions = h.advance(1.0)  # no exit status came
    error = one(actions, "client")["error"]
    assert error["message"].startswith("mcp-rosetta: the server closed its output before")
    assert error["data"] == {"source": "mcp-rosetta", "exitStatus": None, "method": "initialize"}
    assert stops(actions) == [69]


def test_a_give_up_after_a_closed_output_names_the_exit_status_that_follows() -> None:
    h = serving_a(CoreConfig(max_restarts=0))
    h.client(request(1, "tools/list"))
    assert stops(h.close("server")) == []
    actions = h.exit_child(3)
    assert stops(actions) == [69]
    assert one(actions, "client")["error"]["data"]["exitStatus"] == 3


def test_a_legacy_clients_ping_during_a_restart_is_answered_at_once() -> None:
    h, _ = legacy_pair()
    h.exit_child(1)
    assert one(h.client(request("p", "ping")), "client") == {
        "jsonrpc": "2.0", "id": "p", "result": {}}


def test_a_modern_clients_ping_during_a_restart_waits_for_the_new_server() -> None:
    # 2026-07-28 removed ping: only the server can say what it makes of one.
    h = modern_pair()
    h.exit_child(1)
    assert sent(h.client(request("p", "ping", {"_meta": modern_meta()})), "client") == []


def test_a_restart_done_at_once_leaves_no_second_restart_behind() -> None:
    h = serving_a(CoreConfig(restart_backoff=(1.0, 8.0)))
    h.exit_child(1)
    assert restarts(h.advance(1.0)) == 1
    h.exit_child(127)  # the restart's exec failed: another after its back-off
    h.start()  # a server comes up all the same, and exits on its probe: restarted at once
    assert restarts(h.exit_child(1)) == 1
    assert restarts(h.advance(60)) == 0  # the back-off's timer went with that restart
