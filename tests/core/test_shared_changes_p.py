"""Changes shared between a fleet's nodes before a modern server (mode P, modern peers).

A mode P core with `share_changes` keeps a listen stream of its own at its server (an id the
bridge minted; the client never sees any of it), shares the list changes heard on it
(`ShareChange`) and delivers none of them to its client, whose own listens hear the server.
A change another node shares (`ChangeRelayed`) goes to the client's relayed listen streams
whose acknowledged filter asks for it, tagged with each stream's id as its server would.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.eras import MODERN_PROTOCOL_VERSION
from bridge.core.events import Action
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    modern_pair,
    one,
    restarted,
    sent,
)
from tests.core.test_listen_b import SUB, ack, listen, notify
from tests.core.test_shared_changes import TOOLS, shared

SHARING = CoreConfig(share_changes=True)
ASKED = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
PROMPTS = notify("notifications/prompts/list_changed")


def fleet_pair(config: CoreConfig = SHARING) -> tuple[Harness, Any]:
    """A mode P core between modern peers in a fleet, its client's first request answered;
    and the listen request the bridge opened at its server (`h.minted("own")`)."""
    h = Harness(config)
    probe = one(h.start(), "server")
    h.client(listen("first", toolsListChanged=True))
    own, first = sent(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert own == {"jsonrpc": "2.0", "id": h.minted("own"), "method": "subscriptions/listen",
                   "params": {"notifications": ASKED, "_meta": {
                       "io.modelcontextprotocol/protocolVersion": MODERN_PROTOCOL_VERSION,
                       "io.modelcontextprotocol/clientCapabilities": {},
                       "io.modelcontextprotocol/clientInfo": config.bridge_info}}}
    assert first["method"] == "subscriptions/listen" and first["id"] == h.minted("first")
    told = one(h.server(ack(h.minted("first"), {"toolsListChanged": True})), "client")
    assert told["params"]["_meta"] == {SUB: "first"}
    return h, own


def on_own(h: Harness, method: str, params: dict[str, Any] | None = None) -> list[Action]:
    return h.server(notify(method, {**(params or {}), "_meta": {SUB: h.minted("own")()}}))


def test_the_own_stream_s_changes_are_shared_and_never_told_to_the_client() -> None:
    h, _ = fleet_pair()
    actions = on_own(h, "notifications/subscriptions/acknowledged",
                     {"notifications": {"toolsListChanged": True, "promptsListChanged": True}})
    assert actions and sent(actions, "client") == [] and shared(actions) == []
    actions = on_own(h, TOOLS["method"])
    assert sent(actions, "client") == [] and shared(actions) == [TOOLS]
    # What the server did not acknowledge is not shared; nor what it sends on no filter.
    assert shared(on_own(h, "notifications/resources/list_changed")) == []
    assert shared(on_own(h, "notifications/resources/updated", {"uri": "file:///x"})) == []
    # The client's own stream hears the server itself, and is not shared from.
    actions = h.server(notify(TOOLS["method"], {"_meta": {SUB: h.minted("first")()}}))
    assert sent(actions, "client") == [notify(TOOLS["method"], {"_meta": {SUB: "first"}})]
    assert shared(actions) == []


def test_nothing_is_shared_before_the_acknowledgement() -> None:
    h, _ = fleet_pair()
    actions = on_own(h, TOOLS["method"])
    assert (sent(actions, "client"), shared(actions)) == ([], [])


def test_a_stream_that_would_carry_nothing_is_ended_at_its_acknowledgement() -> None:
    h, own = fleet_pair()
    actions = on_own(h, "notifications/subscriptions/acknowledged", {"notifications": {}})
    assert sent(actions, "server") == [notify("notifications/cancelled", {
        "requestId": own["id"], "reason": "the server tells no list change"})]
    assert sent(actions, "client") == [] and sent(h.advance(60.0), "server") == []
    assert shared(on_own(h, TOOLS["method"])) == []


def test_without_share_changes_no_stream_of_its_own_is_opened() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(listen("first", toolsListChanged=True))
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert forwarded["id"] == h.minted("first")


def test_a_relayed_change_reaches_the_acknowledged_streams_that_asked() -> None:
    h, _ = fleet_pair()
    second = one(h.client(listen(2, promptsListChanged=True)), "server")
    assert sent(h.relayed(PROMPTS), "client") == []  # not acknowledged yet
    one(h.server(ack(second["id"], {"promptsListChanged": True})), "client")
    actions = h.relayed(TOOLS)
    assert [(a.message, a.request) for a in actions if getattr(a, "side", "") == "client"] \
        == [(notify(TOOLS["method"], {"_meta": {SUB: "first"}}), "first")]
    assert sent(h.relayed(PROMPTS), "client") == [
        notify(PROMPTS["method"], {"_meta": {SUB: 2}})]
    assert shared(actions) == [] and sent(actions, "server") == []


def test_a_relayed_change_names_the_stream_it_goes_on_not_the_one_it_came_from() -> None:
    h, _ = fleet_pair()
    change = notify(TOOLS["method"], {"_meta": {SUB: "rosetta-9", "other": 1}})
    assert sent(h.relayed(change), "client") == [
        notify(TOOLS["method"], {"_meta": {"other": 1, SUB: "first"}})]


def test_a_relayed_resource_update_reaches_the_streams_acknowledged_for_its_uri() -> None:
    h, _ = fleet_pair()
    stream = one(h.client(listen("r", resourceSubscriptions=["file:///a"])), "server")
    one(h.server(ack(stream["id"], {"resourceSubscriptions": ["file:///a"]})), "client")
    update = notify("notifications/resources/updated", {"uri": "file:///a"})
    assert sent(h.relayed(update), "client") == [
        notify(update["method"], {"uri": "file:///a", "_meta": {SUB: "r"}})]
    other = notify("notifications/resources/updated", {"uri": "file:///b"})
    assert sent(h.relayed(other), "client") == []


def test_without_share_changes_a_relayed_change_still_reaches_the_streams() -> None:
    h = modern_pair()
    assert h.relayed(TOOLS) == []
    stream = one(h.client(listen(4, toolsListChanged=True)), "server")
    one(h.server(ack(stream["id"], {"toolsListChanged": True})), "client")
    assert sent(h.relayed(TOOLS), "client") == [notify(TOOLS["method"], {"_meta": {SUB: 4}})]


def test_a_stream_the_server_ends_is_opened_again_after_a_back_off() -> None:
    h, own = fleet_pair()
    on_own(h, "notifications/subscriptions/acknowledged", {"notifications": ASKED})
    ended = h.server(answer(own, {"resultType": "complete", "_meta": {SUB: own["id"]}}))
    assert sent(ended, "client") == []
    assert sent(h.advance(0.4), "server") == []
    again = one(h.advance(0.1), "server")
    assert again["method"] == "subscriptions/listen" and again["id"] == h.minted("again")
    assert again["params"] == own["params"]
    # What the old request still carries is the bridge's: never the client's; and its
    # acknowledgement does not stand for the new one's.
    late = h.server(notify(TOOLS["method"], {"_meta": {SUB: own["id"]}}))
    assert (sent(late, "client"), shared(late)) == ([], [])
    h.server(notify("notifications/subscriptions/acknowledged",
                    {"_meta": {SUB: own["id"]}, "notifications": ASKED}))
    late = h.server(notify(TOOLS["method"], {"_meta": {SUB: again["id"]}}))
    assert (sent(late, "client"), shared(late)) == ([], [])
    # Its end by notifications/cancelled (cancellation.mdx) is the bridge's too.
    cancelled = h.server(notify("notifications/cancelled", {"requestId": again["id"]}))
    assert sent(cancelled, "client") == []
    assert one(h.advance(1.0), "server")["id"] == h.minted("third")


def test_a_refused_stream_is_not_opened_again() -> None:
    h, own = fleet_pair()
    assert sent(h.server(fail(own, -32601, "Method not found")), "client") == []
    assert sent(h.advance(60.0), "server") == []
    assert [log.event for log in h.logs if log.event.startswith("listen.")] \
        == ["listen.shared_refused"]


def test_a_restarted_server_gets_a_stream_of_its_own_again() -> None:
    h, own = fleet_pair()
    h.exit_child(1)
    probe = restarted(h)
    assert probe is not None
    reopened = sent(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert [(m["method"], m["params"]["notifications"]) for m in reopened] == [
        ("subscriptions/listen", ASKED), ("subscriptions/listen", {"toolsListChanged": True})]
    mine = reopened[0]["id"]
    assert mine != own["id"] and mine == h.minted("after restart")
    actions = h.server(notify("notifications/subscriptions/acknowledged",
                              {"_meta": {SUB: mine}, "notifications": ASKED}))
    assert sent(actions, "client") == []
    assert shared(h.server(notify(TOOLS["method"], {"_meta": {SUB: mine}}))) == [TOOLS]


def test_the_stream_ends_at_the_server_when_the_bridge_stops() -> None:
    h, own = fleet_pair()
    actions = h.shutdown()
    assert notify("notifications/cancelled", {"requestId": own["id"],
                                              "reason": "mcp-rosetta is stopping"}) \
        in sent(actions, "server")
    # The client's stream ends with the bridge's answer; nothing names the bridge's own.
    assert [m["id"] for m in sent(actions, "client")] == ["first"]


def test_debug_logs_say_why_a_relayed_change_is_dropped() -> None:
    h, _ = fleet_pair(dataclasses.replace(SHARING, debug_logs=True))
    h.relayed(PROMPTS)
    assert [(log.event, log.fields.get("reason")) for log in h.logs[-1:]] == [
        ("notification.dropped", "no listen stream here asked for it")]
