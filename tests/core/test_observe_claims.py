"""An exchange that relays the server's answer counts it itself: in every mode, a result, a
server's error, a request_timeout and a lost server are each counted once, under the
request's kind and with its time since it came; no request stays filed while it waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bridge.core.observe import Bin, Observer
from tests.core.harness import Harness, answer, fail, modern, one, request
from tests.core.observed import counted, observed, open_a, open_b, open_p

Message = dict[str, Any]


# Each mode: how it is opened, its face, how its client asks, and a result of its server.
MODES: dict[str, tuple[Callable[[Harness], None], tuple[str, str, str],
                       Callable[[str, str, Message], Message], Message]] = {
    "P": (open_p, ("P", "legacy", "legacy"), lambda i, m, p: request(i, m, p),
          {"content": []}),
    "A": (open_a, ("A", "legacy", "modern"), lambda i, m, p: request(i, m, p),
          {"resultType": "complete", "content": []}),
    "B": (open_b, ("B", "modern", "legacy"), lambda i, m, p: modern(i, m, p),
          {"content": []}),
}


def _opened(mode: str) -> tuple[Harness, Observer]:
    h, observer = observed()  # counting only: the exchanges count their results
    MODES[mode][0](h)
    return h, observer


def _asked(h: Harness, mode: str, method: str = "tools/call",
           params: Message | None = None) -> Message:
    """The client asks at h.now = 1.0; the request as the server gets it."""
    h.now = 1.0
    ask = MODES[mode][2]
    forwarded = one(h.client(ask("c1", method, params or {"name": "t"})), "server")
    assert h.bridge.observer is not None and h.bridge.observer.asked == {}, (
        "a request its exchange counts stays unfiled")
    return forwarded


def _counted(observer: Observer) -> dict[Bin, list[float]]:
    return counted(observer, "tools/call")


@pytest.mark.parametrize("mode", MODES)
def test_a_result_is_counted_by_its_exchange(mode: str) -> None:
    h, observer = _opened(mode)
    forwarded = _asked(h, mode)
    h.now = 1.5
    reply = one(h.server(answer(forwarded, MODES[mode][3])), "client")
    assert reply["id"] == "c1" and "result" in reply
    assert _counted(observer) == {("tools/call", "t", None, MODES[mode][1]): [0, 1, 0, 0.5]}
    assert observer.asked == {}


@pytest.mark.parametrize("mode", MODES)
def test_a_servers_error_is_counted_once_as_the_servers(mode: str) -> None:
    h, observer = _opened(mode)
    forwarded = _asked(h, mode)
    h.now = 1.25
    reply = one(h.server(fail(forwarded, -32603, "boom")), "client")
    assert reply["id"] == "c1" and "error" in reply
    assert _counted(observer) == {("tools/call", "t", "server", MODES[mode][1]):
                                  [0, 1, 0, 0.25]}
    assert observer.asked == {}


@pytest.mark.parametrize("mode", MODES)
def test_a_request_timeout_is_counted_once_as_a_timeout(mode: str) -> None:
    h, observer = _opened(mode)
    _asked(h, mode)
    h.now = 1.0
    reply = one(h.advance(10.0), "client")
    assert reply["id"] == "c1" and "error" in reply
    assert _counted(observer) == {("tools/call", "t", "timeout", MODES[mode][1]):
                                  [0, 0, 1, 10.0]}
    assert observer.asked == {}


@pytest.mark.parametrize("mode", MODES)
def test_a_lost_server_is_counted_once_as_transport(mode: str) -> None:
    h, observer = _opened(mode)
    _asked(h, mode)
    h.now = 3.0
    reply = one(h.exit_child(1), "client")
    assert reply["id"] == "c1" and "error" in reply
    assert _counted(observer) == {("tools/call", "t", "transport", MODES[mode][1]):
                                  [0, 0, 1, 2.0]}
    assert observer.asked == {}


def test_mode_b_counts_a_forwarded_request_that_is_not_a_call() -> None:
    h, observer = _opened("B")
    forwarded = _asked(h, "B", "resources/list", {})
    h.now = 1.05
    h.server(answer(forwarded, {"resources": []}))
    [(key, counts)] = counted(observer, "resources/list").items()
    assert key == ("resources/list", "", None, ("B", "modern", "legacy"))
    assert counts[:3] == [1, 0, 0] and counts[3] == pytest.approx(0.05)


def test_mode_b_counts_an_input_round_and_its_retry_once_each() -> None:
    h, observer = _opened("B")
    caps = {"elicitation": {"form": {}}}
    h.now = 1.0
    legacy = one(h.client(modern("c1", "tools/call", {"name": "t"}, caps=caps)), "server")
    h.server(request(42, "elicitation/create", {"message": "Name?", "requestedSchema": {
        "type": "object", "properties": {}}}))
    round_ = one(h.advance(0.25), "client")  # the park window's end: an input round
    assert round_["id"] == "c1" and round_["result"]["resultType"] == "input_required"
    h.now = 2.0
    retry = modern("c2", "tools/call", {
        "name": "t", "inputResponses": {"q1": {"action": "accept", "content": {}}},
        "requestState": round_["result"]["requestState"]}, caps=caps)
    assert one(h.client(retry), "server")["id"] == 42
    h.now = 2.5
    assert one(h.server(answer(legacy, {"content": []})), "client")["id"] == "c2"
    assert _counted(observer) == {("tools/call", "t", None, ("B", "modern", "legacy")):
                                  [0, 2, 0, 0.75]}
    assert observer.asked == {}
