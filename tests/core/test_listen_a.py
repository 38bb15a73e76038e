"""Transcripts of mode A's listen streams, subscriptions and log levels.

Rules: subscriptions.mdx, cancellation.mdx, server/utilities/logging.mdx; TRANSLATION.md §6.4,
§8, §9.2.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSION,
)
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    mode_a,
    one,
    request,
    sent,
)

Message = dict[str, Any]

CLIENT_INFO = {"name": "OldClient", "version": "1.0"}
SERVER_INFO = {"name": "ModernSrv", "version": "2.0", "title": "Modern", "icons": []}
EVERYTHING = {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
              "resources": {"listChanged": True, "subscribe": True}, "logging": {},
              "completions": {}}
FULL = {**DISCOVER_RESULT, "capabilities": EVERYTHING}
ALL_LISTS = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
KINDS = ["notifications/tools/list_changed", "notifications/prompts/list_changed",
         "notifications/resources/list_changed"]
URI = "file:///project/config.json"
URI_2 = "file:///project/src/main.rs"
ACK_TIMEOUT = CoreConfig().probe_timeout


def listen_request(listen: Message, notifications: Message, caps: Message | None = None) -> Message:
    """The listen request the server must see: the filter and an envelope without logLevel."""
    return {"jsonrpc": "2.0", "id": listen["id"], "method": "subscriptions/listen",
            "params": {"_meta": {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION,
                                 META_CLIENT_CAPABILITIES: caps or {},
                                 META_CLIENT_INFO: CLIENT_INFO},
                       "notifications": notifications}}


def ack(listen: Message, notifications: Message) -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {META_SUBSCRIPTION_ID: listen["id"]},
                       "notifications": notifications}}


def on_stream(listen: Message | None, method: str, **params: Any) -> Message:
    """A notification as the server sends it on `listen`'s stream (untagged if None)."""
    if listen is not None:
        params["_meta"] = {META_SUBSCRIPTION_ID: listen["id"], **params.get("_meta", {})}
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params:
        message["params"] = params
    return message


def closed(listen: Message) -> Message:
    """The graceful end of a stream: the listen request's result (subscriptions.mdx)."""
    return answer(listen, {"resultType": "complete",
                           "_meta": {META_SUBSCRIPTION_ID: listen["id"]}})


def server_cancelled(listen: Message) -> Message:
    """The other end of a stream: the server's notifications/cancelled (cancellation.mdx)."""
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": listen["id"], "reason": "shutting down"}}


def client_cancel(listen: Message) -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": listen["id"]}}


def updated(uri: str) -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def opening(discover: Message = FULL, caps: Message | None = None, version: str = "2025-11-25",
            config: CoreConfig | None = None) -> tuple[Harness, Message]:
    """A bridge whose initialize waits on the session stream; returns the listen request."""
    h = Harness(config)
    probe = one(h.start(), "server")
    h.client(initialize(version, caps))
    actions = h.server(answer(probe, discover))
    assert sent(actions, "client") == []  # initialize waits for the acknowledgement
    return h, one(actions, "server")


