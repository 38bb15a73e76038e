"""Bridges with an observer (bridge.core.observe), opened in each mode, for the transcript
tests of what an observer counts."""

from __future__ import annotations

from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.observe import Bin, Observer
from tests.core.harness import (
    DISCOVER_RESULT,
    LEGACY_INIT_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    modern,
    one,
    sent,
)

Message = dict[str, Any]
OLD_SERVER = {"protocolVersion": "2025-06-18", "capabilities": {},
              "serverInfo": {"name": "old", "version": "1"}}
"""A legacy server's answer to initialize (mode P relays it to its legacy client)."""


def observed(*, traced: bool = False) -> tuple[Harness, Observer]:
    """A bridge (request_timeout 10 s) whose observer counts; `traced`, it reports spans
    too, so that no exchange claims its request and every request is filed."""
    h = Harness(CoreConfig(request_timeout=10.0), observed=True)
    h.bridge.secret = b"s"  # mode B's requestState key
    observer = h.bridge.observer
    assert observer is not None
    observer.traced = traced
    return h, observer


def legacy_handshake(h: Harness, probe: Message) -> None:
    """Mode B's own handshake with the legacy server whose probe is `probe`: the probe
    refused, initialize answered, the settling ping answered."""
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    _, ping = sent(h.server(answer(init, LEGACY_INIT_RESULT)), "server")
    h.server(answer(ping, {}))


def open_p(h: Harness, version: str = "2025-06-18") -> None:
    """Mode P: a legacy client of `version` initialized through to a legacy server."""
    probe = one(h.start(), "server")
    h.client(initialize(version))
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.server(answer(forwarded, {**OLD_SERVER, "protocolVersion": version}))


def open_a(h: Harness) -> None:
    """Mode A: a legacy client initialized before a modern server."""
    probe = one(h.start(), "server")
    h.client(initialize())
    h.server(answer(probe, DISCOVER_RESULT))


def open_b(h: Harness) -> None:
    """Mode B: a modern client's server/discover before a legacy server."""
    probe = one(h.start(), "server")
    h.client(modern("d1", "server/discover"))
    legacy_handshake(h, probe)


def counted(observer: Observer, method: str) -> dict[Bin, list[float]]:
    """The tally's counts of `method`'s requests, by kind."""
    return {key: counts for key, counts in observer.tally.counts().items() if key[0] == method}
