"""JSON lines on the wire: decode one line, encode one message as one line.

Must not do I/O. orjson is the fast path; the standard library reads what orjson rejects but
JSON allows (integers beyond 64 bits, lone surrogate escapes), and every integer crosses
exactly, whatever its size and sign. Nothing nested deeper than MAX_DEPTH is accepted, so
whatever is accepted can be written again.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None  # type: ignore[assignment]

MAX_DEPTH = 200
"""The deepest nesting of objects and arrays a message may have (the message itself is level 1).

orjson writes at most 254 levels, and the bridge re-nests a peer's value at most 3 levels deeper
than it came (mode B puts a legacy server's input request params under
result.inputRequests.<key>.params; a 2025-03-26 batch adds its array): 200 keeps clear of both."""

# CPython converts at most this many digits between text and int (sys.int_info, CVE-2020-10735:
# the conversion is quadratic). A longer integer is kept as its text instead.
_INT_DIGITS = 4300


# A JSON object as decoded: its members are JSON values, read after the checks that type them.
Message = dict[str, Any]


class DecodeError(ValueError):
    """The line is not one JSON value."""


class TooDeep(DecodeError):
    """The line is JSON nested deeper than MAX_DEPTH; `value` is it, if it could be read."""

    def __init__(self, value: object = None) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")
        self.value = value


class RawNumber:
    """A JSON number Python cannot hold exactly or cheaply, kept as its text and written as it came.

    An integer of more than 4300 digits (converting it would cost quadratic time) or a number
    beyond the range of a float (it would become infinity).
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def is_integer(self) -> bool:
        return is_integral(self.text)

    def __eq__(self, other: object) -> bool:
        return type(other) is RawNumber and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return self.text


def is_integral(text: str) -> bool:
    """Whether the JSON number `text` is an integer as JSON Schema counts one: any number with
    a zero fractional part (`2`, `2.0`, `2e3`, `-1.50e1`), exactly, whatever its size."""
    mantissa, _, exponent = text.lower().partition("e")
    whole, _, fraction = mantissa.lstrip("-").partition(".")
    fraction = fraction.rstrip("0")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return True  # zero
    scale = len(digits) - len(digits.rstrip("0")) - len(fraction)  # trailing zeros, places
    power = exponent.lstrip("+-").lstrip("0")
    if len(power) > 18:  # beyond any place count a line can hold: the sign decides
        return not exponent.startswith("-")
    return scale + (-int(power or 0) if exponent.startswith("-") else int(power or 0)) >= 0


def decode_spelled(line: bytes | str) -> object:
    """`line` decoded with every number that has a fraction or an exponent kept as its text
    (a RawNumber), for the few values whose spelling must come back as it came (request ids)."""
    try:
        return json.loads(line, parse_constant=_reject_constant, parse_int=_integer,
                          parse_float=RawNumber)
    except (RecursionError, ValueError, UnicodeDecodeError):
        return None


def _integer(text: str) -> int | RawNumber:
    digits = len(text) - text.startswith("-")
    return int(text) if digits <= _INT_DIGITS else RawNumber(text)


def _number(text: str) -> float | RawNumber:
    value = float(text)
    return value if value - value == 0 else RawNumber(text)  # inf - inf is nan


def _reject_constant(name: str) -> NoReturn:
    # NaN and Infinity are not JSON (RFC 8259 §6); the stdlib would accept them.
    raise DecodeError(f"{name} is not valid JSON")


def _stdlib_loads(line: bytes | str) -> object:
    try:
        value = json.loads(line, parse_constant=_reject_constant, parse_int=_integer,
                           parse_float=_number)
    except RecursionError:
        raise TooDeep from None  # the stdlib parser recurses once per level
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(str(exc)) from None
    if _inspect(value)[0] > MAX_DEPTH:
        raise TooDeep(value)
    return value


# orjson reads an integer beyond 64 bits as a float, silently losing digits: above 2**64 - 1
# (unsigned) or below -2**63 (signed). Such a line is read again by the stdlib, which keeps it
# exact. Finding one must cost little: a short line needs 19 digits somewhere (a cheap C-level
# count), a long one such a float in the tree (proportional to its nodes, not its bytes). Depth
# costs as little, and is measured in the same walk: a line cannot nest deeper than its count
# of "{" and "[", nor than half its length (each level takes an opening and a closing byte).
_DIGITS = b"0123456789"
_SHORT = 4096
_SHALLOW = 2 * MAX_DEPTH + 1
_HUGE = float(2**64)
_MOST_NEGATIVE = -float(2**63)


def decode(line: bytes | str) -> object:
    """Parse one JSON value, raising DecodeError (only) when it is not valid JSON, or TooDeep
    (a DecodeError) when it nests deeper than MAX_DEPTH."""
    if type(line) is not bytes or orjson is None:  # a type test: no call, every line
        return _stdlib_loads(line)
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return _stdlib_loads(line)  # maybe long integers, lone surrogates, or too deep for orjson
    size = len(line)
    if size < _SHORT and size - len(line.translate(None, _DIGITS)) < 19 and (
            size <= _SHALLOW or line.count(b"{") + line.count(b"[") <= MAX_DEPTH):
        return value
    depth, huge = _inspect(value)
    if depth > MAX_DEPTH:
        raise TooDeep(value)
    return _stdlib_loads(line) if huge else value


def depth_of(value: object) -> int:
    """How deep `value` nests: 0 for a scalar, 1 for a flat object or array; at most
    MAX_DEPTH + 1 (the walk stops there)."""
    return _inspect(value)[0]


def _inspect(value: Any) -> tuple[int, bool]:
    """How deep `value` nests (up to MAX_DEPTH + 1), and whether it holds a float that may be
    an integer orjson could not keep. One breadth-first walk, level by level."""
    depth = 0
    huge = False
    level = [value]
    while level and depth <= MAX_DEPTH:
        below: list[Any] = []
        nested = False
        for item in level:
            kind = type(item)
            if kind is dict:
                nested = True
                below.extend(item.values())
            elif kind is list:
                nested = True
                below.extend(item)
            elif kind is float and (item >= _HUGE or item <= _MOST_NEGATIVE):
                huge = True
        depth += nested
        level = below
    return depth, huge


def _portable_text(value: object) -> str:
    """`value` as JSON text, for what orjson will not write: integers beyond 64 bits, lone
    surrogates (escaped, so the line stays valid UTF-8), RawNumbers. Slow, and rarely needed."""
    if type(value) is dict:
        return "{" + ",".join(f"{json.dumps(k)}:{_portable_text(v)}"
                              for k, v in value.items()) + "}"
    if type(value) is list:
        return "[" + ",".join(_portable_text(v) for v in value) + "]"
    if type(value) is RawNumber:
        return value.text
    return json.dumps(value)


def _portable_dumps(message: object) -> bytes:
    return _portable_text(message).encode("ascii") + b"\n"


if orjson is not None:
    _APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE

    def _fragment(value: object) -> orjson.Fragment:
        if type(value) is RawNumber:
            return orjson.Fragment(value.text)
        raise TypeError

    def encode(message: object) -> bytes:
        """One message as one newline-terminated line with no embedded newline."""
        try:
            return orjson.dumps(message, default=_fragment, option=_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            return _portable_dumps(message)

else:  # pragma: no cover
    encode = _portable_dumps