def session(discover: Message = FULL, honored: Message | None = None,
            config: CoreConfig | None = None) -> tuple[Harness, Message, Message]:
    """A bridge after initialize with its session stream acknowledged."""
    h, listen = opening(discover, config=config)
    actions = h.server(ack(listen, honored if honored is not None else
                           listen["params"]["notifications"]))
    assert sent(actions, "server") == []
    init = one(actions, "client")
    assert h.client({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    return h, listen, init["result"]


def subscribed(h: Harness, uri: str = URI, id: Any = 10) -> Message:
    """The client subscribes to `uri`; the stream is acknowledged; returns its listen request."""
    listen = one(h.client(request(id, "resources/subscribe", {"uri": uri})), "server")
    assert listen == listen_request(listen, {"resourceSubscriptions": [uri]})
    actions = h.server(ack(listen, {"resourceSubscriptions": [uri]}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": id, "result": {}}]
    assert sent(actions, "server") == []
    return listen


def quiet(actions: list[Any]) -> bool:
    return sent(actions, "client") == [] and sent(actions, "server") == []


# The session stream and the capabilities it backs -------------------------------------------


def test_the_session_stream_asks_for_every_list_the_server_offers() -> None:
    h, listen = opening(caps={"sampling": {}, "roots": {"listChanged": True}},
                        config=CoreConfig(default_log_level="info"))
    # logging.mdx: logs are never delivered on a listen stream, so no logLevel on it.
    assert listen == listen_request(listen, ALL_LISTS, caps={"sampling": {}, "roots": {}})
    actions = h.server(ack(listen, ALL_LISTS))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"logging": {}, "completions": {}, "tools": {"listChanged": True},
                         "prompts": {"listChanged": True},
                         "resources": {"listChanged": True, "subscribe": True}},
        "serverInfo": SERVER_INFO, "instructions": "Use the tools."}}]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_legacy_revision_hears_list_changes(version: str) -> None:
    h, listen = opening(version=version)
    init = one(h.server(ack(listen, ALL_LISTS)), "client")["result"]
    assert init["protocolVersion"] == version
    assert init["capabilities"]["tools"] == {"listChanged": True}
    assert init["capabilities"]["resources"] == {"listChanged": True, "subscribe": True}
    assert sent(h.server(on_stream(listen, KINDS[0])), "client") == [
        {"jsonrpc": "2.0", "method": KINDS[0]}]


@pytest.mark.parametrize("method", KINDS)
def test_list_changes_of_each_kind_are_forwarded_untagged(method: str) -> None:
    h, listen, _ = session()
    assert sent(h.server(on_stream(listen, method)), "client") == [
        {"jsonrpc": "2.0", "method": method}]
    # Other _meta keys are the server's to send, and stay.
    assert sent(h.server(on_stream(listen, method, _meta={"trace": "t1"})), "client") == [
        {"jsonrpc": "2.0", "method": method, "params": {"_meta": {"trace": "t1"}}}]


@pytest.mark.parametrize("method", KINDS)
def test_list_changes_off_the_stream_are_dropped(method: str) -> None:
    h, _, _ = session()
    assert quiet(h.server(on_stream(None, method)))  # untagged: not from a stream of ours
    assert quiet(h.server(on_stream({"id": "rosetta-999"}, method)))  # not our stream


def test_capabilities_are_advertised_only_where_acknowledged() -> None:
    # subscriptions.mdx: the acknowledgement is the subset the server agreed to honor.
    h, listen, init = session(honored={"toolsListChanged": True, "promptsListChanged": False})
    assert init["capabilities"] == {"logging": {}, "completions": {},
                                    "tools": {"listChanged": True}, "prompts": {},
                                    "resources": {"subscribe": True}}
    tools, prompts, resources = KINDS
    assert sent(h.server(on_stream(listen, tools)), "client") == [
        {"jsonrpc": "2.0", "method": tools}]
    # The server sends what it said it would not: the client was not promised it.
    assert quiet(h.server(on_stream(listen, prompts)))
    assert quiet(h.server(on_stream(listen, resources)))
    # Re-opened, the stream asks only for what was honoured.
    assert quiet(h.server(closed(listen)))
    reopened = one(h.advance(0.5), "server")
    assert reopened == listen_request(reopened, {"toolsListChanged": True})


def test_an_acknowledgement_cannot_widen_the_filter() -> None:
    discover = {**FULL, "capabilities": {"tools": {"listChanged": True}, "prompts": {}}}
    h, listen = opening(discover)
    assert listen == listen_request(listen, {"toolsListChanged": True})
    init = one(h.server(ack(listen, {"toolsListChanged": True, "promptsListChanged": True})),
               "client")
    assert init["result"]["capabilities"] == {"tools": {"listChanged": True}, "prompts": {},
                                              "logging": {}}
    assert quiet(h.server(on_stream(listen, "notifications/prompts/list_changed")))


def test_a_server_offering_only_subscriptions_gets_an_empty_session_stream() -> None:
    discover = {**FULL, "capabilities": {"resources": {"subscribe": True}}}
    h, listen = opening(discover)
    assert listen == listen_request(listen, {})
    init = one(h.server(ack(listen, {})), "client")
    assert init["result"]["capabilities"] == {"resources": {"subscribe": True}, "logging": {}}
    subscribed(h)


