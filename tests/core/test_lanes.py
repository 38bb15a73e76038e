"""Every mode's lane (core/lane.py, relay/lane.py) does what the full path does: on generated
scripts of messages from both peers, in every mode, with and without a request timeout and
debug logs, a Bridge that takes the lane and one made to take the full path every time produce
the same actions at every step and are left with the same requests in flight."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.core.bridge import Bridge
from bridge.core.codec import encode
from bridge.core.config import CoreConfig
from bridge.core.eras import META_LOG_LEVEL, META_SUBSCRIPTION_ID
from bridge.core.events import (
    Action,
    ChildStarted,
    Log,
    MessageReceived,
    Send,
    Spliced,
    TimerFired,
)
from tests.core.harness import DISCOVER_RESULT, LEGACY_INIT_RESULT, modern_meta

Message = dict[str, Any]
# ("client" | "server", line), ("advance", seconds), or ("reply", (n, result)): the server
# answers its n-th request in flight (the common round trip, which random ids seldom hit).
Step = tuple[str, Any]

_IDS = st.one_of(st.integers(-3, 9), st.sampled_from(["a", "b", "rosetta-2"]),
                 st.just(2.0), st.just(True), st.none())
_MINTED = st.builds(lambda n: f"rosetta-{n}", st.integers(1, 6))
_METHODS = st.sampled_from(["tools/call", "initialize", "logging/setLevel",
                            "resources/subscribe", "resources/unsubscribe",
                            "subscriptions/listen", "ping", "tools/list", "resources/read"])
# A modern envelope (mode B serves only requests with one), declaring sampling or nothing.
_ENVELOPE = st.builds(modern_meta, st.sampled_from([{}, {"sampling": {}}]))
_META = st.one_of(st.just({}), st.builds(lambda t: {"progressToken": t}, _IDS),
                  st.just({META_LOG_LEVEL: "info"}), st.just("not an object"), _ENVELOPE,
                  st.builds(lambda meta, t: {**meta, "progressToken": t}, _ENVELOPE, _IDS))
_PARAMS = st.one_of(
    st.just({"name": "echo", "arguments": {"text": "hi"}}), st.just({"level": "debug"}),
    st.just({"uri": "file:///a"}), st.just(None), st.just([1]),
    st.builds(lambda meta: {"name": "echo", "_meta": meta}, _META))
_RESULT = st.one_of(
    st.just({"content": [{"type": "text", "text": "hi"}]}),
    st.just({"protocolVersion": "2025-03-26", "capabilities": {}}),
    st.just({"_meta": {META_SUBSCRIPTION_ID: "rosetta-3"}}), st.just([]), st.just("x"))
_ERROR = st.just({"code": -32000, "message": "no"})


def _call(id_: object, method: str, params: object, jsonrpc: object = "2.0") -> Message:
    message: Message = {"jsonrpc": jsonrpc, "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _answer(id_: object, result: object, error: object) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id_}
    if result is not None:
        message["result"] = result
    if error is not None:
        message["error"] = error
    return message


def _notification(method: str, params: Message) -> Message:
    return {"jsonrpc": "2.0", "method": method, "params": params}


# Requests a lane takes (a request id, object params), a step of their own (see _STEPS);
# most are calls with a modern envelope, the only requests mode B gives its parking.
_ENVELOPED = st.builds(lambda meta, token: {"name": "echo", "_meta": {**meta, **token}},
                       _ENVELOPE, st.one_of(st.just({}), st.builds(
                           lambda t: {"progressToken": t}, st.integers(0, 3))))
_REQUEST = st.builds(
    _call, st.one_of(st.integers(-3, 9), st.sampled_from(["a", "b"])),
    st.one_of(st.sampled_from(["tools/call", "resources/read"]), _METHODS),
    st.one_of(_ENVELOPED, _PARAMS.filter(lambda p: type(p) is dict)))
_CLIENT = st.one_of(
    st.builds(_call, _IDS, _METHODS, _PARAMS),
    st.builds(_call, _IDS, _METHODS, _PARAMS, st.sampled_from(["1.0", None])),
    st.builds(_answer, st.one_of(_MINTED, _IDS), st.one_of(_RESULT, st.none()),
              st.one_of(_ERROR, st.none())),
    st.builds(lambda rid: _notification("notifications/cancelled", {"requestId": rid}), _IDS),
    st.just(_notification("notifications/initialized", {})),
    st.just([{"jsonrpc": "2.0", "id": 7, "method": "ping"}]),
)
_SERVER = st.one_of(
    st.builds(_answer, _MINTED, st.one_of(_RESULT, st.none()), st.one_of(_ERROR, st.none())),
    st.builds(_answer, _MINTED, _RESULT, st.none()),
    st.builds(_call, _IDS, st.sampled_from(["sampling/createMessage", "roots/list",
                                            "elicitation/create", "ping"]), st.just({})),
    st.builds(lambda token: _notification("notifications/progress",
                                          {"progressToken": token, "progress": 1}), _IDS),
    st.builds(lambda rid: _notification("notifications/cancelled", {"requestId": rid}),
              st.one_of(_MINTED, _IDS)),
    st.builds(lambda tag: _notification("notifications/message", {
        "level": "info", "data": "x", "_meta": {META_SUBSCRIPTION_ID: tag}}), _MINTED),
    st.just(_notification("notifications/message", {"level": "info", "data": "x"})),
    # On a listen stream: the bridge's own, in a fleet (rosetta-2), or a client's.
    st.builds(lambda tag: _notification("notifications/subscriptions/acknowledged", {
        "notifications": {"toolsListChanged": True}, "_meta": {META_SUBSCRIPTION_ID: tag}}),
        _MINTED),
    st.builds(lambda tag: _notification("notifications/tools/list_changed", {
        "_meta": {META_SUBSCRIPTION_ID: tag}}), _MINTED),
)
_RAW = st.sampled_from([b"not json", b"[]", b"17", b'{"jsonrpc":"2.0","id":2.50,"result":{}}',
                        b'{"id":"rosetta-2","result":{}}'])


def _line(value: object) -> bytes | str:
    if type(value) is bytes:
        return value
    line = orjson.dumps(value)
    if b'"result"' not in line or len(line) % 7 > 1:
        return line
    # Now and then a long answer (spliced, not encoded again), or text, which no shell sends.
    long = line + b" " * 17000
    return long if len(line) % 7 == 0 else long.decode()


_STEPS = st.lists(st.one_of(
    st.tuples(st.just("client"), _REQUEST.map(_line)),
    st.tuples(st.just("client"), st.one_of(_CLIENT, _RAW).map(_line)),
    st.tuples(st.just("server"), st.one_of(_SERVER, _RAW).map(_line)),
    st.tuples(st.just("reply"), st.tuples(st.integers(0, 3), _RESULT)),
    st.tuples(st.just("advance"), st.sampled_from([0.5, 3.0]))), max_size=20)


def _normal(actions: list[Action]) -> list[tuple[object, ...]]:
    """Actions as plain values, taken at once (the core edits messages it has sent)."""
    out: list[tuple[object, ...]] = []
    for action in actions:
        if type(action) is Send:
            line = action.line.joined() if type(action.line) is Spliced else action.line
            out.append(("send", action.side, encode(action.message), line, action.request))
        elif type(action) is Log:
            out.append(("log", action.level, action.event, repr(action.fields)))
        else:
            out.append((repr(action),))
    return out


class _Pair:
    """Two bridges fed alike: `lane` as it is, `full` with its lane withheld before each event."""

    def __init__(self, config: CoreConfig) -> None:
        self.lane, self.full = Bridge(config), Bridge(config)
        self.now = 0.0
        self.told: list[bytes] = []  # every line sent to the client

    def feed(self, event: Any) -> list[tuple[object, ...]]:
        self.full._lane = None
        got = _normal(self.lane.handle(event, self.now))
        want = _normal(self.full.handle(event, self.now))
        assert got == want, (event, got, want)
        self.told += [sent[2] for sent in got if sent[:2] == ("send", "client")]
        return got

    def step(self, step: Step) -> None:
        side, value = step
        if side == "advance":
            self.now += value
            self.feed(TimerFired())
            return
        if side == "reply":
            asked = self.in_flight(self.lane)
            if not asked:
                return
            n, result = value
            side, value = "server", _line(_answer(asked[n % len(asked)][1], result, None))
        self.now += 0.01
        self.feed(MessageReceived(side, value))
        assert self.in_flight(self.lane) == self.in_flight(self.full)

    def in_flight(self, bridge: Bridge) -> list[tuple[str, str, str, object, str]]:
        """The bridge's requests in flight to the server, then to the client."""
        handler = bridge.handler
        if handler is None:
            return []
        return [(side, bid, type(x).__name__, x.origin, x.method)
                for side in ("server", "client")
                for bid, x in handler.router.pending[side].items()]  # type: ignore[index]


