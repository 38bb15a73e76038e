"""Mode A names, on every message it sends the legacy client, the client request it belongs to
(`Send.request`): a transport with a stream per request (Streamable HTTP) routes by it.

Rules: events.Send; server/utilities/logging.mdx (a log line goes with the request that set the
level), basic/utilities/progress.mdx (progress with the request that carries its token),
subscriptions.mdx (what a legacy client is told unsolicited belongs to no request).
"""

from __future__ import annotations

from typing import Any

from bridge.core.codec import encode
from bridge.core.config import CoreConfig
from bridge.core.events import Action, Send
from bridge.core.splice import SPLICE_MIN
from tests.core.harness import Harness, answer, fail, mode_a, one, request, sent
from tests.core.test_inputs_a import ALL_CAPS, FORM, ROOTS, input_required
from tests.core.test_listen_a import KINDS, URI, on_stream, session, subscribed, updated

Message = dict[str, Any]


def to_client(actions: list[Action]) -> list[Send]:
    return [a for a in actions if isinstance(a, Send) and a.side == "client"]


def named(actions: list[Action]) -> list[Any]:
    """The request each message to the client belongs to."""
    return [send.request for send in to_client(actions)]


def call(h: Harness, id: Any, token: Any = None) -> Message:
    """The client calls a tool (asking for progress under `token`); what the server got."""
    params: Message = {"name": "slow", "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    forwarded: Message = one(h.client(request(id, "tools/call", params)), "server")
    return forwarded


def log(level: str = "info") -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": level, "data": "working"}}


def progress(token: Any, value: float) -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": value}}


# Answers -----------------------------------------------------------------------------------


def test_a_relayed_answer_names_the_request_it_answers() -> None:
    h, _ = mode_a()
    forwarded = call(h, 5)
    actions = h.server(answer(forwarded, {"resultType": "complete", "content": []}))
    assert one(actions, "client")["id"] == 5
    assert named(actions) == [5]


def test_a_spliced_answer_names_the_request_it_answers() -> None:
    h, _ = mode_a()
    forwarded = call(h, "big")
    text = "x" * SPLICE_MIN
    raw = encode({"jsonrpc": "2.0", "id": forwarded["id"],
                  "result": {"resultType": "complete",
                             "content": [{"type": "text", "text": text}]}}).rstrip(b"\n")
    (send,) = to_client(h.server(raw))
    assert send.line is not None, "not spliced"
    assert send.request == "big"


def test_a_relayed_error_names_the_request_it_answers() -> None:
    h, _ = mode_a()
    forwarded = call(h, 7)
    actions = h.server(fail(forwarded, -32602, "Unknown tool"))
    assert one(actions, "client")["error"]["message"] == "Unknown tool"
    assert named(actions) == [7]


def test_the_bridges_own_answers_and_errors_name_the_request() -> None:
    h, _ = mode_a()
    assert named(h.client(request(1, "ping"))) == [1]
    assert named(h.client(request(2, "tasks/list"))) == [2]
    assert named(h.client(request(3, "logging/setLevel", {"level": "loud"}))) == [3]


def test_an_answer_the_server_never_gave_names_the_request_it_ends() -> None:
    h, _ = mode_a(config=CoreConfig(request_timeout=5))
    call(h, 9)
    actions = h.advance(5)
    assert "error" in one(actions, "client")
    assert named(actions) == [9]


# Progress and logs ---------------------------------------------------------------------------


def test_progress_names_the_request_whose_token_it_carries() -> None:
    h, _ = mode_a()
    call(h, 1, token="t1")
    call(h, 2, token="t2")
    assert named(h.server(progress("t2", 1))) == [2]
    assert named(h.server(progress("t1", 1))) == [1]


def test_a_log_line_names_the_one_request_at_the_server() -> None:
    h, _ = mode_a()
    call(h, 4)
    actions = h.server(log())
    assert one(actions, "client")["method"] == "notifications/message"
    assert named(actions) == [4]


def test_a_log_line_names_no_request_when_the_server_cannot_say_which() -> None:
    # On stdio a log message names no request: with two at the server it may be either's.
    h, _ = mode_a()
    call(h, 1)
    call(h, 2)
    assert named(h.server(log())) == [None]


def test_a_log_line_with_nothing_in_flight_names_no_request() -> None:
    h, _ = mode_a()
    assert named(h.server(log())) == [None]


# The input loop --------------------------------------------------------------------------


def test_input_questions_name_the_call_they_are_asked_for() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    forwarded = call(h, "c1")
    actions = h.server(answer(forwarded, input_required({"who": FORM, "where": ROOTS},
                                                        state="s1")))
    questions = sent(actions, "client")
    assert sorted(q["method"] for q in questions) == ["elicitation/create", "roots/list"]
    assert named(actions) == ["c1", "c1"]


def test_a_rounds_answer_and_its_failure_name_the_call() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    forwarded = call(h, "c2")
    question = one(h.server(answer(forwarded, input_required({"where": ROOTS}))), "client")
    round_ = one(h.client(answer(question, {"roots": []})), "server")
    actions = h.server(answer(round_, {"resultType": "complete", "content": []}))
    assert one(actions, "client")["id"] == "c2"
    assert named(actions) == ["c2"]

    forwarded = call(h, "c3")
    question = one(h.server(answer(forwarded, input_required({"who": FORM}))), "client")
    actions = h.client(fail(question, -32603, "no roots today"))
    assert one(actions, "client")["id"] == "c3"
    assert named(actions) == ["c3"]


# What a legacy client is told unsolicited --------------------------------------------------


def test_list_changes_and_resource_updates_name_no_request() -> None:
    h, listen, _ = session()
    actions = h.server(on_stream(listen, KINDS[0]))
    assert one(actions, "client")["method"] == KINDS[0]
    assert named(actions) == [None]

    uri_listen = subscribed(h, URI)
    actions = h.server({**updated(URI), "params": {
        "uri": URI, "_meta": on_stream(uri_listen, "x")["params"]["_meta"]}})
    assert one(actions, "client")["method"] == "notifications/resources/updated"
    assert named(actions) == [None]
