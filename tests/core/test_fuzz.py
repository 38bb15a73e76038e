"""Fuzzing the core with mutated valid messages of every method, on each face, in every mode.

One side of a realistic session (fuzz_peers.py) sends valid messages with fields mutated
(wrong types, huge and negative integers, ids spelled with a fraction, deep values, missing
and extra keys), too long to be read (the bridge sees only their first bytes), or with bytes
that are not UTF-8; the other side stays valid. Now and then the server dies mid-session
(exits, closes its output, or both) and the one restarted in its place may speak the other
era. Whatever
arrives, `handle` never raises and never needs its catch-all guard (the harness fails on any
`bridge.error` log), everything sent can be written, and every client request gets exactly
one answer (a response, or the end of a listen stream) by the time the bridge stops.

The default run is short (15 examples per mode and face). The long run, outside the default
test command:

    MCP_ROSETTA_FUZZ=6500 python -m pytest tests/core/test_fuzz.py -q

runs that many examples per mode and face (over 100 000 mutated inputs per face, about 8
minutes here) and prints how many mutated inputs each face got.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.core.eras import LEGACY_PROTOCOL_VERSIONS
from tests.core.fuzz_peers import Session

LONG_RUN = int(os.environ.get("MCP_ROSETTA_FUZZ", "0"))
MODES = {"A": ("legacy", "modern"), "B": ("modern", "legacy"),
         "P-legacy": ("legacy", "legacy"), "P-modern": ("modern", "modern")}
TOTALS: dict[str, Any] = {"client": 0, "server": 0, "examples": 0, "started": time.monotonic()}

KEYS = ["id", "method", "params", "result", "error", "jsonrpc", "_meta", "progressToken",
        "requestState", "inputResponses", "resultType", "inputRequests", "level", "uri",
        "cursor", "name", "arguments", "code", "message", "data", "capabilities",
        "protocolVersion", "requestId", "reason", "notifications", "mode", "url",
        "elicitationId", "messages", "content", "roots", "action", "supportedVersions",
        "supported", "structuredContent", "contents", "tools", "progress",
        "io.modelcontextprotocol/logLevel", "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/subscriptionId", "io.modelcontextprotocol/serverInfo"]
# Numbers orjson cannot hold, sent as their JSON text (the test's own encoder is orjson).
RAW = [b"9223372036854775808", b"-9223372036854775809", b"18446744073709551615",
       b"18446744073709551616", b"-18446744073709551616", b"-18446744073709551617",
       b"1" + b"0" * 60, b"-" + b"7" * 80, b"9" * 5000, b"-" + b"9" * 4400, b"1e400",
       b"-1e400", b'"\\ud800"', b'"\\udfff x"']
BAD_UTF8 = [b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xe2\x82"]
# Numbers spelled with a fraction or an exponent: integers (valid ids) and not.
NUMBERS = [b"2.0", b"2.00", b"3e0", b"-1.0E+2", b"2.5", b"1e-400", b"2.0000000000000001"]
DEPTHS = [2, 50, 197, 198, 199, 200, 201, 254, 300, 1100]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([0, -1, 1, 2**53, -(2**63), 2**63 - 1, 2**64 - 1]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(RAW).map(orjson.Fragment),
    st.sampled_from(NUMBERS).map(orjson.Fragment),
    st.text(max_size=8), st.sampled_from(["", "2026-07-28", "2025-03-26", "rosetta-1", "info",
                                          "input_required", "complete", "tools/call",
                                          "elicitation/create", "url", "2.0"]),
)
odd_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=3), max_leaves=6)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _nest(depth: int, inner: Any) -> Any:
    """`inner` under `depth` levels of arrays and objects, as JSON text."""
    opens = b"".join(b"[" if n % 2 else b'{"k":' for n in range(depth))
    closes = b"".join(b"]" if n % 2 else b"}" for n in reversed(range(depth)))
    return orjson.Fragment(opens + orjson.dumps(inner) + closes)


def mutate(data: st.DataObject, message: Any) -> Any:
    """`message` with one to three fields mutated."""
    root = {"": orjson.loads(orjson.dumps(message))}  # a copy, under a handle for the root
    for _ in range(data.draw(st.integers(1, 3))):
        path = ("", *data.draw(st.sampled_from(list(_paths(root[""])))))
        parent = root
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        op = data.draw(st.sampled_from(["replace", "replace", "delete", "add", "wrap", "deepen"]))
        if op == "replace":
            parent[key] = data.draw(odd_values)
        elif op == "delete" and len(path) > 1:
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][data.draw(st.sampled_from(KEYS))] = data.draw(odd_values)
        elif op == "wrap":
            parent[key] = data.draw(st.sampled_from([[parent[key]], {"x": parent[key]}]))
        elif op == "deepen":
            parent[key] = _nest(data.draw(st.sampled_from(DEPTHS)), parent[key])
    return root[""]


def _step(session: Session, face: str, data: st.DataObject) -> None:
    roll = data.draw(st.integers(0, 21))
    if roll < 2 or (roll == 21 and not session.restarting):
        session.observe(session.h.advance(data.draw(st.sampled_from([0.005, 0.05, 1, 31, 900]))))
        return
    if roll == 21:
        session.start_server()
        return
    if roll == 20:  # the server dies mid-session; the next may speak the other era
        session.lose_server(data.draw(st.sampled_from(["exit", "close", "exit+close",
                                                       "close+exit"])), data.draw(st.booleans()))
        return
    side = face if roll < 14 else ("server" if face == "client" else "client")
    moves = session.client_moves() if side == "client" else session.server_moves()
    if not moves:
        return
    message = moves[data.draw(st.integers(0, len(moves) - 1))]()
    if side == "client" and session.version == "2025-03-26" and session.h.bridge.mode \
            and data.draw(st.integers(0, 4)) == 0:
        extra = session.client_moves()
        message = [message, *(extra[data.draw(st.integers(0, len(extra) - 1))]()
                              for _ in range(data.draw(st.integers(1, 3))))]
    if side != face or roll == 3:  # the fuzzed side too sends valid messages now and then
        session.feed(side, message)
        return
    TOTALS[face] += 1
    if roll == 2:  # too long to be read: the bridge sees only its first bytes
        session.feed_too_large(side, message, data.draw(st.floats(0, 1)))
    elif roll == 4:  # not UTF-8: a byte no UTF-8 text has, somewhere in the line
        line = orjson.dumps(mutate(data, message))
        at = data.draw(st.integers(0, len(line)))
        session.feed_line(side, line[:at] + data.draw(st.sampled_from(BAD_UTF8)) + line[at:])
    else:
        session.feed(side, mutate(data, message))


def _opened(mode: str, face: str, data: st.DataObject) -> Session:
    """A session in `mode` after its valid opening; "before": one whose opening is fuzzed."""
    client_era, server_era = MODES[mode] if mode in MODES else data.draw(
        st.sampled_from(list(MODES.values())))
    version = data.draw(st.sampled_from(LEGACY_PROTOCOL_VERSIONS))
    session = Session(client_era, server_era, version, data.draw(st.integers(0, 2**32)))
    session.observe(session.h.start())
    if mode in MODES:
        session.feed("client", session.opening())
        session.settle()
        assert session.h.bridge.mode == mode[0], session.h.logs
        return session
    opening: list[tuple[str, Any]] = [("client", session.opening()),
                                      ("server", session.probe_answer())]
    if data.draw(st.booleans()):
        opening.reverse()
    for side, message in opening:
        if side == face:
            message = mutate(data, message)
            TOTALS[face] += 1
        session.feed(side, message)
    return session


def _finish(session: Session, data: st.DataObject, valid: bool) -> None:
    """End the session as it may end: shutdown, the client closing, or the server exiting;
    `valid`: its client sent only valid messages, all in one mode."""
    ending = data.draw(st.sampled_from(["shutdown", "client closes", "server exits"]))
    if ending == "client closes":
        session.client_closed = True
        session.observe(session.h.close("client"))
    session.settle()
    if ending == "server exits":
        session.observe(session.h.exit_child(1))
    session.observe(session.h.advance(10_000))  # every timeout fires
    session.observe(session.h.shutdown())  # every request still waiting is answered
    assert session.unanswered() == {}, session.h.logs[-12:]
    assert session.miscounted(every=valid) is None, session.h.logs[-12:]  # see there


def report(reporter: Any) -> None:
    """The long run's figures, for the terminal summary (tests/core/conftest.py)."""
    if LONG_RUN and TOTALS["examples"]:
        elapsed = time.monotonic() - TOTALS["started"]
        reporter.write_line(f"fuzz: {TOTALS['examples']} examples, mutated inputs per face: "
                            f"client {TOTALS['client']}, server {TOTALS['server']}, "
                            f"{elapsed:.0f} s")


@pytest.mark.parametrize("face", ["client", "server"])
@pytest.mark.parametrize("mode", ["before", *MODES])
@settings(max_examples=LONG_RUN or 15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_messages_never_break_the_bridge(mode: str, face: str,
                                                 data: st.DataObject) -> None:
    TOTALS["examples"] += 1
    session = _opened(mode, face, data)
    for _ in range(data.draw(st.integers(1, 12))):
        _step(session, face, data)
    _finish(session, data, valid=face == "server" and mode in MODES)
