"""Era detection: the client's from its first message, the server's from the probe."""

from __future__ import annotations

import pytest

from bridge.core.config import CoreConfig
from bridge.core.events import Log, NotifyReady, RestartChild
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    modern,
    modern_meta,
    one,
    request,
    sent,
)


def test_the_probe_is_server_discover_with_the_modern_envelope() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    assert probe["method"] == "server/discover"
    assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert probe["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {}


@pytest.mark.parametrize("error", [
    {"code": -32601, "message": "Method not found"},
    {"code": -32602, "message": "Invalid request parameters"},
    {"code": -32000, "message": "Not initialized"},
    {"code": -32022, "message": "no data"},  # unrecognized shape: not a modern signal
])
def test_any_other_probe_error_means_legacy_and_the_client_initialize_passes(error: dict) -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    actions = h.server({"jsonrpc": "2.0", "id": probe["id"], "error": error})
    forwarded = one(actions, "server")
    assert forwarded["method"] == "initialize"
    assert forwarded["params"]["protocolVersion"] == "2025-06-18"
    assert h.bridge.mode == "P"


def test_silence_means_legacy_after_the_probe_timeout() -> None:
    h = Harness(CoreConfig(probe_timeout=2.0))
    one(h.start(), "server")
    assert sent(h.client(initialize()), "client") == []
    assert h.bridge.mode is None
    actions = h.advance(1.9)
    assert sent(actions, "server") == []
    actions = h.advance(0.2)
    assert one(actions, "server")["method"] == "initialize"
    assert any(isinstance(a, NotifyReady) for a in actions)


def test_unsupported_version_error_with_data_means_modern() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize())
    actions = h.server(fail(probe, -32022, "Unsupported protocol version",
                            {"supported": ["2027-01-01"], "requested": "2026-07-28"}))
    reply = one(actions, "client")
    assert h.bridge.mode == "A"
    assert reply["error"]["code"] == -32602
    assert "2027-01-01" in reply["error"]["message"]


# A probe refused with -32022 (versioning.mdx §Protocol Version Negotiation: retry with a
# version the server lists) ---------------------------------------------------------------

REFUSED_MODERN = {"supported": ["2026-07-28"], "requested": "2026-07-28"}


def retried(h: Harness) -> list[dict]:
    return [log.fields for log in h.logs if log.event == "probe.retried"]


@pytest.mark.parametrize("client", ["legacy", "modern"])
def test_a_probe_refused_with_the_modern_version_listed_is_sent_once_more(client: str) -> None:
    # The conformance suite's request-metadata server refuses the first request whatever it
    # names, listing the version it wants: the bridge asks again, and serves.
    h = Harness(CoreConfig(probe_timeout=5.0))
    probe = one(h.start(), "server")
    first = initialize() if client == "legacy" else request("a", "tools/list",
                                                            {"_meta": modern_meta()})
    h.client(first)
    h.now = 1.0
    actions = h.server(fail(probe, -32022, "Unsupported protocol version", REFUSED_MODERN))
    again = one(actions, "server")
    assert sent(actions, "client") == [] and h.bridge.mode is None
    assert again["method"] == "server/discover" and again["id"] != probe["id"]
    assert again["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert retried(h) == [{"side": "server", "supported": ["2026-07-28"],
                           "version": "2026-07-28"}]
    assert h.bridge.next_deadline() == 6.0  # the retry's own probe_timeout
    actions = h.server(answer(again, DISCOVER_RESULT))
    if client == "legacy":
        assert h.bridge.mode == "A"
        assert one(actions, "client")["result"]["serverInfo"]["name"] == "ModernSrv"
    else:
        assert h.bridge.mode == "P" and one(actions, "server")["method"] == "tools/list"


def test_a_probe_refused_twice_is_not_sent_a_third_time() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize())
    again = one(h.server(fail(probe, -32022, "Unsupported protocol version", REFUSED_MODERN)),
                "server")
    actions = h.server(fail(again, -32022, "Unsupported protocol version", REFUSED_MODERN))
    assert sent(actions, "server") == []
    assert h.bridge.mode == "A" and len(retried(h)) == 1
    reply = one(actions, "client")  # the client is told, as for any modern refusal
    assert reply["id"] == 0 and "2026-07-28" in reply["error"]["message"]


def test_a_probe_refused_with_only_legacy_versions_listed_falls_back_to_initialize() -> None:
    # A dual-era server that does not (or no longer) speak 2026-07-28: a version both speak
    # is a legacy one, so the session is a legacy one.
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    actions = h.server(fail(probe, -32022, "Unsupported protocol version",
                            {"supported": ["2025-11-25", "2025-06-18"],
                             "requested": "2026-07-28"}))
    forwarded = one(actions, "server")
    assert forwarded["method"] == "initialize"
    assert forwarded["params"]["protocolVersion"] == "2025-06-18"
    assert h.bridge.mode == "P" and retried(h) == []
    assert [log.fields["reason"] for log in h.logs
            if log.event == "era.detected" and log.fields["side"] == "server"] == [
        "it refused 2026-07-28 and supports ['2025-11-25', '2025-06-18']"]


