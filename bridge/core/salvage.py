"""The top-level members of a JSON object read from its first or last bytes, when the whole
cannot be read.

Must not guess: it tracks strings (escapes included) and nesting exactly, so a key nested
inside `params` is never taken for a top-level one, and a value counts only once it is
complete (a number cut off by the end of the bytes might have gone on). From the last bytes,
only the trailing members with plain values are read: the first object or array ends the scan.
"""

from __future__ import annotations

import re
from typing import Final

from bridge.core.codec import DecodeError, Message, RawNumber, decode

UNREAD: Final = object()
"""The value of a member whose key was read but whose value was not: an object, an array, or
cut off by the end of the bytes."""

# One token, after optional whitespace: a whole string, a structural mark, or a bare literal
# (number, true, false, null). An unterminated string matches nothing, which ends the scan.
# The patterns are compiled (and cached) by `re` at their first use, not at import: the start
# of every session imports this module, and only a broken or oversized line reads one.
_TOKEN = rb'(?s)[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\]:,])|([^ \t\n\r"{}\[\]:,]+))'
_OPENS = frozenset((b"{", b"["))
_CLOSES = frozenset((b"}", b"]"))
_KINDS = ("method", "result", "error")
# The mark each remaining state waits for, and the state after it.
_NEXT = {"{": b"{", ":": b":", ",": b","}
_AFTER = {"{": "key", ":": "value", ",": "key"}


def top_level(data: bytes) -> Message:
    """The members of the object `data` begins, as far as `data` shows them.

    A member whose value is a string, number, true, false or null complete within `data` maps
    to that value (integers exact, as `decode` reads them; other numbers as their text, in a
    RawNumber); any other member seen maps to UNREAD. The scan stops at the first thing it
    cannot read, and once it has the id and one of method, result or error. Not an object: {}.
    """
    members: Message = {}
    end = len(data)
    depth = 0  # 1 inside the top-level object
    key: str | None = None  # the member whose value comes next
    expect = "{"  # at depth <= 1, what comes next: "{", "key", ":", "value" or ","
    pos = 0
    scan = re.compile(_TOKEN).match
    while (match := scan(data, pos)) is not None:
        pos = match.end()
        string, mark, bare = match.groups()
        if depth > 1:  # inside a member's object or array: only its nesting matters
            if mark in _OPENS:
                depth += 1
            elif mark in _CLOSES:
                depth -= 1
            continue
        if expect == "value":
            if mark in _OPENS:
                depth = 2
                expect = ","
                continue
            token = string if string is not None else bare
            if token is None or (bare is not None and pos == end):
                break  # not a value, or a literal that may go on past `data`
            try:
                members[key] = _plain(token)  # type: ignore[index]
            except DecodeError:
                break
            if members.get("id", UNREAD) is not UNREAD and any(k in members for k in _KINDS):
                break
            expect = ","
        elif expect == "key":
            if string is None:
                break  # the end of the object, or not JSON
            try:
                key = _key(string)
            except DecodeError:
                break
            members[key] = UNREAD
            expect = ":"
        elif mark == _NEXT[expect]:
            depth = 1
            expect = _AFTER[expect]
        else:
            break  # the end of the object, or not JSON
    return members


def _key(token: bytes) -> str:
    """A member's key: the scan found a string token, so it decodes to a str."""
    key = decode(token)
    if type(key) is not str:
        raise DecodeError("a key must be a string")
    return key


def _plain(token: bytes) -> object:
    """A plain value's token decoded; a number with a fraction or an exponent as its text, so
    an id answered from it is spelled as it came (jsonrpc.Inbound)."""
    value = decode(token)
    return RawNumber(token.decode()) if type(value) is float else value


_WHITESPACE = b" \t\n\r"
_LITERAL = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null"
_LITERAL_BYTES = frozenset(b"0123456789+-.eEtruefalsn")


def both_ends(head: bytes, tail: bytes) -> Message:
    """The top-level members the first and the last bytes of one object show, together."""
    members = trailing(tail)
    for key, value in top_level(head).items():
        if value is not UNREAD or key not in members:
            members[key] = value
    return members


def trailing(data: bytes) -> Message:
    """The top-level members that end the object whose last bytes are `data`, read backwards
    from its closing brace while their values are strings, numbers, true, false or null.

    Some writers put `id` last (`{"result": {...}, "jsonrpc": "2.0", "id": 5}`): the first
    bytes of a huge message then show no id, the last ones do. Not an object's end: {}.
    """
    members: Message = {}
    brace = _skip_back(data, len(data)) - 1
    if brace < 0 or data[brace] != ord("}"):
        return members
    while True:
        value_end = _skip_back(data, brace)
        value_start = _value_start(data, value_end)
        colon = _skip_back(data, value_start) - 1 if value_start is not None else -1
        if colon < 0 or data[colon] != ord(":"):
            break
        key_end = _skip_back(data, colon)
        key_start = _string_start(data, key_end)
        if key_start is None:
            break
        try:
            key, value = _key(data[key_start:key_end]), _plain(data[value_start:value_end])
        except DecodeError:
            break
        members.setdefault(key, value)  # read backwards: the last of a repeated key wins
        brace = _skip_back(data, key_start) - 1
        if brace < 0 or data[brace] != ord(","):
            break  # the object's opening brace, or the start of `data`
    return members


def _skip_back(data: bytes, end: int) -> int:
    while end > 0 and data[end - 1] in _WHITESPACE:
        end -= 1
    return end


def _value_start(data: bytes, end: int) -> int | None:
    """Where the plain value ending at `end` begins; None if it is not one."""
    if end > 0 and data[end - 1] == ord('"'):
        return _string_start(data, end)
    start = end
    while start > 0 and data[start - 1] in _LITERAL_BYTES:
        start -= 1
    return start if start < end and re.compile(_LITERAL).fullmatch(data, start, end) else None


def _string_start(data: bytes, end: int) -> int | None:
    """Where the string ending at `end` (just after its closing quote) begins; None if it does
    not close there, or begins before `data` does."""
    if end < 2 or data[end - 1] != ord('"'):
        return None
    quote = end - 1
    while (quote := data.rfind(b'"', 0, quote)) >= 0:
        backslashes = quote - len(data[:quote].rstrip(b"\\"))
        if backslashes % 2 == 0:  # not escaped: the opening quote
            return quote
    return None
