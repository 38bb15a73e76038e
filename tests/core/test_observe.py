"""An observing bridge reports each answered client request, and changes nothing it sends."""

from __future__ import annotations

from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.events import Action, Answered
from bridge.core.observe import FOLD_AT, Bin, Tally, error_type
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    modern,
    one,
    request,
    restarted,
    sent,
)

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def facts(actions: list[Action]) -> list[Answered]:
    return [a for a in actions if isinstance(a, Answered)]


def legacy_pair(h: Harness) -> None:
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.now = 0.25
    h.server(answer(forwarded, {"protocolVersion": "2025-06-18", "capabilities": {},
                                "serverInfo": {"name": "old", "version": "1"}}))


def test_mode_p_reports_a_tool_call_with_its_times_tool_and_trace_context() -> None:
    h = Harness(observed=True)
    legacy_pair(h)
    h.now = 1.0
    params = {"name": "weather", "arguments": {"city": "x"},
              "_meta": {"traceparent": TRACE, "tracestate": "k=v"}}
    forwarded = one(h.client(request(7, "tools/call", params)), "server")
    assert forwarded["params"] == params  # the trace context passes untouched
    h.now = 1.5
    actions = h.server(answer(forwarded, {"content": []}))
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    assert facts(actions) == [Answered(("tools/call", "weather", "P", "legacy", "legacy"), 1.0,
                                       1.5, None, (TRACE, "k=v"))]


def test_untraced_it_reports_nothing_and_counts_each_answer_in_its_tally() -> None:
    h = Harness(observed=True)
    observer = h.bridge.observer
    assert observer is not None
    observer.traced = False
    tally = observer.tally
    legacy_pair(h)
    params = {"name": "t", "_meta": {"traceparent": TRACE}}
    for n, seconds in enumerate((0.05, 0.5, 5.0)):
        forwarded = one(h.client(request(n, "tools/call", params)), "server")
        h.now += seconds
        assert facts(h.server(answer(forwarded, {"content": []}))) == []
    forwarded = one(h.client(request(9, "tools/call", params)), "server")
    h.server(fail(forwarded, -32603, "boom"))
    face = ("P", "legacy", "legacy")
    assert tally.counts() == {
        ("initialize", "", None, face): [0, 1, 0, 0.25],
        ("tools/call", "t", None, face): [1, 1, 1, 5.55],
        ("tools/call", "t", "server", face): [1, 0, 0, 0.0]}


def test_the_first_request_held_for_the_mode_is_reported_too() -> None:
    h = Harness(observed=True)
    probe = one(h.start(), "server")
    h.client(initialize("2025-06-18"))
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.now = 0.5
    actions = h.server(answer(forwarded, {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "serverInfo": {"name": "old", "version": "1"}}))
    [fact] = facts(actions)
    assert (fact.request[:2], fact.ended, fact.error_type) == (("initialize", ""), 0.5, None)


def test_a_relayed_server_error_is_of_class_server() -> None:
    h = Harness(observed=True)
    legacy_pair(h)
    forwarded = one(h.client(request("a", "tools/call", {"name": "t"})), "server")
    actions = h.server(fail(forwarded, -32603, "boom"))
    assert [f.error_type for f in facts(actions)] == ["server"]


def test_a_crash_is_of_class_transport_and_a_timeout_of_class_timeout() -> None:
    h = Harness(CoreConfig(request_timeout=10.0), observed=True)
    legacy_pair(h)
    one(h.client(request(1, "tools/call", {"name": "slow"})), "server")
    actions = h.advance(10.0)
    assert [f.error_type for f in facts(actions)] == ["timeout"]
    one(h.client(request(2, "tools/call", {"name": "slow"})), "server")
    actions = h.exit_child(1)
    assert [(f.request[0], f.error_type) for f in facts(actions)] == \
        [("tools/call", "transport")]
    restarted(h)


def test_mode_a_reports_its_mode_and_eras() -> None:
    h = Harness(observed=True)
    probe = one(h.start(), "server")
    h.client(initialize())
    actions = h.server(answer(probe, DISCOVER_RESULT))
    listen = [m for m in sent(actions, "server") if m.get("method") == "subscriptions/listen"]
    assert listen or facts(actions)
    forwarded = one(h.client(request(3, "tools/call", {"name": "t"})), "server")
    [fact] = facts(h.server(answer(forwarded, {"resultType": "complete", "content": []})))
    assert fact.request == ("tools/call", "t", "A", "legacy", "modern")


