"""Transcripts of the client's session re-opened at a restarted server, in every mode, and when
the new server speaks the other era (the mode switches, as at the first start).

The client notices nothing but the list_changed notifications: no second initialize answer, no
second acknowledgement, the same subscriptions, streams and log level.
"""

from __future__ import annotations

from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.eras import META_CLIENT_INFO, META_LOG_LEVEL, META_SUBSCRIPTION_ID
from tests.core.harness import (
    DISCOVER_RESULT,
    LEGACY_INIT_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    legacy_pair,
    mode_a,
    mode_b,
    modern,
    modern_pair,
    one,
    request,
    restarted,
    sent,
)
from tests.core.test_listen_a import (
    ALL_LISTS,
    FULL,
    KINDS,
    URI,
    URI_2,
    ack,
    listen_request,
    on_stream,
    opening,
    quiet,
    session,
    subscribed,
    updated,
)

Message = dict[str, Any]

LEGACY_CAPS = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "logging": {}}
LEGACY_SERVER_INFO = {"name": "old", "version": "1"}


def note(method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def tagged(method: str, subscription: Any) -> Message:
    return note(method, {"_meta": {META_SUBSCRIPTION_ID: subscription}})


def legacy_result(version: str = "2025-06-18", caps: Message | None = None) -> Message:
    return {"protocolVersion": version, "capabilities": LEGACY_CAPS if caps is None else caps,
            "serverInfo": LEGACY_SERVER_INFO}


def refused(probe: Message) -> Message:
    """A legacy server's answer to the probe."""
    return fail(probe, -32601, "Method not found")


def lose_and_restart(h: Harness) -> Message:
    """The server exits; after the back-off a new one starts: its probe."""
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None and probe["method"] == "server/discover"
    return probe


def legacy_client_of_legacy_server() -> Harness:
    """Mode P between legacy peers: initialized, subscribed to URI (URI_2 came and went),
    log level set to warning."""
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18", caps={"roots": {}}))
    forwarded = one(h.server(refused(probe)), "server")
    one(h.server(answer(forwarded, legacy_result())), "client")
    one(h.client(note("notifications/initialized")), "server")
    for n, (method, params) in enumerate([
            ("resources/subscribe", {"uri": URI}), ("resources/subscribe", {"uri": URI_2}),
            ("resources/unsubscribe", {"uri": URI_2}),
            ("logging/setLevel", {"level": "warning"})]):
        forwarded = one(h.client(request(n + 1, method, params)), "server")
        assert one(h.server(answer(forwarded, {})), "client")["id"] == n + 1
    assert h.bridge.mode == "P"
    return h


def modern_listen(id: Any, **wanted: Any) -> Message:
    return modern(id, "subscriptions/listen", {"notifications": wanted})


def acknowledged(listen: Message, **honored: Any) -> Message:
    return note("notifications/subscriptions/acknowledged",
                {"_meta": {META_SUBSCRIPTION_ID: listen["id"]}, "notifications": honored})


# Mode A: legacy client, modern server ------------------------------------------------------


def test_mode_a_reopens_the_streams_the_client_needs_and_announces_every_list() -> None:
    h, _, _ = session()
    subscribed(h)
    assert one(h.client(request(5, "logging/setLevel", {"level": "warning"})), "client") == {
        "jsonrpc": "2.0", "id": 5, "result": {}}
    actions = h.server(answer(lose_and_restart(h), FULL))
    lists, uri = sent(actions, "server")
    assert lists == listen_request(lists, ALL_LISTS)
    assert uri == listen_request(uri, {"resourceSubscriptions": [URI]})
    assert sent(actions, "client") == [note(kind) for kind in KINDS]
    assert quiet(h.server(ack(lists, ALL_LISTS)))  # the client was answered long ago
    assert quiet(h.server(ack(uri, {"resourceSubscriptions": [URI]})))
    assert sent(h.server(on_stream(uri, "notifications/resources/updated", uri=URI)),
                "client") == [updated(URI)]
    assert sent(h.server(on_stream(lists, KINDS[1])), "client") == [note(KINDS[1])]
    forwarded = one(h.client(request(6, "tools/call", {"name": "t"})), "server")
    assert forwarded["params"]["_meta"][META_LOG_LEVEL] == "warning"
    assert forwarded["params"]["_meta"][META_CLIENT_INFO] == {"name": "OldClient",
                                                              "version": "1.0"}


def test_mode_a_asks_the_new_server_only_for_the_lists_the_client_was_told_of() -> None:
    h, _, init = session(honored={"toolsListChanged": True})
    assert init["capabilities"]["tools"] == {"listChanged": True}
    actions = h.server(answer(lose_and_restart(h), FULL))
    lists = one(actions, "server")
    assert lists == listen_request(lists, {"toolsListChanged": True})
    assert sent(actions, "client") == [note("notifications/tools/list_changed")]


def test_mode_a_a_client_told_of_no_list_gets_no_stream_and_no_announcement() -> None:
    h, _ = mode_a()  # the server offers no list changes
    actions = h.server(answer(lose_and_restart(h), FULL))
    assert sent(actions, "server") == [] and sent(actions, "client") == []


def test_mode_a_a_call_in_its_input_loop_fails_and_its_question_is_withdrawn() -> None:
    h, _ = mode_a(caps={"elicitation": {}})
    forwarded = one(h.client(request(7, "tools/call", {"name": "login"})), "server")
    question = {"method": "elicitation/create",
                "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
    asked = one(h.server(answer(forwarded, {"resultType": "input_required",
                                            "inputRequests": {"u": question},
                                            "requestState": "s"})), "client")
    failed, withdrawn = sent(h.exit_child(1), "client")
    assert failed["id"] == 7 and failed["error"]["data"]["exitStatus"] == 1
    assert withdrawn == note("notifications/cancelled", {"requestId": asked["id"],
                                                         "reason": "the call was cancelled"})
    probe = restarted(h)
    assert probe is not None
    h.server(answer(probe, DISCOVER_RESULT))
    assert quiet(h.client(answer(asked, {"action": "accept", "content": {}})))  # too late


def test_mode_a_an_initialize_still_waiting_fails_and_the_client_may_begin_again() -> None:
    h, _ = opening()
    reply = one(h.exit_child(1), "client")
    assert reply["id"] == 0 and reply["error"]["code"] == -32603
    probe = restarted(h)
    assert probe is not None
    assert quiet(h.server(answer(probe, FULL)))
    lists = one(h.client(initialize()), "server")
    assert one(h.server(ack(lists, ALL_LISTS)), "client")["result"]["protocolVersion"] \
        == "2025-11-25"


# Mode B: modern client, legacy server ------------------------------------------------------


def settled_b(h: Harness, probe: Message, init: Message = LEGACY_INIT_RESULT) -> list[Any]:
    """The bridge's own handshake with the new legacy server; the actions that ended it."""
    initialize_request = one(h.server(refused(probe)), "server")
    assert initialize_request["method"] == "initialize"
    initialized, ping = sent(h.server(answer(initialize_request, init)), "server")
    assert initialized == note("notifications/initialized")
    return h.server(answer(ping, {}))


def test_mode_b_redoes_its_handshake_at_once_and_subscribes_again() -> None:
    h, _ = mode_b()
    subscribe = one(h.client(modern_listen(1, toolsListChanged=True,
                                           resourceSubscriptions=[URI])), "server")
    assert one(h.server(answer(subscribe, {})), "client") == acknowledged(
        {"id": 1}, toolsListChanged=True, resourceSubscriptions=[URI])
    h.client(modern_listen("two", promptsListChanged=True))
    actions = settled_b(h, lose_and_restart(h))
    again = one(actions, "server")
    assert again == {"jsonrpc": "2.0", "id": again["id"], "method": "resources/subscribe",
                     "params": {"uri": URI}}
    assert sent(actions, "client") == [tagged("notifications/tools/list_changed", 1),
                                       tagged("notifications/prompts/list_changed", "two")]
    assert sent(h.server(answer(again, {})), "client") == []  # no second acknowledgement
    assert sent(h.server(note("notifications/resources/updated", {"uri": URI})), "client") == [
        note("notifications/resources/updated", {"uri": URI, "_meta": {
            META_SUBSCRIPTION_ID: 1}})]


def test_mode_b_a_stream_not_yet_acknowledged_gets_its_acknowledgement_from_the_new_server(
) -> None:
    h, _ = mode_b()
    one(h.client(modern_listen(1, resourceSubscriptions=[URI])), "server")  # never answered
    actions = settled_b(h, lose_and_restart(h))
    again = one(actions, "server")
    assert sent(actions, "client") == []
    assert sent(h.server(answer(again, {})), "client") == [
        acknowledged({"id": 1}, resourceSubscriptions=[URI])]


def test_mode_b_with_no_stream_the_handshake_waits_for_the_first_request() -> None:
    h, _ = mode_b()
    probe = lose_and_restart(h)
    assert sent(h.server(refused(probe)), "server") == []
    assert one(h.client(modern("d2", "tools/list")), "server")["method"] == "initialize"


def test_mode_b_applies_the_log_level_again_at_the_new_server() -> None:
    h, _ = mode_b()
    level = {META_LOG_LEVEL: "warning"}
    set_level, listed = sent(h.client(modern(1, "tools/list", meta=level)), "server")
    assert set_level["params"] == {"level": "warning"}
    h.server(answer(set_level, {}))
    h.server(answer(listed, {"tools": []}))
    assert sent(h.server(refused(lose_and_restart(h))), "server") == []
    initialize_request = one(h.client(modern(2, "tools/list", meta=level)), "server")
    _, ping = sent(h.server(answer(initialize_request, LEGACY_INIT_RESULT)), "server")
    set_level, listed = sent(h.server(answer(ping, {})), "server")
    assert set_level["params"] == {"level": "warning"} and listed["method"] == "tools/list"


def test_mode_b_a_failed_handshake_ends_the_streams_it_could_not_reopen() -> None:
    h, _ = mode_b()
    h.client(modern_listen(1, toolsListChanged=True))
    initialize_request = one(h.server(refused(lose_and_restart(h))), "server")
    reply = one(h.server(fail(initialize_request, -32600, "no")), "client")
    assert reply["id"] == 1 and reply["error"]["code"] == -32603


# Pass-through, legacy -----------------------------------------------------------------------


def test_mode_p_legacy_replays_the_clients_session_and_absorbs_the_answer() -> None:
    h = legacy_client_of_legacy_server()
    replay = one(h.server(refused(lose_and_restart(h))), "server")
    assert replay == {"jsonrpc": "2.0", "id": replay["id"], "method": "initialize",
                      "params": initialize("2025-06-18", caps={"roots": {}})["params"]}
    assert sent(h.client(request(9, "tools/list")), "server") == []  # waits for the replay
    actions = h.server(answer(replay, legacy_result()))
    initialized, subscribe, set_level, listed = sent(actions, "server")
    assert initialized == note("notifications/initialized")
    assert subscribe["method"] == "resources/subscribe" and subscribe["params"] == {"uri": URI}
    assert set_level["method"] == "logging/setLevel" and set_level["params"] == {
        "level": "warning"}
    assert listed["method"] == "tools/list"
    assert sent(actions, "client") == [note("notifications/tools/list_changed")]
    assert sent(h.server(answer(subscribe, {})), "client") == []
    assert sent(h.server(answer(set_level, {})), "client") == []
    assert one(h.server(answer(listed, {"tools": []})), "client") == {
        "jsonrpc": "2.0", "id": 9, "result": {"tools": []}}


def test_mode_p_legacy_passes_on_what_the_client_said_meanwhile_in_order() -> None:
    h = legacy_client_of_legacy_server()
    h.exit_child(1)
    h.client(note("notifications/roots/list_changed"))
    h.client(request(9, "tools/list"))
    probe = restarted(h)
    assert probe is not None
    replay = one(h.server(refused(probe)), "server")
    sent_next = sent(h.server(answer(replay, legacy_result())), "server")
    assert [m.get("method") for m in sent_next] == [
        "notifications/initialized", "resources/subscribe", "logging/setLevel",
        "notifications/roots/list_changed", "tools/list"]


def test_mode_p_legacy_goes_on_if_the_replay_is_never_answered() -> None:
    h = legacy_client_of_legacy_server()
    one(h.server(refused(lose_and_restart(h))), "server")
    h.client(request(9, "tools/list"))
    actions = h.advance(CoreConfig().handshake_timeout)
    assert [m.get("method") for m in sent(actions, "server")] == [
        "notifications/initialized", "resources/subscribe", "logging/setLevel", "tools/list"]


def test_mode_p_legacy_withdraws_what_the_lost_server_was_asking() -> None:
    h = legacy_client_of_legacy_server()
    asked = one(h.server(request(42, "roots/list")), "client")
    assert sent(h.exit_child(1), "client") == [note("notifications/cancelled", {
        "requestId": asked["id"], "reason": "the server restarted"})]


# Pass-through, modern -----------------------------------------------------------------------


def modern_streams() -> tuple[Harness, Message, Message]:
    """Mode P between modern peers with listen stream "L" acknowledged, and stream 2 not yet."""
    h = modern_pair()
    listen = one(h.client(modern_listen("L", toolsListChanged=True)), "server")
    assert one(h.server(acknowledged(listen, toolsListChanged=True)), "client") == \
        acknowledged({"id": "L"}, toolsListChanged=True)
    pending = one(h.client(modern_listen(2, promptsListChanged=True)), "server")
    return h, listen, pending


def test_mode_p_modern_keeps_listen_streams_open_across_the_restart() -> None:
    h, listen, _ = modern_streams()
    call = one(h.client(modern(5, "tools/call", {"name": "t"})), "server")
    assert call["method"] == "tools/call"
    assert [r["id"] for r in sent(h.exit_child(1), "client")] == [5]  # not the streams
    actions = h.server(answer(lose_and_restart(h), DISCOVER_RESULT))
    again, pending_again = sent(actions, "server")
    assert again == {**modern_listen("L", toolsListChanged=True), "id": again["id"]}
    assert again["id"] != listen["id"]
    assert sent(actions, "client") == [tagged("notifications/tools/list_changed", "L")]
    assert sent(h.server(acknowledged(again, toolsListChanged=True)), "client") == []
    assert sent(h.server(acknowledged(pending_again, promptsListChanged=True)), "client") == [
        acknowledged({"id": 2}, promptsListChanged=True)]
    assert sent(h.server(tagged("notifications/tools/list_changed", again["id"])), "client") == [
        tagged("notifications/tools/list_changed", "L")]
    end = {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: again["id"]}}
    assert one(h.server(answer(again, end)), "client") == {"jsonrpc": "2.0", "id": "L", "result": {
        "resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: "L"}}}


def test_mode_p_modern_listen_streams_are_not_requests_a_timeout_ends() -> None:
    h = Harness(CoreConfig(request_timeout=5.0, drain_timeout=1.0))
    probe = one(h.start(), "server")
    h.client(modern_listen("L", toolsListChanged=True))
    listen = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    h.server(acknowledged(listen, toolsListChanged=True))
    assert sent(h.advance(60), "client") == []
    actions = h.close("client")  # nothing owed: an open stream is not a call in flight
    assert [r["id"] for r in sent(actions, "client")] == ["L"]


# The new server speaks the other era ------------------------------------------------------


def test_mode_a_becomes_mode_p_with_the_clients_own_initialize_replayed() -> None:
    h, _, _ = session()
    subscribed(h)
    one(h.client(request(5, "logging/setLevel", {"level": "warning"})), "client")
    replay = one(h.server(refused(lose_and_restart(h))), "server")
    assert h.bridge.mode == "P"
    assert replay["method"] == "initialize" and replay["params"] == initialize()["params"]
    actions = h.server(answer(replay, legacy_result("2025-11-25")))
    assert [(m.get("method"), m.get("params")) for m in sent(actions, "server")] == [
        ("notifications/initialized", None), ("resources/subscribe", {"uri": URI}),
        ("logging/setLevel", {"level": "warning"})]
    assert sent(actions, "client") == [note(kind) for kind in KINDS]
    assert sent(h.server(note("notifications/resources/updated", {"uri": URI})), "client") == [
        updated(URI)]


def test_mode_p_legacy_becomes_mode_a_with_the_clients_session() -> None:
    h = legacy_client_of_legacy_server()
    actions = h.server(answer(lose_and_restart(h), FULL))
    assert h.bridge.mode == "A"
    lists, uri = sent(actions, "server")
    assert lists == listen_request(lists, {"toolsListChanged": True}, caps={"roots": {}})
    assert uri == listen_request(uri, {"resourceSubscriptions": [URI]}, caps={"roots": {}})
    assert sent(actions, "client") == [note("notifications/tools/list_changed")]
    forwarded = one(h.client(request(9, "tools/call", {"name": "t"})), "server")
    assert forwarded["params"]["_meta"][META_LOG_LEVEL] == "warning"
    title = {"resultType": "complete", "content": [{"type": "text", "text": "x", "_meta": {}}]}
    # shaped for the revision the client negotiated (2025-06-18 keeps content _meta)
    assert one(h.server(answer(forwarded, title)), "client")["result"] == {
        "content": [{"type": "text", "text": "x", "_meta": {}}]}
    assert one(h.client(initialize()), "client")["error"]["message"] == "Already initialized"


def test_mode_b_becomes_mode_p_with_the_streams_reopened_as_they_came() -> None:
    h, _ = mode_b()
    subscribe = one(h.client(modern_listen(1, toolsListChanged=True,
                                           resourceSubscriptions=[URI])), "server")
    h.server(answer(subscribe, {}))
    actions = h.server(answer(lose_and_restart(h), DISCOVER_RESULT))
    assert h.bridge.mode == "P"
    again = one(actions, "server")
    assert again == {**modern_listen(1, toolsListChanged=True, resourceSubscriptions=[URI]),
                     "id": again["id"]}
    assert sent(actions, "client") == [tagged("notifications/tools/list_changed", 1)]
    assert sent(h.server(acknowledged(again, toolsListChanged=True)), "client") == []


def test_mode_p_modern_becomes_mode_b_with_its_own_handshake_at_once() -> None:
    h, _, _ = modern_streams()
    actions = settled_b(h, lose_and_restart(h))
    assert h.bridge.mode == "B"
    assert sent(actions, "server") == []  # no URI to subscribe to
    assert sent(actions, "client") == [tagged("notifications/tools/list_changed", "L"),
                                       acknowledged({"id": 2}, promptsListChanged=True)]
    assert sent(h.server(note("notifications/tools/list_changed")), "client") == [
        tagged("notifications/tools/list_changed", "L")]


# A restarted server slower than the probe -------------------------------------------------


def test_a_restarted_server_found_modern_late_re_opens_the_legacy_session_in_mode_a() -> None:
    h, _ = legacy_pair()
    h.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    replayed = one(h.advance(5.0), "server")  # taken as legacy: P replays the initialize
    assert replayed["method"] == "initialize" and h.bridge.mode == "P"
    assert sent(h.client(request(7, "tools/list")), "server") == []  # held meanwhile
    actions = h.server(answer(probe, DISCOVER_RESULT))
    assert h.bridge.mode == "A"
    listing = one(actions, "server")
    assert listing["method"] == "tools/list"
    assert listing["params"]["_meta"][META_CLIENT_INFO] == {"name": "OldClient", "version": "1.0"}
    assert sent(actions, "client") == []  # the session is the client's own still
    assert sent(h.server(fail(replayed, -32022, "Unsupported protocol version",
                              {"supported": ["2026-07-28"]})), "client") == []
    assert one(h.server(answer(listing, {"resultType": "complete", "tools": []})),
               "client") == {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
