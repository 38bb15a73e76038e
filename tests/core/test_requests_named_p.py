"""Mode P and the lifecycle: every message sent to the client names the client request it
belongs to (events.Send.request), or None where it belongs to none."""

from __future__ import annotations

from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.eras import META_LOG_LEVEL, META_SUBSCRIPTION_ID
from bridge.core.events import Action, Send
from bridge.core.splice import SPLICE_MIN
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    legacy_pair,
    modern,
    modern_pair,
    one,
    request,
    restarted,
)

Message = dict[str, Any]


def to_client(actions: list[Action]) -> list[tuple[Any, Any]]:
    """(message, request) of each message sent to the client."""
    return [(a.message, a.request) for a in actions if isinstance(a, Send) and a.side == "client"]


def named(actions: list[Action]) -> Any:
    """The request the one message sent to the client names."""
    (sent,) = to_client(actions)
    return sent[1]


def note(method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def progress(token: Any) -> Message:
    return note("notifications/progress", {"progressToken": token, "progress": 1})


# Answers -----------------------------------------------------------------------------------


def test_a_relayed_answer_names_the_request_it_answers() -> None:
    h, _ = legacy_pair()
    forwarded = one(h.client(request("c1", "tools/call", {"name": "t"})), "server")
    assert named(h.server(answer(forwarded, {"content": []}))) == "c1"


def test_a_spliced_answer_names_the_request_it_answers() -> None:
    h, _ = legacy_pair()
    forwarded = one(h.client(request(4, "tools/call", {"name": "t"})), "server")
    big = {"content": [{"type": "text", "text": "x" * SPLICE_MIN}]}
    (action,) = [a for a in h.server(answer(forwarded, big)) if isinstance(a, Send)]
    assert action.line is not None  # spliced, not encoded again
    assert action.request == 4


def test_a_server_request_relayed_to_a_legacy_client_names_none() -> None:
    h, _ = legacy_pair()
    h.client(request(1, "tools/call", {"name": "t"}))
    assert named(h.server(request(42, "sampling/createMessage", {"messages": []}))) is None


def test_the_servers_withdrawal_of_its_request_names_none() -> None:
    h, _ = legacy_pair()
    h.server(request(77, "roots/list"))
    cancel = note("notifications/cancelled", {"requestId": 77})
    assert named(h.server(cancel)) is None


# Progress and logs -------------------------------------------------------------------------


def test_progress_names_the_request_whose_token_it_carries_while_it_is_in_flight() -> None:
    h, _ = legacy_pair()
    forwarded = one(h.client(request(7, "tools/call", {
        "name": "t", "_meta": {"progressToken": "tok"}})), "server")
    h.client(request(8, "tools/call", {"name": "u"}))
    assert named(h.server(progress("tok"))) == 7
    assert named(h.server(progress("other"))) is None
    h.server(answer(forwarded, {"content": []}))
    assert named(h.server(progress("tok"))) is None


def test_progress_tokens_keep_their_json_type() -> None:
    h, _ = legacy_pair()
    h.client(request(7, "tools/call", {"name": "t", "_meta": {"progressToken": 1}}))
    assert named(h.server(progress("1"))) is None
    assert named(h.server(progress(1))) == 7


def test_a_cancelled_requests_progress_names_none() -> None:
    h, _ = legacy_pair()
    h.client(request(7, "tools/call", {"name": "t", "_meta": {"progressToken": "tok"}}))
    h.client(note("notifications/cancelled", {"requestId": 7}))
    assert named(h.server(progress("tok"))) is None


def test_progress_of_a_timed_out_request_names_none() -> None:
    h = Harness(CoreConfig(request_timeout=5.0))
    probe = one(h.start(), "server")
    h.client(initialize())
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.server(answer(forwarded, {"protocolVersion": "2025-11-25", "capabilities": {}}))
    h.client(request(7, "tools/call", {"name": "t", "_meta": {"progressToken": "tok"}}))
    assert named(h.advance(5.0)) == 7  # the timeout error answers it
    assert named(h.server(progress("tok"))) is None


def logging(id: Any, level: str | None = "info") -> Message:
    meta = {} if level is None else {META_LOG_LEVEL: level}
    return modern(id, "tools/call", {"name": "t"}, meta=meta)


def log_line() -> Message:
    return note("notifications/message", {"level": "info", "data": "working"})


def test_a_modern_log_line_names_the_one_request_in_flight_that_asked_for_logs() -> None:
    h = modern_pair()
    forwarded = one(h.client(logging("a")), "server")
    h.client(logging("quiet", None))
    assert named(h.server(log_line())) == "a"
    h.server(answer(forwarded, {"resultType": "complete", "content": []}))
    assert named(h.server(log_line())) is None


def test_a_modern_log_line_with_two_requests_asking_for_logs_names_none() -> None:
    # Over stdio the line does not say which of the two it is for.
    h = modern_pair()
    h.client(logging("a"))
    h.client(logging("b", "debug"))
    assert named(h.server(log_line())) is None


def test_a_legacy_log_line_names_none() -> None:
    h, _ = legacy_pair()
    h.client(request(1, "tools/call", {"name": "t"}))
    assert named(h.server(log_line())) is None


# Listen streams and list_changed -----------------------------------------------------------


def test_a_listen_streams_notifications_and_end_name_the_listen_request() -> None:
    h = modern_pair()
    listen = one(h.client(modern("L", "subscriptions/listen",
                                 {"notifications": {"toolsListChanged": True}})), "server")
    tag = {"_meta": {META_SUBSCRIPTION_ID: listen["id"]}}
    ack = note("notifications/subscriptions/acknowledged",
               {**tag, "notifications": {"toolsListChanged": True}})
    assert named(h.server(ack)) == "L"
    assert named(h.server(note("notifications/tools/list_changed", dict(tag)))) == "L"
    assert named(h.server(answer(listen, {"resultType": "complete", **tag}))) == "L"


def test_a_server_ending_a_listen_stream_names_it() -> None:
    h = modern_pair()
    listen = one(h.client(modern("L", "subscriptions/listen", {"notifications": {}})), "server")
    assert named(h.server(note("notifications/cancelled", {"requestId": listen["id"]}))) == "L"


def test_list_changed_to_a_legacy_client_names_none() -> None:
    h, _ = legacy_pair()
    assert named(h.server(note("notifications/tools/list_changed"))) is None


def test_a_restart_announces_list_changes_on_the_stream_of_the_listen_request() -> None:
    h = modern_pair()
    listen = one(h.client(modern("L", "subscriptions/listen",
                                 {"notifications": {"toolsListChanged": True}})), "server")
    h.server(note("notifications/subscriptions/acknowledged", {
        "_meta": {META_SUBSCRIPTION_ID: listen["id"]},
        "notifications": {"toolsListChanged": True}}))
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    announced = to_client(h.server(answer(probe, DISCOVER_RESULT)))
    assert announced == [({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                           "params": {"_meta": {META_SUBSCRIPTION_ID: "L"}}}, "L")]


def test_a_restart_announces_a_legacy_clients_list_changes_to_no_request() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    caps = {"tools": {"listChanged": True}}
    h.server(answer(forwarded, {"protocolVersion": "2025-06-18", "capabilities": caps,
                                "serverInfo": {"name": "old", "version": "1"}}))
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    replay = one(h.server(fail(probe, -32601, "Method not found")), "server")
    announced = to_client(h.server(answer(replay, {"protocolVersion": "2025-06-18",
                                                   "capabilities": caps})))
    assert announced == [(note("notifications/tools/list_changed"), None)]


# The lifecycle's own answers ---------------------------------------------------------------


def test_the_lifecycles_answers_name_the_request_they_answer() -> None:
    h = Harness()
    h.start()
    assert named(h.client(request(1, "tools/list"))) == 1  # the first request shows no era
    assert named(h.client(request(2, "ping"))) == 2
    h.client(initialize(id=3))
    h.shutdown(grace=5.0)
    assert named(h.client(request(4, "tools/list"))) == 4  # refused while closing


def test_a_request_lost_with_the_server_names_itself_in_its_error() -> None:
    h, _ = legacy_pair()
    h.client(request("lost", "tools/call", {"name": "t"}))
    assert named(h.exit_child(1)) == "lost"


# A server's messages that name a call as if it were a stream -------------------------------


def test_a_server_cancelling_a_call_is_not_relayed_and_the_call_is_still_answered() -> None:
    # cancellation.mdx (2026-07-28): a server "MUST NOT send notifications/cancelled for any
    # other purpose" than ending a listen stream.
    h = modern_pair()
    forwarded = one(h.client(modern("c1", "tools/call", {"name": "t"})), "server")
    withdrawn = h.server(note("notifications/cancelled", {"requestId": forwarded["id"]}))
    assert to_client(withdrawn) == []
    result = {"resultType": "complete", "content": []}
    assert to_client(h.server(answer(forwarded, result))) == [(answer({"id": "c1"}, result), "c1")]


def test_a_notification_tagged_with_a_call_is_not_put_on_a_stream() -> None:
    h = modern_pair()
    forwarded = one(h.client(modern("c1", "tools/call", {"name": "t"})), "server")
    tagged = note("notifications/tools/list_changed",
                  {"_meta": {META_SUBSCRIPTION_ID: forwarded["id"]}})
    assert to_client(h.server(tagged)) == [(tagged, None)]
