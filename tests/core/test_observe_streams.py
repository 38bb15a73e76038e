"""A request held open or withdrawn leaves nothing filed for an observer: a listen stream is
claimed by its stream (and claimed again by the handler a restart hands it to), and a
request the client cancels, owed no answer, is forgotten. Each stream's one answer is still
counted once, and a withdrawn request never."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bridge.core.observe import Observer
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    modern,
    one,
    request,
    restarted,
    sent,
)
from tests.core.observed import counted, legacy_handshake, observed, open_a, open_b, open_p

Message = dict[str, Any]
SUB = "io.modelcontextprotocol/subscriptionId"
LISTEN = "subscriptions/listen"


def _modern_server(h: Harness, probe: Message) -> None:
    h.server(answer(probe, DISCOVER_RESULT))


# The modes whose client is modern (it may hold a listen open): how the server comes up, the
# face its requests are counted under, and how a stream ends when the bridge stops (mode P
# cannot give the server's result for it: the client gets the bridge's refusal).
STREAMING: dict[str, tuple[Callable[[Harness, Message], None], tuple[str, str, str],
                           str | None]] = {
    "P-modern": (_modern_server, ("P", "modern", "modern"), "refused"),
    "B": (legacy_handshake, ("B", "modern", "legacy"), None),
}


def _opened(mode: str, traced: bool = False) -> tuple[Harness, Observer]:
    """A bridge in `mode` before its server, counting (and, if `traced`, reporting spans)."""
    h, observer = observed(traced=traced)
    probe = one(h.start(), "server")
    h.client(modern("d1", "server/discover"))
    STREAMING[mode][0](h, probe)
    assert h.bridge.mode == mode[0]
    return h, observer


def _listen(h: Harness, mode: str, id_: object = "L") -> Message | None:
    """The client opens a listen stream at h.now; what the server got for it (P), or None."""
    actions = h.client(modern(id_, LISTEN, {"notifications": {"toolsListChanged": True}}))
    return one(actions, "server") if mode == "P-modern" else None


def _ended(h: Harness, id_: object) -> Message:
    """The client's answer to its listen request `id_` at the bridge's shutdown."""
    [end] = [m for m in sent(h.shutdown(), "client") if m.get("id") == id_]
    return end


@pytest.mark.parametrize("mode", STREAMING)
def test_a_listen_held_open_leaves_nothing_filed_and_its_end_counts_once(mode: str) -> None:
    h, observer = _opened(mode)
    h.now = 1.0
    _listen(h, mode)
    assert observer.asked == {}, "an open stream is looked for in every event's actions"
    h.now = 4.0
    assert _ended(h, "L")["id"] == "L"
    assert observer.asked == {}
    _, face, ended = STREAMING[mode]
    assert counted(observer, LISTEN) == {(LISTEN, "", ended, face): [0, 0, 1, 3.0]}


@pytest.mark.parametrize("mode", STREAMING)
def test_a_listen_handed_over_at_a_restart_is_claimed_again_and_counted_once(
        mode: str) -> None:
    h, observer = _opened(mode)
    h.now = 1.0
    _listen(h, mode)
    h.exit_child(1)
    assert list(observer.asked) == ["L"], "handed over: filed until the next handler claims it"
    probe = restarted(h)
    assert probe is not None
    STREAMING[mode][0](h, probe)
    assert observer.asked == {}
    h.now = 9.0
    assert _ended(h, "L")["id"] == "L"
    _, face, ended = STREAMING[mode]
    assert counted(observer, LISTEN) == {(LISTEN, "", ended, face): [0, 0, 1, 8.0]}


def test_a_listen_its_server_ends_with_a_result_is_counted_once_as_a_result() -> None:
    h, observer = _opened("P-modern")
    h.now = 1.0
    forwarded = _listen(h, "P-modern")
    assert forwarded is not None
    h.now = 1.5
    end = one(h.server(answer(forwarded, {"resultType": "complete",
                                          "_meta": {SUB: forwarded["id"]}})), "client")
    assert end["id"] == "L" and end["result"]["_meta"] == {SUB: "L"}
    assert counted(observer, LISTEN) == {
        (LISTEN, "", None, ("P", "modern", "modern")): [0, 1, 0, 0.5]}
    assert observer.asked == {}


def test_a_listen_its_server_cancels_gets_no_answer_and_is_not_counted() -> None:
    h, observer = _opened("P-modern")
    forwarded = _listen(h, "P-modern")
    assert forwarded is not None
    told = one(h.server({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": forwarded["id"]}}), "client")
    assert told["params"] == {"requestId": "L"}
    assert observer.asked == {}
    assert counted(observer, LISTEN) == {}


# Every mode: how it is opened, and how its client asks.
ASKING: dict[str, tuple[Callable[[Harness], None], Callable[[str, str, Message], Message]]] = {
    "P": (open_p, lambda i, m, p: request(i, m, p)),
    "A": (open_a, lambda i, m, p: request(i, m, p)),
    "B": (open_b, lambda i, m, p: modern(i, m, p)),
}


@pytest.mark.parametrize("traced", [False, True], ids=["counted", "traced"])
@pytest.mark.parametrize("mode", ASKING)
def test_a_request_the_client_cancels_is_forgotten_and_not_counted(
        mode: str, traced: bool) -> None:
    h, observer = observed(traced=traced)  # traced: every request is filed, none claimed
    opened, ask = ASKING[mode]
    opened(h)
    forwarded = one(h.client(ask("c1", "tools/call", {"name": "t"})), "server")
    cancel = one(h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": "c1"}}), "server")
    assert cancel["params"]["requestId"] == forwarded["id"]
    assert observer.asked == {}
    assert sent(h.server(answer(forwarded, {"content": []})), "client") == []
    h.advance(10.0)
    assert counted(observer, "tools/call") == {}


def test_a_listen_the_client_cancels_in_mode_b_is_forgotten_and_not_counted() -> None:
    h, observer = _opened("B")
    _listen(h, "B", 7)
    assert sent(h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 7}}), "client") == []
    assert observer.asked == {}
    assert [m for m in sent(h.shutdown(), "client") if m.get("id") == 7] == []
    assert counted(observer, LISTEN) == {}


def test_a_batch_answer_held_back_before_its_cancellation_is_counted_once() -> None:
    """2025-03-26 batching: an element's answer waits for the whole array; a cancellation that
    comes meanwhile does not unsay it (the client gets it in the array)."""
    h, observer = observed(traced=True)  # every request filed, so the batch hides answers
    open_p(h, "2025-03-26")
    first, second = sent(h.client([request("c1", "tools/call", {"name": "t"}),
                                   request("c2", "tools/call", {"name": "t"})]), "server")
    assert sent(h.server(answer(second, {"content": []})), "client") == []  # held back
    h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": "c2"}})
    array = one(h.server(answer(first, {"content": []})), "client")
    assert [item["id"] for item in array] == ["c2", "c1"]
    [(_, counts)] = counted(observer, "tools/call").items()
    assert counts[:3] == [2, 0, 0]
    assert observer.asked == {}