def test_a_probe_refused_with_only_legacy_versions_listed_stays_modern_when_pinned() -> None:
    h = Harness(CoreConfig(server_era="modern"))
    probe = one(h.start(), "server")
    h.client(initialize())
    h.server(fail(probe, -32022, "Unsupported protocol version", {"supported": ["2025-11-25"]}))
    assert h.bridge.mode == "A"


def test_a_late_refusal_listing_only_legacy_versions_leaves_the_fallback_as_it_was() -> None:
    h = Harness(CoreConfig(probe_timeout=5.0))
    probe = one(h.start(), "server")
    h.client(initialize())
    assert one(h.advance(5.0), "server")["method"] == "initialize"
    actions = h.server(fail(probe, -32022, "Unsupported protocol version",
                            {"supported": ["2025-11-25"]}))
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert h.bridge.mode == "P" and not [log for log in h.logs
                                         if log.event == "era.corrected"]


def test_a_server_exiting_cleanly_on_the_probe_is_started_once_more_unprobed_as_legacy() -> None:
    h = Harness()
    one(h.start(), "server")
    h.client(initialize())
    actions = h.exit_child(0)
    assert any(isinstance(a, RestartChild) for a in actions)
    assert sent(actions, "client") == []
    actions = h.start()
    assert one(actions, "server")["method"] == "initialize"
    assert h.bridge.mode == "P"
    assert [a for a in actions if isinstance(a, NotifyReady)] == [NotifyReady()]
    assert [(log.fields["attempt"], log.fields["probe"]) for log in h.logs
            if log.event == "child.restarted"] == [(0, False)]


@pytest.mark.parametrize("ending", ["exit", "close"])
def test_a_server_closing_its_output_on_the_probe_is_a_failed_start_at_once(
        ending: str) -> None:
    # Not left to the probe timeout, then sent an initialize it can never answer.
    h = Harness(CoreConfig(probe_timeout=60.0))
    one(h.start(), "server")
    h.client(initialize())
    if ending == "close":
        assert h.close("server") == [Log("warning", "server.closed", {})]
        assert h.bridge.next_deadline() == 1.0  # the wait for its exit, not the probe's
    actions = h.exit_child(0)
    assert [a for a in actions if isinstance(a, RestartChild)] == [RestartChild()]
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert h.bridge.next_deadline() is None  # the probe's timer went with it
    assert one(h.start(), "server")["method"] == "initialize"
    assert h.bridge.mode == "P"


def test_ready_is_told_once_the_first_time_the_bridge_can_serve() -> None:
    h = Harness()
    assert not [a for a in h.start() if isinstance(a, NotifyReady)]
    h.exit_child(0)  # on the probe
    assert [a for a in h.start() if isinstance(a, NotifyReady)] == [NotifyReady()]
    h.server({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})  # it serves
    h.exit_child(1)  # while serving: restarted after its back-off
    actions = h.advance(10)
    assert [a for a in actions if isinstance(a, RestartChild)] == [RestartChild()]
    assert not [a for a in h.start() if isinstance(a, NotifyReady)]


def test_pinned_legacy_skips_the_probe() -> None:
    h = Harness(CoreConfig(server_era="legacy"))
    assert sent(h.start(), "server") == []
    assert one(h.client(initialize()), "server")["method"] == "initialize"


def test_client_messages_during_the_probe_are_queued_in_order() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    meta = modern_meta()
    for n in range(3):
        assert sent(h.client(request(n, "tools/list", {"_meta": meta})), "server") == []
    actions = h.server(answer(probe, DISCOVER_RESULT))
    assert [m["method"] for m in sent(actions, "server")] == ["tools/list"] * 3
    assert h.bridge.mode == "P"


def test_the_first_request_must_reveal_the_era() -> None:
    h = Harness()
    one(h.start(), "server")
    assert one(h.client(request(1, "ping")), "client") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    reply = one(h.client(request(2, "tools/list")), "client")
    assert reply["id"] == 2 and reply["error"]["code"] == -32600
    assert h.bridge.client_era is None


# A late answer overturns the fallback to legacy (stdio.mdx §Backward Compatibility) -------


def late(config: CoreConfig | None = None) -> tuple[Harness, dict]:
    """A bridge whose probe went unanswered for probe_timeout: the server is taken as legacy
    for now. Returns it and the probe."""
    h = Harness(config or CoreConfig(probe_timeout=5.0))
    probe = one(h.start(), "server")
    return h, probe