def test_a_server_offering_no_changes_gets_no_stream() -> None:
    h, init = mode_a()  # DISCOVER_RESULT: no listChanged, no subscribe; harness saw no listen
    assert init["capabilities"] == {"logging": {}, "completions": {}, "prompts": {},
                                    "resources": {}, "tools": {}}
    actions = h.client(request(3, "resources/subscribe", {"uri": URI}))
    assert sent(actions, "server") == []
    error = one(actions, "client")
    assert error["id"] == 3 and error["error"]["code"] == -32601


# Subscriptions ----------------------------------------------------------------------------


def test_subscribe_opens_a_per_uri_stream_and_is_answered_after_its_ack() -> None:
    h, session_listen, _ = session()
    actions = h.client(request(10, "resources/subscribe", {"uri": URI}))
    assert sent(actions, "client") == []  # not before the server agreed
    listen = one(actions, "server")
    assert listen == listen_request(listen, {"resourceSubscriptions": [URI]})
    assert listen["id"] != session_listen["id"]
    actions = h.server(ack(listen, {"resourceSubscriptions": [URI]}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 10, "result": {}}]
    assert sent(actions, "server") == []


@pytest.mark.parametrize("stop", ["shutdown", "client closes"])
def test_a_subscribe_still_waiting_for_its_stream_is_answered_when_the_bridge_stops(
        stop: str) -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    assert sent(h.server(closed(listen)), "client") == []  # ended before its ack: re-opened
    if stop == "client closes":
        assert quiet(h.close("client"))  # the client is still owed an answer
        actions = h.advance(5)  # drain_timeout
    else:
        actions = h.shutdown()
    reason = "the client closed its input" if stop == "client closes" \
        else "mcp-rosetta is shutting down"
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 10, "error": {
        "code": -32603, "message": reason, "data": {"source": "mcp-rosetta"}}}]


def test_a_subscribe_the_client_cancels_before_the_ack_is_never_answered() -> None:
    """cancellation.mdx: a cancelled request gets no response; the subscription itself may
    still take effect, as at a server that had begun on it."""
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 10, "reason": "changed mind"}})
    assert sent(h.server(ack(listen, {"resourceSubscriptions": [URI]})), "client") == []
    assert sent(h.server(on_stream(listen, "notifications/resources/updated", uri=URI)),
                "client") == [updated(URI)]
    assert [m for m in sent(h.shutdown(), "client") if m.get("id") == 10] == []


def test_updates_are_forwarded_only_for_subscribed_uris() -> None:
    h, session_listen, _ = session()
    listen = subscribed(h, URI)
    assert sent(h.server(on_stream(listen, "notifications/resources/updated", uri=URI)),
                "client") == [updated(URI)]
    # Not on a stream for that URI: the session stream, no stream, a stranger's stream.
    assert quiet(h.server(on_stream(session_listen, "notifications/resources/updated",
                                    uri=URI_2)))
    assert quiet(h.server(on_stream(None, "notifications/resources/updated", uri=URI_2)))
    assert quiet(h.server(on_stream({"id": "rosetta-999"}, "notifications/resources/updated",
                                    uri=URI_2)))


def test_two_subscriptions_are_two_streams() -> None:
    h, _, _ = session()
    first = subscribed(h, URI, id=10)
    second = subscribed(h, URI_2, id=11)
    assert first["id"] != second["id"]
    assert sent(h.server(on_stream(second, "notifications/resources/updated", uri=URI_2)),
                "client") == [updated(URI_2)]
    actions = h.client(request(12, "resources/unsubscribe", {"uri": URI}))
    assert sent(actions, "server") == [client_cancel(first)]
    assert sent(h.server(on_stream(second, "notifications/resources/updated", uri=URI_2)),
                "client") == [updated(URI_2)]


def test_subscribing_twice_opens_one_stream() -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    assert h.client(request(11, "resources/subscribe", {"uri": URI})) == []  # waits on the ack
    actions = h.server(ack(listen, {"resourceSubscriptions": [URI]}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 10, "result": {}},
                                       {"jsonrpc": "2.0", "id": 11, "result": {}}]
    actions = h.client(request(14, "resources/subscribe", {"uri": URI}))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 14, "result": {}}]


