"""Properties over many generated conversations (Hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.core.codec import RawNumber, encode
from bridge.core.config import CoreConfig
from bridge.core.server_life import EXIT_WAIT_S
from tests.core.harness import (
    DISCOVER_RESULT,
    Harness,
    answer,
    fail,
    initialize,
    mode_a,
    modern_pair,
    one,
    request,
    restarted,
    sent,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# Integers written with a fraction or an exponent are ids too, and come back as they came.
spelled_ids = st.sampled_from(["2.0", "3.00", "1e2", "-4.0E0", "7.50e1"]).map(RawNumber)
ids = st.one_of(st.integers(-(2**40), 2**40), st.text(max_size=6), spelled_ids)
methods = st.sampled_from(
    [
        "tools/list",
        "tools/call",
        "resources/read",
        "prompts/get",
        "completion/complete",
        "resources/list",
        "ping",
    ]
)


def _message_like() -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0"])},
        optional={
            "id": ids | json_values,
            "method": methods | st.text(max_size=10),
            "params": json_values,
            "result": json_values,
            "error": json_values,
        },
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["client", "server"]),
            json_values | _message_like() | st.binary(max_size=30),
        ),
        max_size=12,
    )
)
def test_handle_never_raises_on_arbitrary_input(lines: list[tuple[str, Any]]) -> None:
    h, _ = mode_a()  # the harness asserts that no bridge.error is ever logged
    for side, value in lines:
        raw = value if isinstance(value, bytes) else encode(value).rstrip(b"\n")
        if side == "client":
            h.client(raw)
        else:
            h.server(raw)


LOSSES = st.sampled_from(["exit", "close", "exit+close", "close+exit"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(["A", "P"]),
    calls=st.lists(
        st.tuples(ids, methods), min_size=1, max_size=10, unique_by=lambda c: (type(c[0]), c[0])
    ),
    order=st.randoms(use_true_random=False),
    outcome=st.lists(st.booleans(), min_size=10, max_size=10),
    loss=st.none() | st.tuples(st.integers(0, 10), LOSSES),
)
def test_every_request_gets_exactly_one_response_under_its_own_id(
    mode: str, calls: list[tuple[Any, str]], order: Any, outcome: list[bool],
    loss: tuple[int, str] | None,
) -> None:
    """Also when the server dies mid-session (at call `loss[0]`): what it had is answered
    with an error, what comes meanwhile waits for the new server."""
    h = mode_a()[0] if mode == "A" else modern_pair()
    replies: list[Any] = []
    in_flight: dict[str, Any] = {}

    def run(actions: list[Any]) -> None:
        replies.extend(sent(actions, "client"))
        for forwarded in sent(actions, "server"):
            if forwarded.get("method") == "server/discover":
                continue  # the new server's probe
            assert forwarded["id"] not in in_flight  # no id reused while in flight
            in_flight[forwarded["id"]] = forwarded

    params = {"name": "x"} if mode == "A" else {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}
    def lose(how: str) -> None:
        for word in how.split("+"):
            run(h.exit_child(1) if word == "exit" else h.close("server"))
        if how == "close":  # no exit status follows: the bridge waits a while for one
            run(h.advance(EXIT_WAIT_S))
        in_flight.clear()  # the lost server answers nothing

    for n, (client_id, method) in enumerate(calls):
        if loss is not None and n == loss[0]:
            lose(loss[1])
        run(h.client(request(client_id, method, params)))
    if loss is not None:
        if loss[0] >= len(calls):
            lose(loss[1])
        probe = restarted(h)
        assert probe is not None
        run(h.server(answer(probe, DISCOVER_RESULT)))
    pending = list(in_flight.values())
    order.shuffle(pending)
    for n, forwarded in enumerate(pending):
        reply = (
            answer(forwarded, {"resultType": "complete", "content": []})
            if outcome[n]
            else fail(forwarded, -32000, "boom")
        )
        run(h.server(reply))
    got = sorted((type(r["id"]).__name__, str(r["id"])) for r in replies)
    want = sorted((type(c).__name__, str(c)) for c, _ in calls)
    assert got == want


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    client=st.sampled_from(["legacy", "modern"]),
    calls=st.lists(st.tuples(ids, methods), max_size=8,
                   unique_by=lambda c: (type(c[0]), c[0])),
    fallback_at=st.integers(0, 8),
    order=st.randoms(use_true_random=False),
    outcome=st.lists(st.booleans(), min_size=20, max_size=20),
    bad=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_a_late_modern_answer_leaves_every_request_exactly_one_answer(
    client: str, calls: list[tuple[Any, str]], fallback_at: int, order: Any,
    outcome: list[bool], bad: list[bool],
) -> None:
    """The probe goes unanswered past its timeout (at call `fallback_at`), the client's
    requests reach the handler chosen for a legacy server (mode B refuses the `bad` ones at
    once), then the DiscoverResult comes: whatever the server then answers, old requests or
    new, each client request has one answer."""
    h = Harness(CoreConfig(probe_timeout=5.0))
    replies: list[Any] = []
    to_server: list[Any] = []

    def run(actions: list[Any]) -> None:
        replies.extend(m for m in sent(actions, "client") if "method" not in m)
        to_server.extend(m for m in sent(actions, "server") if "id" in m and "method" in m)

    probe = one(h.start(), "server")
    modern_params = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                               "io.modelcontextprotocol/clientCapabilities": {}}}
    first = initialize(id="init") if client == "legacy" else request(
        "init", "tools/list", modern_params)
    run(h.client(first))
    params = {"name": "x"} if client == "legacy" else modern_params
    for n, (client_id, method) in enumerate(calls):
        if n == fallback_at:
            run(h.advance(5.0))
        unfit = client == "modern" and bad[n]  # no clientCapabilities: -32602 from mode B
        run(h.client(request(client_id, method, {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}} if unfit else params)))
    if fallback_at >= len(calls):
        run(h.advance(5.0))
    run(h.server(answer(probe, DISCOVER_RESULT)))
    assert h.bridge.mode == ("A" if client == "legacy" else "P")
    pending = [m for m in to_server if m["id"] != probe["id"]]
    order.shuffle(pending)
    for n, asked in enumerate(pending):  # the dropped handler's and the new one's alike
        run(h.server(answer(asked, {"resultType": "complete", "content": []}) if outcome[n % 20]
                     else fail(asked, -32000, "boom")))
    got = sorted((type(r["id"]).__name__, str(r["id"])) for r in replies)
    want = sorted([("str", "init"), *((type(c).__name__, str(c)) for c, _ in calls)])
    assert got == want