def corrections(h: Harness) -> list[dict]:
    return [log.fields for log in h.logs if log.event == "era.corrected"]


def test_a_late_discover_result_serves_a_legacy_client_in_mode_a_with_nothing_lost() -> None:
    h, probe = late()
    h.client(initialize())
    forwarded_init = one(h.advance(5.0), "server")  # the fallback: P, legacy
    assert forwarded_init["method"] == "initialize" and h.bridge.mode == "P"
    h.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    forwarded_list = one(h.client(request(1, "tools/list")), "server")
    h.now = 6.0
    actions = h.server(answer(probe, DISCOVER_RESULT))  # the slow modern server's first word
    assert h.bridge.mode == "A"
    reply = one(actions, "client")
    assert reply["id"] == 0 and reply["result"]["serverInfo"]["name"] == "ModernSrv"
    listing = one(actions, "server")
    assert listing["method"] == "tools/list" and listing["id"] not in (
        forwarded_init["id"], forwarded_list["id"])
    assert listing["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert corrections(h) == [{"side": "server", "was": "legacy", "era": "modern",
                               "reason": "a DiscoverResult arrived after the probe's timeout",
                               "after_s": 1.0, "mode": "P", "replayed": 3}]
    # What the modern server says to the legacy-shaped requests is absorbed.
    absorbed = h.server(fail(forwarded_init, -32022, "Unsupported protocol version",
                             {"supported": ["2026-07-28"], "requested": "2025-11-25"}))
    absorbed += h.server(fail(forwarded_list, -32602, "missing _meta"))
    assert sent(absorbed, "client") == [] and sent(absorbed, "server") == []
    tools = {"resultType": "complete", "tools": []}
    assert one(h.server(answer(listing, tools)), "client") == {
        "jsonrpc": "2.0", "id": 1, "result": {"tools": []}}


def test_a_late_discover_result_serves_a_modern_client_in_mode_p() -> None:
    h, probe = late()
    h.client(request("a", "tools/list", {"_meta": modern_meta()}))
    handshake = one(h.advance(5.0), "server")  # the fallback: mode B's own initialize
    assert handshake["method"] == "initialize" and h.bridge.mode == "B"
    actions = h.server(answer(probe, DISCOVER_RESULT))
    assert h.bridge.mode == "P"
    forwarded = one(actions, "server")
    assert forwarded["method"] == "tools/list" and forwarded["id"] != "a"
    assert sent(actions, "client") == []
    assert sent(h.server(fail(handshake, -32022, "Unsupported protocol version",
                              {"supported": ["2026-07-28"]})), "client") == []
    assert one(h.server(answer(forwarded, {"resultType": "complete", "tools": []})),
               "client")["id"] == "a"