def test_mode_b_reports_a_refused_envelope_as_the_clients_error() -> None:
    h = Harness(observed=True)
    h.bridge.secret = b"s"
    probe = one(h.start(), "server")
    h.client(modern("d1", "server/discover"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    _, ping = sent(h.server(answer(init, {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "serverInfo": {"name": "o", "version": "1"}})),
                   "server")
    [fact] = facts(h.server(answer(ping, {})))
    assert (fact.request[0], fact.request[2], fact.error_type) == ("server/discover", "B", None)
    bad: dict[str, Any] = modern("x", "tools/list")
    del bad["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    [fact] = facts(h.client(bad))
    assert (fact.request[0], fact.error_type) == ("tools/list", "client")
    assert h.bridge.observer is not None and h.bridge.observer.parked == 0


def test_an_unknown_method_is_reported_as_other() -> None:
    h = Harness(observed=True)
    legacy_pair(h)
    forwarded = one(h.client(request(9, "x/" + "a" * 300)), "server")
    [fact] = facts(h.server(answer(forwarded, {})))
    assert fact.request[0] == "other"


def test_error_classes() -> None:
    own = {"source": "mcp-rosetta"}
    assert error_type({"code": -32602, "message": "bad"}) == "client"
    assert error_type({"code": -32000, "message": "mcp-rosetta: full", "data": None}) == "refused"
    assert error_type({"code": -32603, "message": "mcp-rosetta is shutting down",
                       "data": own}) == "refused"
    assert error_type({"code": -32603, "message": "mcp-rosetta is shutting down: this node "
                                                 "stopped; send the request again",
                       "data": own}) == "refused"
    assert error_type({"code": -32603, "message": "x", "data": {**own, "exitStatus": 1}}) \
        == "transport"
    assert error_type({"code": -32603, "message": "mcp-rosetta: odd", "data": own}) == "bridge"
    assert error_type({"code": -32603, "message": "boom"}) == "server"
    assert error_type("nonsense") == "server"


def test_a_plain_bridge_reports_nothing() -> None:
    h = Harness()
    legacy_pair(h)
    forwarded = one(h.client(request(7, "tools/call", {"name": "t"})), "server")
    assert facts(h.server(answer(forwarded, {"content": []}))) == []


# The W3C trace context in `_meta` passes to the server untouched, in every mode -------------


def test_mode_a_passes_the_trace_context_to_the_modern_server() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize())
    h.server(answer(probe, DISCOVER_RESULT))
    meta = {"traceparent": TRACE, "tracestate": "k=v"}
    forwarded = one(h.client(request(3, "tools/call", {"name": "t", "_meta": meta})), "server")
    assert forwarded["params"]["_meta"]["traceparent"] == TRACE
    assert forwarded["params"]["_meta"]["tracestate"] == "k=v"


def test_mode_b_passes_the_trace_context_to_the_legacy_server() -> None:
    h = Harness()
    h.bridge.secret = b"s"
    probe = one(h.start(), "server")
    h.client(modern("d1", "server/discover"))
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    _, ping = sent(h.server(answer(init, {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "serverInfo": {"name": "o", "version": "1"}})),
                   "server")
    h.server(answer(ping, {}))
    call = modern("c", "tools/call", {"name": "t"}, meta={"traceparent": TRACE,
                                                          "tracestate": "k=v"})
    forwarded = one(h.client(call), "server")
    assert forwarded["params"]["_meta"]["traceparent"] == TRACE
    assert forwarded["params"]["_meta"]["tracestate"] == "k=v"


def test_mode_p_modern_passes_the_trace_context() -> None:
    h = Harness()
    probe = one(h.start(), "server")
    h.client(modern("first", "ping"))
    h.server(answer(one(h.server(answer(probe, DISCOVER_RESULT)), "server"), {}))
    call = modern("c", "tools/call", {"name": "t"}, meta={"traceparent": TRACE})
    forwarded = one(h.client(call), "server")
    assert forwarded["params"]["_meta"]["traceparent"] == TRACE



# The tally: durations appended, their buckets found when read --------------------------------


def test_a_tally_read_counts_each_duration_in_the_bucket_of_the_first_bound_it_is_not_above(
) -> None:
    tally = Tally((0.1, 1.0))
    key: Bin = ("tools/call", "t", None, ("P", "legacy", "legacy"))
    for seconds in (0.1, 0.05, 1.0, 1.5, 0.5, 0.1000001):
        tally.count(key, seconds)
    expected_sum = 0.0
    for seconds in (0.1, 0.05, 1.0, 1.5, 0.5, 0.1000001):
        expected_sum += seconds
    assert tally.counts() == {key: [2, 3, 1, expected_sum]}
    tally.count(key, 2.0)
    tally.count(("ping", "", None, ("P", "legacy", "legacy")), 0.0)
    assert tally.counts() == {key: [2, 3, 2, expected_sum + 2.0],
                              ("ping", "", None, ("P", "legacy", "legacy")): [1, 0, 0, 0.0]}


def test_a_tally_nobody_reads_holds_at_most_fold_at_durations_a_kind() -> None:
    tally = Tally((0.1, 1.0))
    key: Bin = ("ping", "", None, ("A", "legacy", "modern"))
    durations = tally.durations(key)
    for _ in range(FOLD_AT * 3 + 1):
        tally.count(key, 0.5)
        assert len(durations) < FOLD_AT
    assert tally.durations(key) is durations  # the list an observer holds stays the tally's
    assert tally.counts()[key][:3] == [0, FOLD_AT * 3 + 1, 0]


def test_an_observer_given_a_handler_of_other_eras_counts_under_their_labels() -> None:
    h = Harness(observed=True)
    observer = h.bridge.observer
    assert observer is not None and h.bridge.handler is None
    observer.traced = False
    legacy_pair(h)
    for n in range(2):
        if n:  # as a restarted server of the other era would be watched
            observer.watch(h.bridge.handler, h.bridge.ctx, "legacy",  # type: ignore[arg-type]
                           "modern")
        forwarded = one(h.client(request(n, "tools/call", {"name": "t"})), "server")
        h.now += 0.5
        h.server(answer(forwarded, {"content": []}))
    assert {key[3]: counts for key, counts in observer.tally.counts().items()
            if key[1] == "t"} == {("P", "legacy", "legacy"): [0, 1, 0, 0.5],
                                  ("P", "legacy", "modern"): [0, 1, 0, 0.5]}