def test_unsubscribe_cancels_the_stream_and_later_updates_are_dropped() -> None:
    h, _, _ = session()
    listen = subscribed(h)
    actions = h.client(request(20, "resources/unsubscribe", {"uri": URI}))
    # cancellation.mdx (stdio): the client ends a stream with notifications/cancelled.
    assert sent(actions, "server") == [client_cancel(listen)]
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 20, "result": {}}]
    assert quiet(h.server(on_stream(listen, "notifications/resources/updated", uri=URI)))
    # The server confirming the end is no reason to re-open it.
    assert quiet(h.server(closed(listen)))
    assert quiet(h.advance(3600))


def test_unsubscribe_before_the_ack() -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    actions = h.client(request(11, "resources/unsubscribe", {"uri": URI}))
    assert sent(actions, "server") == [client_cancel(listen)]
    replies = sent(actions, "client")
    assert [r["id"] for r in replies] == [10, 11]
    assert replies[0]["error"]["code"] == -32602
    assert replies[1] == {"jsonrpc": "2.0", "id": 11, "result": {}}
    assert quiet(h.server(ack(listen, {"resourceSubscriptions": [URI]})))
    assert quiet(h.advance(3600))


def test_unsubscribe_without_a_subscription_is_answered() -> None:
    h, _, _ = session()
    actions = h.client(request(30, "resources/unsubscribe", {"uri": URI}))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 30, "result": {}}]


def test_a_subscription_the_server_does_not_honour_is_refused_and_closed() -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    actions = h.server(ack(listen, {}))
    error = one(actions, "client")
    assert error["id"] == 10 and error["error"]["code"] == -32602
    assert URI in error["error"]["message"]
    # The stream is open on the server even though it carries nothing: close it.
    assert sent(actions, "server") == [client_cancel(listen)]
    assert quiet(h.server(on_stream(listen, "notifications/resources/updated", uri=URI)))


def test_a_subscription_the_server_refuses_relays_its_error() -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    actions = h.server(fail(listen, -32602, "Resource not found", {"uri": URI}))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 10, "error": {
        "code": -32602, "message": "Resource not found"}}]
    assert quiet(h.advance(3600))


def test_a_subscription_never_acknowledged_fails_instead_of_hanging() -> None:
    h, _, _ = session()
    listen = one(h.client(request(10, "resources/subscribe", {"uri": URI})), "server")
    assert h.advance(ACK_TIMEOUT - 0.5) == []
    actions = h.advance(0.5)
    assert sent(actions, "server") == [client_cancel(listen)]
    error = one(actions, "client")
    assert error["id"] == 10 and error["error"]["code"] == -32603
    assert URI in error["error"]["message"]
    assert quiet(h.server(ack(listen, {"resourceSubscriptions": [URI]})))
    # The client may try again.
    subscribed(h, URI, id=11)


def test_subscribe_needs_a_uri() -> None:
    h, _, _ = session()
    actions = h.client(request(10, "resources/subscribe", {}))
    assert sent(actions, "server") == []
    assert one(actions, "client")["error"]["code"] == -32602


# Streams the server ends ------------------------------------------------------------------


@pytest.mark.parametrize("end", [closed, server_cancelled], ids=["result", "cancelled"])
def test_a_session_stream_the_server_ends_is_reopened_with_back_off(end: Any) -> None:
    h, listen, _ = session()
    assert quiet(h.server(end(listen)))  # never shown to the client, never answered
    assert h.advance(0.25) == []
    reopened = one(h.advance(0.25), "server")
    assert reopened == listen_request(reopened, ALL_LISTS)
    assert reopened["id"] != listen["id"]
    # Until the new stream is acknowledged nothing on it is delivered; the old one is gone.
    assert quiet(h.server(on_stream(listen, KINDS[0])))
    assert quiet(h.server(ack(reopened, ALL_LISTS)))
    assert sent(h.server(on_stream(reopened, KINDS[0])), "client") == [
        {"jsonrpc": "2.0", "method": KINDS[0]}]