def test_a_request_the_fallback_already_answered_is_not_answered_again() -> None:
    h, probe = late()
    h.client(request("a", "tools/list", {"_meta": modern_meta()}))
    h.advance(5.0)  # mode B
    bad = request("bad", "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                                  "2026-07-28"}})
    assert one(h.client(bad), "client")["id"] == "bad"  # refused by mode B at once
    actions = h.server(answer(probe, DISCOVER_RESULT))
    assert [m["id"] != "bad" and m["method"] for m in sent(actions, "server")] == ["tools/list"]
    assert sent(actions, "client") == []
    assert corrections(h)[0]["replayed"] == 1


@pytest.mark.parametrize("client", ["legacy", "modern"])
def test_minus_32022_naming_the_modern_version_to_an_initialize_asks_discover_again(
        client: str) -> None:
    h, _ = late()
    first = initialize() if client == "legacy" else request("a", "tools/list",
                                                            {"_meta": modern_meta()})
    h.client(first)
    init = one(h.advance(5.0), "server")
    assert init["method"] == "initialize"
    actions = h.server(fail(init, -32022, "Unsupported protocol version",
                            {"supported": ["2026-07-28"], "requested": "2025-11-25"}))
    rediscover = one(actions, "server")
    assert rediscover["method"] == "server/discover" and sent(actions, "client") == []
    assert corrections(h)[0]["reason"] == ("it answered initialize with error -32022 naming "
                                           "2026-07-28 as supported")
    actions = h.server(answer(rediscover, DISCOVER_RESULT))
    if client == "legacy":
        assert h.bridge.mode == "A" and one(actions, "client")["id"] == 0
    else:
        assert h.bridge.mode == "P" and one(actions, "server")["method"] == "tools/list"


def test_a_late_legacy_error_to_the_probe_leaves_the_fallback_as_it_was() -> None:
    h, probe = late()
    h.client(initialize())
    init = one(h.advance(5.0), "server")
    actions = h.server(fail(probe, -32601, "Method not found"))
    assert actions == [Log("info", "probe.late_answer", {})]
    result = {"protocolVersion": "2025-11-25", "capabilities": {},
              "serverInfo": {"name": "old", "version": "1"}}
    assert one(h.server(answer(init, result)), "client")["result"] == result
    assert h.bridge.mode == "P" and corrections(h) == []


def test_a_legacy_result_makes_the_fallback_final() -> None:
    h, probe = late()
    h.client(initialize())
    init = one(h.advance(5.0), "server")
    result = {"protocolVersion": "2025-11-25", "capabilities": {},
              "serverInfo": {"name": "dual", "version": "1"}}
    one(h.server(answer(init, result)), "client")
    actions = h.server(answer(probe, DISCOVER_RESULT))  # too late: the session is legacy
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert h.bridge.mode == "P" and corrections(h) == []
    assert h.bridge._detour is False  # the client's messages take the short way again


def test_a_late_discover_result_before_the_client_spoke_chooses_mode_a_once_it_does() -> None:
    h, probe = late()
    h.advance(5.0)
    h.server(answer(probe, DISCOVER_RESULT))
    reply = one(h.client(initialize()), "client")
    assert h.bridge.mode == "A" and reply["result"]["serverInfo"]["name"] == "ModernSrv"
    assert [f["mode"] for f in corrections(h)] == [None]


def test_a_pin_to_modern_that_a_legacy_server_contradicts_is_named_in_the_log() -> None:
    h = Harness(CoreConfig(server_era="modern"))
    probe = one(h.start(), "server")
    h.server(fail(probe, -32601, "Method not found"))
    [line] = [log for log in h.logs if log.event == "era.detected"]
    assert line.level == "warning" and line.fields["era"] == "modern"
    assert line.fields["reason"] == (
        "server_era is pinned to modern, but the server answered server/discover like a "
        "legacy server (error -32601: 'Method not found'); remove --server-era modern (or set "
        'server_era = "auto") to let mcp-rosetta detect the era')


@pytest.mark.parametrize(("client", "mode"), [("legacy", "P"), ("modern", "B")])
def test_roots_unused_outside_mode_b_are_said_once(client: str, mode: str) -> None:
    h = Harness(CoreConfig(roots=("file:///work",)))
    probe = one(h.start(), "server")
    h.client(initialize() if client == "legacy" else request("a", "tools/list",
                                                             {"_meta": modern_meta()}))
    h.server(fail(probe, -32601, "Method not found"))
    assert h.bridge.mode == mode
    warned = [log for log in h.logs if log.event == "roots.unused"]
    assert len(warned) == (mode != "B")
    if warned:
        assert warned[0].level == "warning" and "mode B" in warned[0].fields["reason"]


# A pin to legacy on a modern-only server ------------------------------------------------

MODERN_ONLY = {"supported": ["2026-07-28"]}


def test_a_modern_only_servers_refusal_names_the_pin_to_legacy_and_its_fix() -> None:
    h = Harness(CoreConfig(server_era="legacy"))
    h.start()
    forwarded = one(h.client(initialize()), "server")
    actions = h.server(fail(forwarded, -32022, "Unsupported protocol version", MODERN_ONLY))
    refused = one(actions, "client")
    assert refused["id"] == 0 and refused["error"]["code"] == -32022
    assert refused["error"]["data"] == MODERN_ONLY
    assert refused["error"]["message"].startswith(
        "server_era is pinned to legacy, but the server is modern-only")
    assert "remove --server-era legacy" in refused["error"]["message"]
    assert h.bridge.mode == "P"  # the pin stands: not corrected to modern
    assert [a.fields["reason"] for a in actions if isinstance(a, Log)
            and a.event == "era.pin_refused"] == [
        "the server refused initialize as a modern-only server does"]


def test_a_modern_clients_error_names_the_pin_when_the_bridges_own_initialize_is_refused(
) -> None:
    h = Harness(CoreConfig(server_era="legacy"))
    h.start()
    handshake = one(h.client(modern(1, "tools/list")), "server")
    assert handshake["method"] == "initialize"
    actions = h.server(fail(handshake, -32022, "Unsupported protocol version", MODERN_ONLY))
    refused = one(actions, "client")
    assert refused["id"] == 1
    assert "server_era is pinned to legacy, but the server is modern-only" in \
        refused["error"]["message"]


def test_a_pinned_legacy_server_that_answers_initialize_is_served_as_before() -> None:
    h = Harness(CoreConfig(server_era="legacy"))
    h.start()
    forwarded = one(h.client(initialize()), "server")
    result = {"protocolVersion": "2025-11-25", "capabilities": {},
              "serverInfo": {"name": "s", "version": "1"}}
    assert one(h.server(answer(forwarded, result)), "client")["result"] == result
    assert h.bridge.supervision.verdict.provisional is None
