"""A peer's line forwarded as it came but for a few proved edits: its id, removed members.

Must not guess: an edit is made only where the bytes it replaces are proved to be what the
decoded message says they are; otherwise None, and the caller encodes the message instead.

The proofs rest on one fact. In a line with no backslash there are no escapes, so every
string (key or value) is spelled as itself between two quotes with no quote inside: the
line's quotes pair off into its strings, and a quoted text found in the line is a whole
string. A string the decoded message holds is therefore in the line; if that quoted text
occurs only once, its position is known.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from bridge.core.codec import encode

SPLICE_MIN = 16384
"""The shortest line worth splicing: below it, encoding the decoded message costs less than
proving the edits (tests/benchmarks/README.md, "Big messages")."""
# How many strings are compared one by one before the rest of the line is searched whole: a
# text result has a handful, each one memchr away; many small strings are cheaper to search
# with one bytes.find.
_STRINGS_WALKED = 64
_SPACE = b" \t\r\n"

Edit = tuple[int, int, bytes]
"""Replace line[start:end] with the bytes."""


def with_id(line: bytes, old: str, new: Any) -> bytes | None:
    """`line` (one decoded message whose top-level id is the string `old`) with that id
    replaced by `new`, as one newline-terminated line; None when that is not proved safe.
    The id is a string the message holds: occurring once, that occurrence is it."""
    if b"\\" in line:
        return None
    edit = _id_edit(line, old, new)
    return None if edit is None else _apply(line, [edit])


def without_members(line: bytes, old: str, new: Any, removed: dict[str, Any]) -> bytes | None:
    """`line` with its id replaced as `with_id` does and the members `removed` (key: decoded
    value) taken out of the one object that has them; None when that is not proved safe.

    Each key must occur once in the line (then it is that object's key) and be followed by
    its value spelled as the codec spells it; members side by side go out as one run, with
    one comma next to it, so what is left is still one JSON object."""
    if b"\\" in line:
        return None
    edit = _id_edit(line, old, new)
    if edit is None:
        return None
    spans = []
    for key, value in removed.items():
        span = _member(line, key, value)
        if span is None:
            return None
        spans.append(span)
    runs = _runs(line, sorted(spans))
    if runs is None:
        return None
    edits = sorted([edit, *((start, end, b"") for start, end in runs)])
    if any(a[1] > b[0] for a, b in pairwise(edits)):
        return None  # the id inside a removed member: not the message's own id
    return _apply(line, edits)


def removed_members(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """The members `after` lacks of `before` (key: value), if that is all that differs: every
    member kept is the very same value (a copy of the top level that only dropped keys);
    None otherwise."""
    if any(before.get(key, before) is not value for key, value in after.items()):
        return None
    return {key: value for key, value in before.items() if key not in after}


def _plain(text: str) -> bool:
    """Whether `text`, as a JSON string in a line with no backslash, can only be spelled as
    itself between quotes: printable ASCII with no quote."""
    return text.isascii() and text.isprintable() and '"' not in text


def _once(line: bytes, text: str) -> int:
    """Where the string `text` is in `line` (no backslash), if it is there exactly once; -1
    if not (or if `text` could be spelled otherwise)."""
    if not _plain(text):
        return -1
    token = b'"' + text.encode() + b'"'
    start = line.find(token)
    if start < 0 or _found_again(line, token, start):
        return -1
    return start


def _found_again(line: bytes, token: bytes, first: int) -> bool:
    """Whether a string other than the one at `first` equals `token`. Strings are walked
    first: each closing quote is one memchr away, so a few long strings cost little; past
    _STRINGS_WALKED of them, one search of the rest."""
    find = line.find
    size = len(token)
    close = -1
    for _ in range(_STRINGS_WALKED):
        open_ = find(b'"', close + 1)
        if open_ < 0:
            return False
        close = find(b'"', open_ + 1)
        if close - open_ + 1 == size and open_ != first and line.startswith(token, open_):
            return True
    return find(token, close + 1) >= 0


def _id_edit(line: bytes, old: str, new: Any) -> Edit | None:
    start = _once(line, old)
    if start < 0:
        return None
    return start, start + len(old) + 2, encode(new)[:-1]


def _member(line: bytes, key: str, value: Any) -> tuple[int, int] | None:
    """The span of the member `"key": value`, if the key occurs once and the value that
    follows it is spelled as the codec spells it (a server's compact JSON)."""
    start = _once(line, key)
    if start < 0:
        return None
    at = _skip(line, start + len(key) + 2)
    if line[at:at + 1] != b":":
        return None
    at = _skip(line, at + 1)
    spelled = encode(value)[:-1]
    if not line.startswith(spelled, at):
        return None
    return start, at + len(spelled)


def _runs(line: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The spans to cut: members separated only by a comma join one run, and each run takes
    the comma after it, or else the one before it (a run that is the whole object takes
    neither)."""
    runs: list[list[int]] = []
    for start, end in spans:
        between = _skip(line, runs[-1][1]) if runs else -1
        if runs and line[between:between + 1] == b"," and _skip(line, between + 1) == start:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    cuts = []
    for start, end in runs:
        after = _skip(line, end)
        if line[after:after + 1] == b",":
            cuts.append((start, after + 1))
            continue
        before = _skip_back(line, start)
        if line[before - 1:before] == b",":
            cuts.append((before - 1, end))
        elif line[before - 1:before] == b"{" and line[after:after + 1] == b"}":
            cuts.append((start, end))
        else:
            return None
    return cuts


def _skip(line: bytes, at: int) -> int:
    """The first position from `at` that is not JSON whitespace."""
    while line[at:at + 1] and line[at] in _SPACE:
        at += 1
    return at


def _skip_back(line: bytes, at: int) -> int:
    """The position after the last non-whitespace byte before `at`."""
    while at > 0 and line[at - 1] in _SPACE:
        at -= 1
    return at


def _apply(line: bytes, edits: list[Edit]) -> bytes:
    """`line` with `edits` (sorted, apart) made, newline-terminated: one copy."""
    view = memoryview(line)
    parts: list[bytes | memoryview] = []
    at = 0
    for start, end, text in edits:
        parts += (view[at:start], text)
        at = end
    parts += (view[at:], b"\n")
    return b"".join(parts)
