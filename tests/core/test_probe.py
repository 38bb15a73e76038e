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
