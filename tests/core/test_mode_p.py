"""Mode P: same era on both sides; only ids change."""

from __future__ import annotations

from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    legacy_pair,
    modern_meta,
    one,
    request,
    sent,
)


def test_legacy_pair_relays_the_handshake_untouched() -> None:
    h, reply = legacy_pair()
    assert reply == {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "serverInfo": {"name": "old", "version": "1"}}}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert one(h.client(note), "server") == note


def test_server_requests_and_answers_are_remapped_both_ways() -> None:
    h, _ = legacy_pair()
    asked = one(h.server(request(42, "sampling/createMessage", {"messages": []})), "client")
    assert asked["id"] != 42 and asked["method"] == "sampling/createMessage"
    returned = one(h.client(answer(asked, {"role": "assistant", "content": {}})), "server")
    assert returned == {"jsonrpc": "2.0", "id": 42, "result": {"role": "assistant", "content": {}}}


def test_client_ids_keep_their_type_and_unknown_fields_survive() -> None:
    h, _ = legacy_pair()
    forwarded = one(h.client(request("1", "tools/call", {"name": "t", "x-extra": [1]})), "server")
    assert forwarded["params"] == {"name": "t", "x-extra": [1]}
    reply = one(h.server(answer(forwarded, {"content": [], "weird": True})), "client")
    assert reply == {"jsonrpc": "2.0", "id": "1", "result": {"content": [], "weird": True}}


def test_cancellation_is_remapped_in_both_directions() -> None:
    h, _ = legacy_pair()
    forwarded = one(h.client(request(5, "tools/call", {"name": "slow"})), "server")
    cancel = one(h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 5}}), "server")
    assert cancel["params"]["requestId"] == forwarded["id"]
    asked = one(h.server(request(77, "roots/list")), "client")
    cancel = one(h.server({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 77}}), "client")
    assert cancel["params"]["requestId"] == asked["id"]


def test_2025_03_26_batches_pass_as_single_messages_and_return_as_an_array() -> None:
    h, _ = legacy_pair("2025-03-26")
    actions = h.client([request(1, "tools/list"), request(2, "prompts/list")])
    first, second = sent(actions, "server")
    assert sent(h.server(answer(second, {"prompts": []})), "client") == []
    reply = one(h.server(answer(first, {"tools": []})), "client")
    assert reply == [{"jsonrpc": "2.0", "id": 2, "result": {"prompts": []}},
                     {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}]


def test_modern_pair_passes_requests_untouched_but_for_the_id() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    message = request(3, "tools/list", {"_meta": modern_meta({"sampling": {}})})
    actions = h.client(message)
    assert sent(actions, "server") == []
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert forwarded == {**message, "id": forwarded["id"]}
    result = {"resultType": "complete", "tools": [], "ttlMs": 5, "cacheScope": "public"}
    assert one(h.server(answer(forwarded, result)), "client") == answer(message, result)


def test_modern_listen_streams_keep_the_clients_subscription_id() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    listen = request(7, "subscriptions/listen", {"_meta": modern_meta(),
                                                "notifications": {"toolsListChanged": True}})
    h.client(listen)
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    tag = {"io.modelcontextprotocol/subscriptionId": forwarded["id"]}
    ack = one(h.server({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"_meta": tag, "notifications": {"toolsListChanged": True}}}),
              "client")
    assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 7}
    change = one(h.server({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                           "params": {"_meta": tag}}), "client")
    assert change["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 7}
    closed = one(h.server(answer(forwarded, {"resultType": "complete", "_meta": tag})), "client")
    assert closed == {"jsonrpc": "2.0", "id": 7, "result": {
        "resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}}


def test_a_modern_server_ending_a_listen_stream_is_told_under_the_clients_id() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(request("L", "subscriptions/listen", {"_meta": modern_meta(), "notifications": {}}))
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    ended = one(h.server({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": forwarded["id"]}}), "client")
    assert ended["params"] == {"requestId": "L"}


def test_an_answer_after_a_cancellation_is_expected_and_dropped_quietly() -> None:
    """cancellation.mdx: the sender of a cancellation ignores the answer that crosses it; it
    is no peer's mistake, so it is not logged as an unmatched response."""
    h, _ = legacy_pair()
    forwarded = one(h.client(request(5, "tools/call", {"name": "slow"})), "server")
    one(h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 5}}), "server")
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []
    assert [log.event for log in h.logs if log.event.startswith("response.")] == []
    assert sent(h.server(answer({"id": "never-sent"}, {})), "client") == []
    assert [log.event for log in h.logs if log.event.startswith("response.")] == [
        "response.unmatched"]


def test_tasks_pass_between_two_legacy_peers_as_any_other_method() -> None:
    """Both sides speak 2025-11-25's tasks, so pass-through translates nothing of them (the
    README: only modes A and B refuse tasks)."""
    h, _ = legacy_pair("2025-11-25")
    forwarded = one(h.client(request(3, "tasks/get", {"taskId": "t-1"})), "server")
    assert forwarded["method"] == "tasks/get" and forwarded["params"] == {"taskId": "t-1"}
    reply = one(h.server(answer(forwarded, {"taskId": "t-1", "status": "working"})), "client")
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": {"taskId": "t-1", "status": "working"}}
