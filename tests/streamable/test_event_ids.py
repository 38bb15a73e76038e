"""A legacy stream's event ids and the events it keeps: messages in, framed events out, and
what a `Last-Event-ID` resumes."""

from __future__ import annotations

from bridge.streamable.event_ids import RETRY_MS, EventLog, parse_event_id


def test_each_event_has_the_next_id_of_its_stream_and_the_last_ones_are_kept() -> None:
    log: EventLog[None] = EventLog("p3", limit=2)
    assert log.priming() == f"id: p3-1\nretry: {RETRY_MS}\ndata: \n\n".encode()
    framed = [log.frame({"n": n}) for n in (1, 2, 3)]
    assert framed[0] == b'id: p3-2\nevent: message\ndata: {"n":1}\n\n'
    assert log.frame_line(b'{"n":4}\n') == b'id: p3-5\nevent: message\ndata: {"n":4}\n\n'
    assert log.after(3) == [framed[2], b'id: p3-5\nevent: message\ndata: {"n":4}\n\n']
    assert log.after(0) == log.after(3)  # two kept: the older ones are gone


def test_an_event_id_names_its_stream_and_its_number() -> None:
    assert parse_event_id("p3-12") == ("p3", 12)
    assert parse_event_id("g-1") == ("g", 1)
    for foreign in ("12", "-3", "p3-", "p3-x", "abc"):
        assert parse_event_id(foreign) is None
