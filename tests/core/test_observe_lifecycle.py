"""What the bridge's lifecycle answers itself, with no handler taking the client's messages,
an observer counts too: a request refused while the bridge stops, a ping before the mode is
known, a request held while the server restarts (timed from when it came), and nothing the
client cancelled while it was held."""

from __future__ import annotations

from typing import Any

from bridge.core.observe import Observer
from tests.core.harness import Harness, answer, fail, one, request, restarted, sent
from tests.core.observed import OLD_SERVER, counted, observed, open_p

Message = dict[str, Any]
FACE = ("P", "legacy", "legacy")


def _opened() -> tuple[Harness, Observer]:
    """Mode P between a legacy client and a legacy server, counting."""
    h, observer = observed()
    open_p(h)
    return h, observer


def test_a_request_refused_while_the_bridge_stops_is_counted_as_refused() -> None:
    h, observer = _opened()
    h.client(request("c1", "tools/call", {"name": "t"}))
    assert sent(h.shutdown(5.0), "client") == []  # c1 is still owed: the bridge drains
    h.now = 2.0
    refusal = one(h.client(request("c2", "tools/call", {"name": "u"})), "client")
    assert refusal["id"] == "c2" and "shutting down" in refusal["error"]["message"]
    assert counted(observer, "tools/call") == {
        ("tools/call", "u", "refused", FACE): [1, 0, 0, 0.0]}
    assert observer.asked == {}  # c1 is its exchange's to count


def test_a_ping_the_bridge_answers_before_the_mode_is_known_is_counted() -> None:
    h, observer = observed(traced=True)
    h.start()
    assert one(h.client(request(1, "ping")), "client") == {"jsonrpc": "2.0", "id": 1,
                                                            "result": {}}
    assert counted(observer, "ping") == {("ping", "", None, ("", "", "")): [1, 0, 0, 0.0]}
    assert observer.asked == {}


def _restarting(h: Harness) -> Message:
    """The server exits at h.now = 1.0, the client asks at once, and the server is started
    again after its back-off; the new server's probe."""
    h.now = 1.0
    h.exit_child(1)
    h.client(request("c3", "tools/call", {"name": "t"}))  # held: no server to take it
    probe = restarted(h)
    assert probe is not None
    return probe


def test_a_request_held_while_the_server_restarts_is_counted_once_from_when_it_came() -> None:
    h, observer = _opened()
    probe = _restarting(h)
    assert list(observer.asked) == ["c3"]
    replayed = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert replayed["method"] == "initialize"
    forwarded = one(h.server(answer(replayed, OLD_SERVER)), "server")
    assert forwarded["params"] == {"name": "t"}
    sent_at = h.now  # after the restart's back-off
    assert sent_at > 1.0
    h.now = sent_at + 1.0
    assert one(h.server(answer(forwarded, {"content": []})), "client")["id"] == "c3"
    [(key, counts)] = counted(observer, "tools/call").items()
    assert key == ("tools/call", "t", None, FACE)
    assert counts[:3] == [0, 0, 1] and counts[3] == sent_at + 1.0 - 1.0
    assert observer.asked == {}


def test_a_request_the_client_cancels_while_it_is_held_is_forgotten() -> None:
    h, observer = _opened()
    probe = _restarting(h)
    assert sent(h.client({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": "c3"}}), "client") == []
    assert observer.asked == {}
    replayed = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert sent(h.server(answer(replayed, OLD_SERVER)), "server") == []  # c3 is not sent
    assert counted(observer, "tools/call") == {}
