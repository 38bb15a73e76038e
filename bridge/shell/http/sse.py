"""The event-stream writer: JSON-RPC messages as Server-Sent Events on one HTTP answer.

Must not choose what goes on the stream (`modern.py` routes it); it frames. Each message is
one `data:` line (the codec never writes a raw newline inside a JSON line), events end with a
blank line; a keep-alive is a comment line (streamable-http.mdx §Receiving Messages, note on
long-lived streams). No event ids: 2026-07-28 streams are not resumable.
"""

from __future__ import annotations

from bridge.core.codec import Message, encode

KEEP_ALIVE = b":\n\n"
HEADERS = (("content-type", "text/event-stream"), ("cache-control", "no-cache"),
           ("x-accel-buffering", "no"))


def event(message: Message) -> bytes:
    return event_of(encode(message))


def event_of(line: bytes) -> bytes:
    """The event of a message already encoded (one newline-terminated JSON line)."""
    return EVENT + line + b"\n"


def events_of(lines: list[bytes]) -> bytes:
    """The events of several encoded messages, in one piece (one copy, one write)."""
    if len(lines) == 1:
        return event_of(lines[0])
    return EVENT + b"\nevent: message\ndata: ".join(lines) + b"\n"


EVENT = b"event: message\ndata: "
