"""The codec (exact numbers, the nesting limit) and the salvage of a line's first bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bridge.core.codec import MAX_DEPTH, DecodeError, RawNumber, TooDeep, decode, encode
from bridge.core.salvage import UNREAD, top_level

INTEGERS = [
    b"0", b"-1", b"9223372036854775807", b"-9223372036854775808",  # the signed 64-bit range
    b"-9223372036854775809", b"-18446744073709551615",  # below it: orjson would make floats
    b"18446744073709551615", b"18446744073709551616", b"-18446744073709551616",
    b"-18446744073709551617", b"1" + b"0" * 100, b"-" + b"9" * 4300,
]


@pytest.mark.parametrize("text", INTEGERS)
def test_every_integer_crosses_exactly(text: bytes) -> None:
    for line in (text, b'{"n":' + text + b"}", b'{"a":"' + b"1" * 30 + b'","n":[' + text + b"]}",
                 b'{"pad":"' + b"x" * 5000 + b'","n":' + text + b"}"):
        value = decode(line)
        assert encode(value) == line + b"\n"
        assert value == json.loads(line)  # the exact integer, never a float


@pytest.mark.parametrize("text", [b"9" * 4301, b"-" + b"1" * 100000, b"1e400", b"-2.5E+999"])
def test_numbers_python_cannot_hold_cheaply_are_kept_as_their_text(text: bytes) -> None:
    value = decode(b'{"n":' + text + b"}")
    assert value == {"n": RawNumber(text.decode())}
    assert encode(value) == b'{"n":' + text + b"}\n"


@pytest.mark.parametrize(("text", "integral"), [
    ("9" * 5000, True), ("1e400", True), ("-2.5E+999", True), ("2.0", True), ("2.500e1", True),
    ("-0", True), ("0.000e-7", True), ("10e-1", True), ("100E-2", True),
    ("1e-99999999999999999999", False),
    ("2.5", False), ("2.55e1", False), ("101e-2", False), ("1e-400", False),
])
def test_a_number_is_an_integer_when_its_fractional_part_is_zero(
        text: str, integral: bool) -> None:
    # JSON Schema (2020-12 §4.2.1, validation): "integer" matches any number with a zero
    # fractional part, however it is written.
    assert RawNumber(text).is_integer is integral


def test_lone_surrogates_and_long_integers_together_still_encode() -> None:
    line = b'{"s":"\\ud800","n":' + b"7" * 5000 + b',"m":18446744073709551616}'
    assert encode(decode(line)) == line + b"\n"


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("depth", [1, 2, MAX_DEPTH - 1, MAX_DEPTH])
def test_nesting_up_to_the_limit_is_read(depth: int) -> None:
    assert encode(decode(nested(depth))) == nested(depth) + b"\n"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1024, 1025, 100_000])
def test_nesting_beyond_the_limit_is_refused(depth: int) -> None:
    with pytest.raises(TooDeep):
        decode(nested(depth))


def test_brackets_inside_strings_are_not_nesting() -> None:
    line = b'{"s":"' + b"[{" * 1000 + b'"}'
    assert decode(line) == {"s": "[{" * 1000}


def test_too_deep_keeps_what_could_be_read() -> None:
    with pytest.raises(TooDeep) as raised:
        decode(b'{"id":1,"x":' + nested(300) + b"}")
    assert raised.value.value["id"] == 1
    with pytest.raises(TooDeep) as raised:
        decode(b'{"id":1,"x":' + nested(2000) + b"}")  # beyond what any parser reads
    assert raised.value.value is None


@pytest.mark.parametrize("line", [b"{", b"NaN", b"[1,]", b"\xff", b'{"a":1}x', b"Infinity"])
def test_what_is_not_json_is_a_decode_error(line: bytes) -> None:
    with pytest.raises(DecodeError) as raised:
        decode(line)
    assert not isinstance(raised.value, TooDeep)


# The salvage of a line's first bytes --------------------------------------------------------


def test_top_level_members_are_read_as_far_as_the_bytes_go() -> None:
    members = top_level(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"id":9,"x"')
    assert members == {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}


@pytest.mark.parametrize(("head", "expected"), [
    (b'{"params":{"id":9,"s":"}\\"{"},"id":"abc"}', {"params": UNREAD, "id": "abc"}),
    (b'{"jsonrpc":"2.0","id":12', {"jsonrpc": "2.0", "id": UNREAD}),  # 12 may go on
    (b'{"jsonrpc":"2.0","id":12 ', {"jsonrpc": "2.0", "id": 12}),
    (b'{"id":"ab', {"id": UNREAD}),
    (b'{"result":{"a":[{"id":1}]},"id":-9223372036854775809,"x"',
     {"result": UNREAD, "id": -9223372036854775809}),
    (b' { "id" : 99999999999999999999999 , "error" : {', {"id": 99999999999999999999999,
                                                         "error": UNREAD}),
    (b'{"\\u0069d":7,"result":{}}', {"id": 7, "result": UNREAD}),
    (b'{"id":[1],"method":"m"}', {"id": UNREAD, "method": "m"}),
    (b'[{"id":1}]', {}),
    (b'"id"', {}),
    (b"", {}),
    (b'{"id":1 2}', {"id": 1}),  # not JSON past the id: the scan stops there
])
def test_top_level_tracks_strings_nesting_and_completeness(head: bytes,
                                                           expected: dict[str, Any]) -> None:
    assert top_level(head) == expected
