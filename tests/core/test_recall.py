"""The era remembered per server command: learned from a legacy server's answer to
`initialize`, used to skip the probe at the next start, forgotten when the server answers
otherwise (another name or version, a refusal, a modern answer)."""

from __future__ import annotations

from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.events import Action, Remember
from bridge.core.recall import Recall, identity
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    modern,
    one,
    sent,
)

SERVER = {"name": "plain", "version": "1.30.0"}
RESULT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": SERVER}


def remembered(actions: list[Action]) -> list[Remember]:
    return [action for action in actions if isinstance(action, Remember)]


def logged(h: Harness, event: str) -> list[dict[str, Any]]:
    return [log.fields for log in h.logs if log.event == event]


def test_a_legacy_servers_answer_to_initialize_is_remembered_with_its_name() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.server(fail(probe, -32601, "Method not found"))
    forwarded = one(h.client(initialize()), "server")
    actions = h.server(answer(forwarded, RESULT))
    assert one(actions, "client")["result"] == RESULT
    assert remembered(actions) == [
        Remember("legacy", SERVER, "it answered initialize as a legacy server")]
    assert not h.bridge._detour  # the hot path is back


def test_the_bridges_own_handshake_for_a_modern_client_teaches_it_too() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.server(fail(probe, -32601, "Method not found"))
    handshake = one(h.client(modern(1, "tools/list")), "server")
    assert handshake["method"] == "initialize"  # mode B's own
    assert [r.server for r in remembered(h.server(answer(handshake, RESULT)))] == [SERVER]


def test_a_server_silent_to_the_probe_is_remembered_once_it_answers_initialize() -> None:
    h = Harness(CoreConfig(probe_timeout=2.0))
    one(h.start(), "server")
    h.client(initialize())
    forwarded = one(h.advance(2.0), "server")
    assert [r.server for r in remembered(h.server(answer(forwarded, RESULT)))] == [SERVER]


def test_a_remembered_server_is_not_probed_and_its_same_name_keeps_the_memory() -> None:
    h = Harness(CoreConfig(remembered=SERVER))
    assert sent(h.start(), "server") == []
    assert [f["reason"] for f in logged(h, "era.detected") if f["side"] == "server"] == [
        "remembered from an earlier start"]
    forwarded = one(h.client(initialize()), "server")
    actions = h.server(answer(forwarded, RESULT))
    assert one(actions, "client")["result"] == RESULT
    assert remembered(actions) == []
    assert h.bridge.supervision.verdict.provisional is None and not h.bridge._detour


def test_another_version_than_remembered_forgets_it_for_the_next_start() -> None:
    h = Harness(CoreConfig(remembered={"name": "plain", "version": "1.29.0"}))
    h.start()
    forwarded = one(h.client(initialize()), "server")
    actions = h.server(answer(forwarded, RESULT))
    assert one(actions, "client")["result"] == RESULT  # served all the same
    assert remembered(actions) == [Remember(None, reason=(
        "it names itself {'name': 'plain', 'version': '1.30.0'}, not "
        "{'name': 'plain', 'version': '1.29.0'}"))]


def test_a_remembered_server_now_modern_is_corrected_and_forgotten() -> None:
    h = Harness(CoreConfig(remembered=SERVER))
    h.start()
    forwarded = one(h.client(initialize()), "server")
    actions = h.server(fail(forwarded, -32022, "Unsupported protocol version",
                            {"supported": ["2026-07-28"]}))
    assert remembered(actions) == [
        Remember(None, reason="it refused initialize as a modern server does")]
    assert [f["was"] for f in logged(h, "era.corrected")] == ["legacy"]
    probe = one(actions, "server")  # asked again what the modern server offers
    assert probe["method"] == "server/discover"
    h.server(answer(probe, DISCOVER_RESULT))
    assert h.bridge.mode == "A"


def test_a_pin_leaves_the_memory_unused() -> None:
    pinned = Harness(CoreConfig(server_era="modern", remembered=SERVER))
    assert one(pinned.start(), "server")["method"] == "server/discover"
    legacy = Harness(CoreConfig(server_era="legacy", remembered=SERVER))
    legacy.start()
    forwarded = one(legacy.client(initialize()), "server")
    assert remembered(legacy.server(answer(forwarded, RESULT))) == []


def test_a_modern_server_is_not_remembered() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    actions = h.server(answer(probe, DISCOVER_RESULT))
    actions += h.client(modern(1, "tools/list"))
    assert remembered(actions) == [] and not h.bridge.supervision.recall.watching


def test_identity_is_serverinfos_name_and_version_only() -> None:
    assert identity({"serverInfo": {"name": "n", "version": "2", "title": "T"}}) == {
        "name": "n", "version": "2"}
    assert identity({"serverInfo": "nameless"}) == {}
    assert identity(None) == {}


def test_a_refusal_forgets_only_a_memory_that_was_used() -> None:
    fresh = Recall(None)
    fresh.settled_legacy()
    assert fresh.answered({"error": {"code": -32603, "message": "x"}}) is None
    used = Recall(SERVER)
    assert used.skips_probe()
    used.settled_legacy()
    assert used.answered({"error": {"code": -32603, "message": "x"}}) == Remember(
        None, reason="it refused initialize")
    assert not used.skips_probe()  # a restart in this session probes again