@pytest.mark.parametrize("end", [closed, server_cancelled], ids=["result", "cancelled"])
def test_a_uri_stream_the_server_ends_is_reopened_with_back_off(end: Any) -> None:
    h, _, _ = session()
    listen = subscribed(h)
    assert quiet(h.server(end(listen)))
    assert h.advance(0.25) == []
    reopened = one(h.advance(0.25), "server")
    assert reopened == listen_request(reopened, {"resourceSubscriptions": [URI]})
    assert quiet(h.server(ack(reopened, {"resourceSubscriptions": [URI]})))  # no 2nd reply
    assert sent(h.server(on_stream(reopened, "notifications/resources/updated", uri=URI)),
                "client") == [updated(URI)]


def test_the_back_off_grows_and_resets_after_an_ack() -> None:
    h, listen, _ = session(config=CoreConfig(listen_backoff=(0.5, 1.5)))
    h.server(closed(listen))
    second = one(h.advance(0.5), "server")
    h.server(server_cancelled(second))  # ended again before any ack
    assert h.advance(0.75) == []
    third = one(h.advance(0.25), "server")  # 1.0 s
    h.server(closed(third))
    assert h.advance(1.25) == []
    fourth = one(h.advance(0.25), "server")  # capped at 1.5 s
    h.server(ack(fourth, ALL_LISTS))
    h.server(closed(fourth))
    assert h.advance(0.25) == []
    assert one(h.advance(0.25), "server")["method"] == "subscriptions/listen"  # 0.5 s again


def test_unsubscribe_while_the_stream_waits_to_reopen() -> None:
    h, _, _ = session()
    listen = subscribed(h)
    h.server(closed(listen))
    actions = h.client(request(20, "resources/unsubscribe", {"uri": URI}))
    # The stream is already over: nothing to cancel (cancellation.mdx: only requests believed
    # to be in progress), and it must not come back.
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 20, "result": {}}]
    assert quiet(h.advance(3600))


def test_a_reopened_stream_never_acknowledged_is_tried_again() -> None:
    h, listen, _ = session()
    h.server(closed(listen))
    reopened = one(h.advance(0.5), "server")
    actions = h.advance(ACK_TIMEOUT)
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [client_cancel(reopened)]
    again = one(h.advance(1.0), "server")  # the back-off doubled: it was not acknowledged
    assert again == listen_request(again, ALL_LISTS)


# No listen support, no acknowledgement ------------------------------------------------------


def test_no_listen_support_means_no_list_changed_and_no_error_loop() -> None:
    h, listen = opening()
    actions = h.server(fail(listen, -32601, "Method not found"))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"logging": {}, "completions": {}, "tools": {}, "prompts": {},
                         "resources": {}},
        "serverInfo": SERVER_INFO, "instructions": "Use the tools."}}]
    h.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert quiet(h.advance(3600))
    assert quiet(h.server(on_stream(listen, KINDS[0])))
    error = one(h.client(request(1, "resources/subscribe", {"uri": URI})), "client")
    assert error["id"] == 1 and error["error"]["code"] == -32601


def test_no_ack_within_the_timeout() -> None:
    h, listen = opening()
    assert h.advance(ACK_TIMEOUT - 0.5) == []
    actions = h.advance(0.5)
    assert sent(actions, "server") == [client_cancel(listen)]
    init = one(actions, "client")
    assert init["id"] == 0
    assert init["result"]["capabilities"] == {"logging": {}, "completions": {}, "tools": {},
                                              "prompts": {}, "resources": {}}
    # A late acknowledgement and what follows it change nothing.
    assert quiet(h.server(ack(listen, ALL_LISTS)))
    assert quiet(h.server(on_stream(listen, KINDS[1])))
    assert quiet(h.advance(3600))
    # Subscriptions were not advertised, and are not offered.
    error = one(h.client(request(1, "resources/subscribe", {"uri": URI})), "client")
    assert error["id"] == 1 and error["error"]["code"] == -32601


# Logging ----------------------------------------------------------------------------------


def level_of(message: Message) -> str | None:
    return message["params"]["_meta"].get(META_LOG_LEVEL)


