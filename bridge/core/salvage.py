"""The top-level members of a JSON object read from its first bytes, when the whole cannot be read.

Must not guess: it tracks strings (escapes included) and nesting exactly, so a key nested
inside `params` is never taken for a top-level one, and a value counts only once it is
complete (a number cut off by the end of the bytes might have gone on).
"""

from __future__ import annotations

import re
from typing import Any, Final

from bridge.core.codec import DecodeError, decode

UNREAD: Final = object()
"""The value of a member whose key was read but whose value was not: an object, an array, or
cut off by the end of the bytes."""

# One token, after optional whitespace: a whole string, a structural mark, or a bare literal
# (number, true, false, null). An unterminated string matches nothing, which ends the scan.
_TOKEN = re.compile(
    rb'[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\]:,])|([^ \t\n\r"{}\[\]:,]+))', re.DOTALL
)
_OPENS = frozenset((b"{", b"["))
_CLOSES = frozenset((b"}", b"]"))
_KINDS = ("method", "result", "error")
# The mark each remaining state waits for, and the state after it.
_NEXT = {"{": b"{", ":": b":", ",": b","}
_AFTER = {"{": "key", ":": "value", ",": "key"}


def top_level(data: bytes) -> dict[str, Any]:
    """The members of the object `data` begins, as far as `data` shows them.

    A member whose value is a string, number, true, false or null complete within `data` maps
    to that value (numbers exact, as `decode` reads them); any other member seen maps to
    UNREAD. The scan stops at the first thing it cannot read, and once it has the id and one
    of method, result or error. Not an object: {}.
    """
    members: dict[str, Any] = {}
    end = len(data)
    depth = 0  # 1 inside the top-level object
    key: str | None = None  # the member whose value comes next
    expect = "{"  # at depth <= 1, what comes next: "{", "key", ":", "value" or ","
    pos = 0
    while (match := _TOKEN.match(data, pos)) is not None:
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
                members[key] = decode(token)  # type: ignore[index]
            except DecodeError:
                break
            if members.get("id", UNREAD) is not UNREAD and any(k in members for k in _KINDS):
                break
            expect = ","
        elif expect == "key":
            if string is None:
                break  # the end of the object, or not JSON
            try:
                key = decode(string)
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
