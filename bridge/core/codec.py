"""JSON lines on the wire: decode one line, encode one message as one line.

Must not do I/O. orjson is the fast path; the standard library handles what orjson
rejects but JSON allows (integers beyond 64 bits, lone surrogate escapes).
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None  # type: ignore[assignment]


class DecodeError(ValueError):
    """The line is not one JSON value."""


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON (RFC 8259 §6); the stdlib would accept them.
    raise DecodeError(f"{name} is not valid JSON")


def _stdlib_loads(line: bytes | str) -> Any:
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise DecodeError(str(exc)) from None


# orjson reads an integer beyond 64 bits as a float, silently losing digits; such a line is
# read again by the stdlib, which keeps it exact. Finding one must cost little: a short line
# needs 20 digits somewhere (a cheap C-level count), a long one a float >= 2**64 in the tree
# (proportional to its nodes, not its bytes, so a 1 MiB text costs next to nothing).
_DIGITS = b"0123456789"
_SHORT = 4096
_HUGE = float(2**64)


def decode(line: bytes | str) -> Any:
    """Parse one JSON value, raising DecodeError (only) when it is not valid JSON."""
    if orjson is None or not isinstance(line, bytes):
        return _stdlib_loads(line)
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return _stdlib_loads(line)  # maybe lone surrogate escapes, which JSON allows
    if len(line) < _SHORT and len(line) - len(line.translate(None, _DIGITS)) < 20:
        return value
    if _has_huge_float(value):
        return _stdlib_loads(line)
    return value


def _has_huge_float(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif type(item) is float and (item >= _HUGE or item <= -_HUGE):
            return True
    return False


def _stdlib_dumps(message: Any) -> bytes:
    # ensure_ascii keeps lone surrogates as escapes, so the line stays valid UTF-8.
    return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


if orjson is not None:
    _APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE

    def encode(message: Any) -> bytes:
        """One message as one newline-terminated line with no embedded newline."""
        try:
            return orjson.dumps(message, option=_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            return _stdlib_dumps(message)

else:  # pragma: no cover
    encode = _stdlib_dumps