def _opened(mode: str, config: CoreConfig, make: type[_Pair] = _Pair) -> _Pair:
    """A pair (`make`) in `mode` (P-legacy, P-modern, A or B) with the client's first request
    sent and the server's handshake done (the probe is rosetta-1; mode B's initialize and
    settling ping rosetta-2 and rosetta-3)."""
    pair = make(config)
    pair.feed(ChildStarted())
    method_not_found: Message = {"jsonrpc": "2.0", "id": "rosetta-1",
                                 "error": {"code": -32601, "message": "Method not found"}}
    if mode in ("P-legacy", "A"):
        first = _call(0, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                        "clientInfo": {"name": "c", "version": "1"}})
    else:
        first = _call("first", "tools/list", {"_meta": modern_meta()})
    legacy_server = mode in ("P-legacy", "B")
    pair.feed(MessageReceived("client", orjson.dumps(first)))
    pair.feed(MessageReceived("server", orjson.dumps(
        method_not_found if legacy_server else _answer("rosetta-1", DISCOVER_RESULT, None))))
    if mode == "B":
        pair.feed(MessageReceived("server", orjson.dumps(
            _answer("rosetta-2", LEGACY_INIT_RESULT, None))))
        pair.feed(MessageReceived("server", orjson.dumps(_answer("rosetta-3", {}, None))))
    assert pair.lane.mode == mode[0] and pair.lane._lane is not None
    return pair


