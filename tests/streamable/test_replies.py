"""The front's own refusals of what HTTP/1.1 cannot take, as the client reads them."""

from __future__ import annotations

import orjson
import pytest

from bridge.streamable import replies


@pytest.mark.parametrize(("reply", "status", "reason"), [
    (replies.unexpected_event("Data"), 400, "expected a request, got Data"),
    (replies.head_too_large(8192), 431, "request head over 8192 bytes"),
    (replies.version_not_served("2.0"), 505, "HTTP/2.0 is not served here"),
    (replies.length_and_chunks(), 400, "Content-Length and Transfer-Encoding both present"),
    (replies.declared_too_large("999", 10), 413, "Content-Length 999 is over 10"),
    (replies.body_too_large(10), 413, "body over 10 bytes"),
    (replies.cut_inside_request(), 400, "the connection closed inside the request"),
    (replies.pipelined(), 400, "a request arrived before the last one was answered"),
])
def test_a_request_http_refuses_names_its_cause_and_what_to_send(
        reply: replies.Reply, status: int, reason: str) -> None:
    error = orjson.loads(reply.body)["error"]
    assert (reply.status, reply.reason, error["code"]) == (status, reason, -32600)
    assert f": {reason}; send " in error["message"]
    assert ("retry-after", "1") not in reply.headers


def test_full_request_bodies_are_503_with_when_to_come_back() -> None:
    reply = replies.bodies_full(900, 1000)
    assert (reply.status, reply.reason) == (503, "the front holds 900 bytes of request bodies "
                                                 "already (its limit for all connections at "
                                                 "once is 1000)")
    assert orjson.loads(reply.body)["error"]["message"].endswith("; try again in a moment")
    assert ("retry-after", "1") in reply.headers


def test_a_stopping_front_and_a_health_post_are_answered_without_a_body() -> None:
    assert replies.front_stopping() == replies.Reply(
        503, b"", (("connection", "close"),), "the front is stopping")
    assert replies.health_method_not_allowed("POST", "/healthz") == replies.Reply(
        405, b"", (("allow", "GET"),), "POST: /healthz takes GET")


def test_a_retry_of_a_call_held_before_its_node_restarted_is_answered_as_ended() -> None:
    reply = replies.call_outlived("r2")
    assert (reply.status, reply.reason) == (200, "its node restarted since")
    assert orjson.loads(reply.body) == {"jsonrpc": "2.0", "id": "r2", "error": {
        "code": -32602, "message": "Invalid requestState: the call it resumes has ended: the "
                                   "node that held it restarted; make the call again",
        "data": {"reason": "ended"}}}


def test_a_retry_whose_envelope_fails_the_fleet_s_check_is_refused_as_tampered() -> None:
    reply = replies.state_unsigned(3)
    assert orjson.loads(reply.body) == {"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32602, "message": "Invalid requestState: it was not issued by this fleet to "
                                   "this client, or it was altered",
        "data": {"reason": "tampered"}}}


def test_a_retry_whose_node_is_gone_is_answered_as_its_core_answers_a_call_that_ended() -> None:
    reply = replies.parked_call_lost(7, "its node http://10.0.0.2:8808 cannot be reached")
    assert (reply.status, reply.reason) == (200, "its node http://10.0.0.2:8808 cannot be "
                                                 "reached")
    assert orjson.loads(reply.body) == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32602, "message": "Invalid requestState: the call it resumes has ended "
                                   "(answered, cancelled or timed out): the node that held "
                                   "it is gone (its node http://10.0.0.2:8808 cannot be "
                                   "reached); make the call again",
        "data": {"reason": "ended"}}}
    assert ("content-type", "application/json") in reply.headers


def test_a_session_whose_node_is_gone_is_404_naming_the_node() -> None:
    reply = replies.session_node_gone("its node http://10.0.0.2:8808 cannot be reached")
    assert reply.status == 404
    assert orjson.loads(reply.body)["error"] == {
        "code": -32600, "message": "Session not found: the node that held it is gone (its "
                                   "node http://10.0.0.2:8808 cannot be reached); send "
                                   "initialize without Mcp-Session-Id to start a new one"}


def test_a_draining_node_refuses_a_new_session_with_retry_after_naming_the_drain() -> None:
    reply = replies.node_draining(3)
    assert (reply.status, ("retry-after", "1") in reply.headers) == (503, True)
    error = orjson.loads(reply.body)
    assert error["id"] == 3 and error["error"]["data"] == {"node": "draining"}
    assert "this node is draining" in error["error"]["message"]
    stopped = replies.node_stopping(None)
    assert (stopped.status, ("retry-after", "1") in stopped.headers) == (503, True)
    assert "this node stopped" in orjson.loads(stopped.body)["error"]["message"]


def test_both_drain_refusals_say_the_node_took_nothing_of_the_request() -> None:
    assert replies.NOTHING_TAKEN == "mcp-rosetta-nothing-taken"
    assert replies.node_draining(3).headers == (
        ("content-type", "application/json"), ("retry-after", "1"),
        ("mcp-rosetta-nothing-taken", "draining"))
    assert replies.node_stopping(None).headers == (
        ("content-type", "application/json"), ("retry-after", "1"),
        ("mcp-rosetta-nothing-taken", "stopped"))
    # Every other 503 a node gives itself took something, or is not a node's drain.
    for other in (replies.front_stopping(), replies.over_capacity(4)):
        assert replies.NOTHING_TAKEN not in dict(other.headers)