def test_set_level_is_answered_and_stamped_on_requests() -> None:
    h, listen, _ = session()
    first = one(h.client(request(1, "tools/list")), "server")
    assert META_LOG_LEVEL not in first["params"]["_meta"]  # no level: no logs (logging.mdx)
    actions = h.client(request(2, "logging/setLevel", {"level": "info"}))
    assert sent(actions, "server") == []  # answered here: the modern era has no setLevel
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    forwarded = one(h.client(request(3, "tools/call", {"name": "t", "arguments": {}})), "server")
    assert forwarded["params"] == {"name": "t", "arguments": {}, "_meta": {
        META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: CLIENT_INFO, META_LOG_LEVEL: "info"}}
    log = {"jsonrpc": "2.0", "method": "notifications/message",
           "params": {"level": "info", "logger": "db", "data": {"rows": 3}}}
    assert sent(h.server(log), "client") == [log]
    # A retried round carries it too.
    h.server(answer(forwarded, {"resultType": "input_required", "requestState": "s"}))
    retry = one(h.advance(1), "server")
    assert level_of(retry) == "info"
    # The bridge's own requests do not: logs never ride on a listen stream.
    subscription = one(h.client(request(4, "resources/subscribe", {"uri": URI})), "server")
    assert META_LOG_LEVEL not in subscription["params"]["_meta"]
    h.server(closed(listen))
    assert META_LOG_LEVEL not in one(h.advance(0.5), "server")["params"]["_meta"]


def test_the_configured_level_is_used_until_set_level() -> None:
    h, _, _ = session(config=CoreConfig(default_log_level="warning"))
    assert level_of(one(h.client(request(1, "prompts/list")), "server")) == "warning"
    h.client(request(2, "logging/setLevel", {"level": "debug"}))
    assert level_of(one(h.client(request(3, "prompts/list")), "server")) == "debug"


def test_an_unknown_level_is_refused_and_changes_nothing() -> None:
    h, _, _ = session(config=CoreConfig(default_log_level="warning"))
    error = one(h.client(request(2, "logging/setLevel", {"level": "verbose"})), "client")
    assert error["id"] == 2 and error["error"]["code"] == -32602
    assert level_of(one(h.client(request(3, "tools/list")), "server")) == "warning"


def test_set_level_without_server_logging_is_served_by_the_bridge() -> None:
    discover = {**FULL, "capabilities": {"tools": {"listChanged": True}}}
    h, listen = opening(discover)
    init = one(h.server(ack(listen, {"toolsListChanged": True})), "client")
    assert init["result"]["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert one(h.client(request(2, "logging/setLevel", {"level": "info"})), "client") == {
        "jsonrpc": "2.0", "id": 2, "result": {}}
    assert level_of(one(h.client(request(3, "tools/list")), "server")) == "info"


# The bridge's own traffic -----------------------------------------------------------------


def test_none_of_the_bridges_own_traffic_reaches_the_client() -> None:
    """A whole session's worth of stream machinery; the client sees only legacy messages."""
    h, listen = opening()
    to_client: list[Message] = []

    def run(actions: list[Any]) -> list[Message]:
        to_client.extend(sent(actions, "client"))
        return sent(actions, "server")

    run(h.server(ack(listen, ALL_LISTS)))
    run(h.client({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    [uri_listen] = run(h.client(request(1, "resources/subscribe", {"uri": URI})))
    run(h.server(ack(uri_listen, {"resourceSubscriptions": [URI]})))
    run(h.server(on_stream(listen, KINDS[0])))
    run(h.server(on_stream(uri_listen, "notifications/resources/updated", uri=URI)))
    run(h.server(closed(listen)))
    run(h.server(server_cancelled(uri_listen)))
    reopened = run(h.advance(0.5))
    assert sorted(m["params"]["notifications"].get("resourceSubscriptions", ["-"])[0]
                  for m in reopened) == ["-", URI]
    for stream in reopened:
        run(h.server(ack(stream, stream["params"]["notifications"])))
    session_2 = next(m for m in reopened if "toolsListChanged" in m["params"]["notifications"])
    run(h.server(on_stream(session_2, KINDS[2])))
    run(h.client(request(2, "resources/unsubscribe", {"uri": URI})))
    run(h.server(server_cancelled(session_2)))
    run(h.advance(0.5))

    assert [m.get("method") or m["id"] for m in to_client] == [
        0, 1, KINDS[0], "notifications/resources/updated", KINDS[2], 2]
    for message in to_client:
        text = repr(message)
        assert "io.modelcontextprotocol" not in text
        assert message.get("method") not in ("notifications/cancelled",
                                             "notifications/subscriptions/acknowledged")