@settings(max_examples=1000, deadline=None)
@given(mode=st.sampled_from(["P-legacy", "P-modern", "A", "B"]),
       timeout=st.sampled_from([0.0, 2.0]), debug=st.booleans(), share=st.booleans(),
       steps=_STEPS)
def test_the_lane_acts_as_the_full_path(mode: str, timeout: float, debug: bool, share: bool,
                                        steps: list[Step]) -> None:
    """`share`: in a fleet (mode B shares its changes; mode P between modern peers keeps a
    listen stream of its own at its server)."""
    pair = _opened(mode, CoreConfig(request_timeout=timeout, debug_logs=debug,
                                    share_changes=share))
    for step in steps:
        pair.step(step)
    assert pair.in_flight(pair.lane) == pair.in_flight(pair.full)
    assert pair.lane.supervision.life.record is pair.full.supervision.life.record


def _scripted(pair: _Pair, first: Message, question: Message) -> list[Message]:
    """The steady state's own traffic, step by step: two calls in flight, one answered, a
    question from the server during the other, progress for it, its answer; then a third
    call answered with an error. What the client was sent, in order."""
    told: list[Message] = []

    def step(step: Step) -> None:
        before = len(pair.told)
        pair.step(step)
        told.extend(orjson.loads(line) for line in pair.told[before:])

    step(("client", _line(first)))
    step(("client", _line({**first, "id": 2})))
    step(("reply", (1, {"content": [{"type": "text", "text": "hi"}]})))
    step(("server", _line(question)))
    step(("advance", 0.5))
    step(("server", _line(_notification("notifications/progress",
                                        {"progressToken": "rosetta-9", "progress": 1}))))
    step(("reply", (1, {"content": [], "isError": False})))
    step(("client", _line({**first, "id": 3})))
    *_, bid = [bid for side, bid, *_ in pair.in_flight(pair.lane) if side == "server"]
    step(("server", _line(_answer(bid, None, {"code": -32000, "message": "no"}))))
    return told


@pytest.mark.parametrize("mode", ["P-legacy", "P-modern", "A", "B"])
@pytest.mark.parametrize("config", [CoreConfig(), CoreConfig(request_timeout=2.0, debug_logs=True)],
                         ids=["inline", "timed, debug"])
def test_the_lane_acts_as_the_full_path_on_the_common_round_trips(
        mode: str, config: CoreConfig) -> None:
    pair = _opened(mode, config)
    envelope = modern_meta({"elicitation": {}}) if mode in ("B", "P-modern") else {}
    first = _call(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"},
                                    "_meta": {**envelope, "progressToken": 7}})
    question = _call(40, "elicitation/create",
                     {"message": "name?", "requestedSchema": {"type": "object"}})
    told = _scripted(pair, first, question)
    answers = {m["id"]: m for m in told if "method" not in m}
    assert set(answers) >= {1, 3}, told  # each call's round had its answer
    assert answers[3]["error"]["message"] == "no"
    assert pair.in_flight(pair.lane) == pair.in_flight(pair.full)
