"""parse_inbound's one-pass lane for common shapes gives the verdict the whole classification
(`jsonrpc.classify`) gives: the same kind, id, reason and code, on shapes near and far from the
common ones."""

from __future__ import annotations

import orjson
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bridge.core.jsonrpc import Inbound, classify, parse_inbound

_ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2),
                       st.text(max_size=3), st.just({}), st.just([]), st.just({"a": 1}))


@st.composite
def near_common(draw: st.DrawFn) -> dict[str, object]:
    """An object with each of the members classification reads present, absent or wrong."""
    members = {
        "jsonrpc": st.one_of(st.just("2.0"), st.just("1.0"), _ANY_VALUE),
        # Integers orjson writes (a longer one is read by the stdlib: test_integers.py).
        "id": st.one_of(st.integers(-2**63, 2**64 - 1), st.text(max_size=5), _ANY_VALUE),
        "method": st.one_of(st.just("tools/call"), _ANY_VALUE),
        "params": st.one_of(st.just({"name": "x"}), _ANY_VALUE),
        "result": st.one_of(st.just({"content": []}), _ANY_VALUE),
        "error": st.one_of(st.just({"code": -1, "message": "no"}), _ANY_VALUE),
    }
    message: dict[str, object] = {}
    for key, values in members.items():
        if draw(st.booleans()):
            message[key] = draw(values)
    return message


def _verdict(inbound: Inbound) -> tuple[object, ...]:
    return (inbound.kind, inbound.id, type(inbound.id), inbound.reason, inbound.code,
            inbound.message)


@settings(max_examples=600, deadline=None)
@given(near_common())
def test_the_lane_agrees_with_the_whole_classification(message: dict[str, object]) -> None:
    assume(type(message.get("id")) is not float)  # kept with its spelling: a RawNumber
    line = orjson.dumps(message)
    inbound = parse_inbound(line)
    assert _verdict(inbound) == _verdict(classify(orjson.loads(line)))
    assert inbound.line == line


def test_common_shapes_take_the_lane_with_their_line() -> None:
    request = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}'
    notification = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    response = b'{"jsonrpc":"2.0","id":"rosetta-3","result":{"content":[]}}'
    got = [parse_inbound(line) for line in (request, notification, response)]
    assert [(i.kind, i.id, i.line) for i in got] == [
        ("request", 7, request), ("notification", None, notification),
        ("response", "rosetta-3", response)]


def test_a_bool_id_or_a_null_params_leaves_the_lane_for_an_error() -> None:
    bool_id = parse_inbound(b'{"jsonrpc":"2.0","id":true,"method":"ping"}')
    null_params = parse_inbound(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":null}')
    assert (bool_id.kind, bool_id.reason) == (
        "invalid", "id must be a string or an integer (a number with no fraction)")
    assert (null_params.kind, null_params.reason, null_params.id) == (
        "invalid", "params must be an object", 1)
