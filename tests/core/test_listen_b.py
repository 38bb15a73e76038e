"""Mode B listen streams: subscriptions/listen served from legacy change notifications."""

from __future__ import annotations

from typing import Any

from tests.core.harness import (
    LEGACY_INIT_RESULT,
    OLD_SRV,
    answer,
    fail,
    mode_b,
    modern,
    no_requests_to,
    one,
    sent,
)

SUB = "io.modelcontextprotocol/subscriptionId"


def listen(id: Any, **wanted: Any) -> dict[str, Any]:
    return modern(id, "subscriptions/listen", {"notifications": wanted})


def notify(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def ack(id: Any, honored: dict[str, Any]) -> dict[str, Any]:
    return notify("notifications/subscriptions/acknowledged",
                  {"_meta": {SUB: id}, "notifications": honored})


def test_the_acknowledgement_comes_first_with_what_the_server_can_deliver() -> None:
    init = {**LEGACY_INIT_RESULT, "capabilities": {"tools": {"listChanged": True},
                                                   "prompts": {}, "resources": {}}}
    h, _ = mode_b(init=init)
    actions = h.client(listen(7, toolsListChanged=True, promptsListChanged=True,
                              resourcesListChanged=False, resourceSubscriptions=["file:///a"]))
    assert sent(actions, "server") == []  # no subscribe: the server offers none
    assert sent(actions, "client") == [ack(7, {"toolsListChanged": True})]


def test_stream_notifications_are_tagged_with_the_listen_id_of_its_exact_type() -> None:
    h, _ = mode_b()
    h.client(listen(7, toolsListChanged=True))
    h.client(listen("7", toolsListChanged=True, promptsListChanged=True))
    actions = h.server(notify("notifications/tools/list_changed"))
    assert sent(actions, "client") == [
        notify("notifications/tools/list_changed", {"_meta": {SUB: 7}}),
        notify("notifications/tools/list_changed", {"_meta": {SUB: "7"}})]
    actions = h.server(notify("notifications/prompts/list_changed", {"_meta": {"x": 1}}))
    assert sent(actions, "client") == [
        notify("notifications/prompts/list_changed", {"_meta": {"x": 1, SUB: "7"}})]
    no_requests_to(actions)


def test_notifications_no_stream_asked_for_are_dropped() -> None:
    h, _ = mode_b()
    for method in ("notifications/tools/list_changed", "notifications/resources/list_changed"):
        assert sent(h.server(notify(method)), "client") == []
    assert sent(h.server(notify("notifications/resources/updated", {"uri": "file:///a"})),
                "client") == []
    h.client(listen("s", promptsListChanged=True))
    assert sent(h.server(notify("notifications/tools/list_changed")), "client") == []
    assert sent(h.server(notify("notifications/resources/updated", {"uri": "file:///a"})),
                "client") == []


def test_resource_subscriptions_are_reference_counted_across_streams() -> None:
    h, _ = mode_b()
    actions = h.client(listen("a", resourceSubscriptions=["file:///dir", "file:///b",
                                                           "file:///dir"]))
    assert sent(actions, "client") == []  # the ack waits for the server's answers
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": h.minted("dir"), "method": "resources/subscribe",
         "params": {"uri": "file:///dir"}},
        {"jsonrpc": "2.0", "id": h.minted("b"), "method": "resources/subscribe",
         "params": {"uri": "file:///b"}}]
    assert sent(h.server(answer({"id": h.minted("dir")}, {})), "client") == []
    actions = h.client(listen("b", toolsListChanged=True, resourceSubscriptions=["file:///dir"]))
    assert sent(actions, "server") == []  # already subscribed
    assert sent(actions, "client") == [ack("b", {"toolsListChanged": True,
                                                 "resourceSubscriptions": ["file:///dir"]})]
    actions = h.server(fail({"id": h.minted("b")}, -32602, "no such resource"))
    assert sent(actions, "client") == [ack("a", {"resourceSubscriptions": ["file:///dir"]})]

    def updated(uri: str) -> list[Any]:
        return sent(h.server(notify("notifications/resources/updated", {"uri": uri})), "client")

    assert updated("file:///dir") == [
        notify("notifications/resources/updated", {"uri": "file:///dir", "_meta": {SUB: "a"}}),
        notify("notifications/resources/updated", {"uri": "file:///dir", "_meta": {SUB: "b"}})]
    assert [m["params"]["_meta"][SUB] for m in updated("file:///dir/x.txt")] == ["a", "b"]
    assert updated("file:///dir2") == []  # a prefix, but not a sub-resource
    assert updated("file:///b") == []  # its subscription failed

    actions = h.client(notify("notifications/cancelled", {"requestId": "a"}))
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert [m["params"]["_meta"][SUB] for m in updated("file:///dir")] == ["b"]
    actions = h.client(notify("notifications/cancelled", {"requestId": "b"}))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": h.minted("unsubscribe"), "method": "resources/unsubscribe",
         "params": {"uri": "file:///dir"}}]
    assert updated("file:///dir") == []
    assert sent(h.server(notify("notifications/tools/list_changed")), "client") == []


def test_a_stream_closed_before_its_subscription_is_confirmed_undoes_it() -> None:
    h, _ = mode_b()
    subscribe = one(h.client(listen(1, resourceSubscriptions=["file:///a"])), "server")
    assert sent(h.client(notify("notifications/cancelled", {"requestId": 1})), "server") == []
    actions = h.server(answer(subscribe, {}))
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": h.minted("unsubscribe"),
                                      "method": "resources/unsubscribe",
                                      "params": {"uri": "file:///a"}}


def test_a_malformed_filter_or_a_reused_id_is_refused() -> None:
    h, _ = mode_b()
    for params in ({}, {"notifications": []},
                   {"notifications": {"resourceSubscriptions": "file:///a"}},
                   {"notifications": {"resourceSubscriptions": [1]}}):
        reply = one(h.client(modern(1, "subscriptions/listen", params)), "client")
        assert reply["error"] == {
            "code": -32602, "message": "subscriptions/listen needs a notifications filter "
                                       "object (resourceSubscriptions: an array of URI strings)"}
    h.client(listen(2, toolsListChanged=True))
    reply = one(h.client(listen(2, toolsListChanged=True)), "client")
    assert reply == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32600, "message": "This id already names an open subscription"}}


def test_an_empty_filter_is_acknowledged_empty_and_never_receives_anything() -> None:
    h, _ = mode_b()
    assert sent(h.client(listen(3)), "client") == [ack(3, {})]
    assert sent(h.server(notify("notifications/tools/list_changed")), "client") == []


def test_shutdown_closes_every_open_stream_with_its_listen_result() -> None:
    h, _ = mode_b()
    h.client(listen(1, toolsListChanged=True))
    h.client(listen("two", promptsListChanged=True))
    h.client(notify("notifications/cancelled", {"requestId": 1}))
    h.client(listen(3, resourcesListChanged=True))
    assert sent(h.shutdown(), "client") == [
        {"jsonrpc": "2.0", "id": "two", "result": {"resultType": "complete",
                                                   "_meta": {SUB: "two", **OLD_SRV}}},
        {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete",
                                               "_meta": {SUB: 3, **OLD_SRV}}}]
