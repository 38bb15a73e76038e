"""Event-stream framing: messages in, the bytes of their events out."""

from __future__ import annotations

from bridge.streamable import sse


def test_several_events_in_one_piece_are_the_events_one_by_one() -> None:
    lines = [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n']
    assert sse.events_of(lines) == b"".join(sse.event_of(line) for line in lines)
    assert sse.events_of(lines[:1]) == sse.event_of(lines[0])
