"""A legacy stream's event ids, and the events kept for a client that resumes it (2025-11-25
transports.mdx §Resumability and Redelivery); 2026-07-28 streams have neither.

Must not write nor wait: the front's legacy requests write what this frames, and the session
holds one log per stream. An event id is `PREFIX-N`: unique within the session, and its
prefix names the stream (§Resumability 1), so a `Last-Event-ID` says which stream to resume
and after which event.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Final, Generic, TypeVar

from bridge.core.codec import Message, encode
from bridge.streamable import sse

RETRY_MS: Final = 1000
"""The `retry:` a POST stream's priming event gives: how long a client whose connection was
lost waits before it resumes."""

Carrier = TypeVar("Carrier")


class EventLog(Generic[Carrier]):
    """One stream's events: their ids and the last `limit` sent. A message is framed (and
    kept) before it is written, so one lost with its connection is replayed. `exchange`: what
    carries a POST stream's messages to it (the shell's), None for a session's GET stream."""

    def __init__(self, prefix: str, limit: int, exchange: Carrier | None = None) -> None:
        self.prefix = prefix
        self._numbers = itertools.count(1)
        self._sent: deque[tuple[int, bytes]] = deque(maxlen=limit)
        self.exchange = exchange
        self.attached = False
        """A connection is writing this stream now (a second one would be 409)."""

    def priming(self) -> bytes:
        return sse.priming(f"{self.prefix}-{next(self._numbers)}", RETRY_MS)

    def frame(self, message: Message | list[Message]) -> bytes:
        return self.frame_line(encode(message))

    def frame_line(self, line: bytes) -> bytes:
        """The event of a message already encoded (what a route hands over)."""
        number = next(self._numbers)
        data = sse.event_of(line, f"{self.prefix}-{number}")
        self._sent.append((number, data))
        return data

    def after(self, number: int) -> list[bytes]:
        """The kept events after event `number` (the client's Last-Event-ID)."""
        return [data for n, data in self._sent if n > number]


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """A `Last-Event-ID` as (stream prefix, event number), or None if it is none of ours."""
    prefix, _, number = event_id.rpartition("-")
    return (prefix, int(number)) if prefix and number.isdigit() else None
