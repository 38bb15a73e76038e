"""The event-stream writer: JSON-RPC messages as Server-Sent Events on one HTTP answer.

Must not choose what goes on the stream (the front's `modern.py` routes it); it frames. Each
message is one `data:` line (the codec never writes a raw newline inside a JSON line), events
end with a blank line; a keep-alive is a comment line (streamable-http.mdx §Receiving
Messages, note on long-lived streams). No event ids on 2026-07-28 streams (not resumable);
legacy streams have them (`event_ids.py`).
"""

from __future__ import annotations

from bridge.core.codec import Message, encode

KEEP_ALIVE = b":\n\n"
HEADERS = (("content-type", "text/event-stream"), ("cache-control", "no-cache"),
           ("x-accel-buffering", "no"))


def event(message: Message | list[Message], event_id: str | None = None) -> bytes:
    """One event; with an `id:` line where the stream is resumable (2025-11-25
    transports.mdx §Resumability: legacy streams)."""
    return event_of(encode(message), event_id)


def event_of(line: bytes, event_id: str | None = None) -> bytes:
    """The event of a message already encoded (one newline-terminated JSON line)."""
    head = EVENT if event_id is None else b"id: " + event_id.encode("ascii") + b"\n" + EVENT
    return head + line + b"\n"


def events_of(lines: list[bytes]) -> bytes:
    """The events of several encoded messages, in one piece (one copy, one write)."""
    if len(lines) == 1:
        return event_of(lines[0])
    return EVENT + b"\nevent: message\ndata: ".join(lines) + b"\n"


EVENT = b"event: message\ndata: "


def priming(event_id: str, retry_ms: int) -> bytes:
    """2025-11-25 transports.mdx §Sending Messages 6: an event with an id and empty data,
    first on a stream, so a client that loses it can resume from there (`Last-Event-ID`);
    `retry:` is how long it waits before it does."""
    return b"id: " + event_id.encode("ascii") + b"\nretry: " + str(retry_ms).encode() \
        + b"\ndata: \n\n"
