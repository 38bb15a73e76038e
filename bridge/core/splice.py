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

from bridge.core.codec import Message, encode
from bridge.core.events import Spliced
from bridge.core.jsonrpc import WireId

SPLICE_MIN = 16384
"""The shortest line worth splicing: below it, encoding the decoded message costs less than
proving the edits (tests/benchmarks/README.md, "Big messages")."""
# How many strings are walked, one memchr to each quote, before the line is searched whole for
# each token instead: a text result has a handful; many small strings are cheaper to search.
_STRINGS_WALKED = 64
_SPACE = b" \t\r\n"

Edit = tuple[int, int, bytes]
"""Replace line[start:end] with the bytes."""


def with_id(line: bytes, old: str, new: WireId) -> Spliced | None:
    """`line` (one decoded message whose top-level id is the string `old`) with that id
    replaced by `new`, as one newline-terminated line; None when that is not proved safe.
    The id is a string the message holds: occurring once, that occurrence is it."""
    if b"\\" in line:
        return None
    found = _locate(line, [old])
    return None if found is None else _apply(line, [_id_edit(found[0], old, new)])


def without_members(line: bytes, old: str, new: WireId, removed: Message) -> Spliced | None:
    """`line` with its id replaced as `with_id` does and the members `removed` (key: decoded
    value) taken out of the one object that has them; None when that is not proved safe.

    Each key must occur once in the line (then it is that object's key) and be followed by
    its value spelled as the codec spells it; members side by side go out as one run, with
    one comma next to it, so what is left is still one JSON object."""
    if b"\\" in line:
        return None
    found = _locate(line, [old, *removed])
    if found is None:
        return None
    spans = []
    for start, (key, value) in zip(found[1:], removed.items(), strict=True):
        span = _member(line, start, key, value)
        if span is None:
            return None
        spans.append(span)
    runs = _runs(line, sorted(spans))
    if runs is None:
        return None
    edits = sorted([_id_edit(found[0], old, new), *((start, end, b"") for start, end in runs)])
    if any(a[1] > b[0] for a, b in pairwise(edits)):
        return None  # the id inside a removed member: not the message's own id
    return _apply(line, edits)


def removed_members(before: Message, after: Message) -> Message | None:
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


def _locate(line: bytes, texts: list[str]) -> list[int] | None:
    """Where each of `texts` is in `line` (no backslash) as a string, if each is there
    exactly once (and could not be spelled otherwise); None if not."""
    if not all(_plain(text) for text in texts):
        return None
    tokens = [b'"' + text.encode() + b'"' for text in texts]
    strings = _strings(line)
    if strings is None:  # many strings: one search for each token is cheaper than a walk
        return _searched(line, tokens)
    sizes = {len(token) for token in tokens}
    found: dict[bytes, list[int]] = {token: [] for token in tokens}
    for open_, close in strings:
        if close - open_ + 1 in sizes:
            seen = found.get(line[open_:close + 1])
            if seen is not None:
                seen.append(open_)
    if any(len(where) != 1 for where in found.values()):
        return None
    return [found[token][0] for token in tokens]


def _strings(line: bytes) -> list[tuple[int, int]] | None:
    """The (opening, closing) quote of each string in `line` (no backslash: quotes pair
    off), each one memchr away, so a few long strings cost little; None past
    _STRINGS_WALKED of them."""
    find = line.find
    strings: list[tuple[int, int]] = []
    close = -1
    for _ in range(_STRINGS_WALKED):
        open_ = find(b'"', close + 1)
        if open_ < 0:
            return strings
        close = find(b'"', open_ + 1)
        strings.append((open_, close))
    return None


def _searched(line: bytes, tokens: list[bytes]) -> list[int] | None:
    where = []
    for token in tokens:
        start = line.find(token)
        if start < 0 or line.find(token, start + 1) >= 0:
            return None
        where.append(start)
    return where


def _id_edit(start: int, old: str, new: WireId) -> Edit:
    return start, start + len(old) + 2, encode(new)[:-1]


def _member(line: bytes, start: int, key: str, value: object) -> tuple[int, int] | None:
    """The span of the member `"key": value` whose key is at `start`, if the value that
    follows it is spelled as the codec spells it (a server's compact JSON)."""
    at = _skip(line, start + len(key) + 2)
    if line[at:at + 1] != b":":
        return None
    at = _skip(line, at + 1)
    spelled = encode(value)[:-1]
    end = at + len(spelled)
    # The value ends where its spelling does: a number's text may go on (1.5 read from 1.50).
    if not line.startswith(spelled, at) or line[_skip(line, end):][:1] not in (b",", b"}"):
        return None
    return start, end


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


def _apply(line: bytes, edits: list[Edit]) -> Spliced:
    """`line` with `edits` (sorted, apart) made, newline-terminated, as pieces: views of the
    line between the edits, never a copy of it (the shell writes them with one writev)."""
    view = memoryview(line)
    parts: list[bytes | memoryview] = []
    at = 0
    for start, end, text in edits:
        parts += (view[at:start], text)
        at = end
    parts += (view[at:], b"\n")
    return Spliced(tuple(parts))
