"""Mode P's lane (relay/lane.py) does what the full path does: on generated scripts of
messages from both peers, in both eras, with and without a request timeout and debug logs, a
Bridge that takes the lane and one made to take the full path every time produce the same
actions at every step and are left with the same requests in flight."""

from __future__ import annotations

from typing import Any

import orjson
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
from tests.core.harness import DISCOVER_RESULT, modern_meta

Message = dict[str, Any]
# ("client" | "server", line), ("advance", seconds), or ("reply", (n, result)): the server
# answers its n-th request in flight (the common round trip, which random ids seldom hit).
Step = tuple[str, Any]

_IDS = st.one_of(st.integers(-3, 9), st.sampled_from(["a", "b", "rosetta-2"]),
                 st.just(2.0), st.just(True), st.none())
_MINTED = st.builds(lambda n: f"rosetta-{n}", st.integers(1, 6))
_METHODS = st.sampled_from(["tools/call", "initialize", "logging/setLevel",
                            "resources/subscribe", "resources/unsubscribe",
                            "subscriptions/listen", "ping"])
_META = st.one_of(st.just({}), st.builds(lambda t: {"progressToken": t}, _IDS),
                  st.just({META_LOG_LEVEL: "info"}), st.just("not an object"))
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
    st.builds(_call, _IDS, st.sampled_from(["sampling/createMessage", "roots/list"]),
              st.just({})),
    st.builds(lambda token: _notification("notifications/progress",
                                          {"progressToken": token, "progress": 1}), _IDS),
    st.builds(lambda rid: _notification("notifications/cancelled", {"requestId": rid}),
              st.one_of(_MINTED, _IDS)),
    st.builds(lambda tag: _notification("notifications/message", {
        "level": "info", "data": "x", "_meta": {META_SUBSCRIPTION_ID: tag}}), _MINTED),
    st.just(_notification("notifications/message", {"level": "info", "data": "x"})),
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
    st.tuples(st.just("client"), st.one_of(_CLIENT, _RAW).map(_line)),
    st.tuples(st.just("server"), st.one_of(_SERVER, _RAW).map(_line)),
    st.tuples(st.just("reply"), st.tuples(st.integers(0, 3), _RESULT)),
    st.tuples(st.just("advance"), st.sampled_from([0.5, 3.0]))), max_size=14)


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

    def feed(self, event: Any) -> list[tuple[object, ...]]:
        self.full._lane = None
        got = _normal(self.lane.handle(event, self.now))
        want = _normal(self.full.handle(event, self.now))
        assert got == want, (event, got, want)
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


def _opened(era: str, config: CoreConfig) -> _Pair:
    """A pair in mode P of `era`, the client's first request forwarded (rosetta-2)."""
    pair = _Pair(config)
    pair.feed(ChildStarted())  # the probe is rosetta-1
    if era == "legacy":
        first = _call(0, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                        "clientInfo": {"name": "c", "version": "1"}})
        probe_answer: Message = {"jsonrpc": "2.0", "id": "rosetta-1",
                                 "error": {"code": -32601, "message": "Method not found"}}
    else:
        first = _call("first", "tools/list", {"_meta": modern_meta()})
        probe_answer = _answer("rosetta-1", DISCOVER_RESULT, None)
    pair.feed(MessageReceived("client", orjson.dumps(first)))
    pair.feed(MessageReceived("server", orjson.dumps(probe_answer)))
    assert pair.lane.mode == "P" and pair.lane._lane is not None
    return pair


@settings(max_examples=400, deadline=None)
@given(era=st.sampled_from(["legacy", "modern"]), timeout=st.sampled_from([0.0, 2.0]),
       debug=st.booleans(), steps=_STEPS)
def test_the_lane_acts_as_the_full_path(era: str, timeout: float, debug: bool,
                                        steps: list[Step]) -> None:
    pair = _opened(era, CoreConfig(request_timeout=timeout, debug_logs=debug))
    for step in steps:
        pair.step(step)
    assert pair.in_flight(pair.lane) == pair.in_flight(pair.full)
    assert pair.lane._record is pair.full._record


def test_a_relayed_call_and_its_answer_take_the_lane() -> None:
    """The steady state's round trip goes through the lane (else the test above compares the
    full path with itself)."""
    pair = _opened("legacy", CoreConfig())
    pair.lane._on_client_line = pair.lane._on_server = None  # type: ignore[assignment,method-assign]
    line = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}}'
    sent = pair.lane.handle(MessageReceived("client", line), 1.0)
    assert [(type(a), a.side, a.message) for a in sent if type(a) is Send] == [
        (Send, "server", {"jsonrpc": "2.0", "id": "rosetta-3", "method": "tools/call",
                          "params": {"name": "echo"}})]
    answer = b'{"jsonrpc":"2.0","id":"rosetta-3","result":{"content":[]}}'
    back = pair.lane.handle(MessageReceived("server", answer), 1.1)
    assert [(a.side, a.message, a.request) for a in back if type(a) is Send] == [
        ("client", {"jsonrpc": "2.0", "id": 5, "result": {"content": []}}, 5)]
