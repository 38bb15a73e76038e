"""Deadlines keyed by `Deadline(owner, kind)`: the core's only notion of time, fed the `now` it
is given.

Must not read a clock: callers pass `now`; cancelled keys are dropped lazily when due. Ties
between equal deadlines go to the one scheduled first, so every run fires them in one order;
deadlines due together fire one by one, so one cancelled by the handling of another never fires
(it would act on whatever replaced its owner).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterator
from enum import Enum
from typing import NamedTuple


class Deadline(NamedTuple):
    """One named deadline: what it is for (`kind`, an enum member of the module that owns
    it) and whose it is (`owner`: a minted request id, a URI, an object; None for a kind
    that exists once). Each owner module dispatches its kinds from a table.

    A NamedTuple, not a frozen dataclass: as immutable and as typed, and a forwarded request
    makes one, where a dataclass costs its frozen __setattr__ per field.
    """

    owner: Hashable
    kind: Enum


class Timers:
    """A min-heap of (deadline, sequence, key) with one live deadline per key."""

    __slots__ = ("_due", "_heap", "_sequence")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._due: dict[Deadline, float] = {}
        self._sequence = 0

    def schedule(self, key: Deadline, when: float) -> None:
        """Fire `key` at `when`, replacing any earlier deadline for it."""
        self._due[key] = when
        self._sequence += 1
        heapq.heappush(self._heap, (when, self._sequence, key))

    def cancel(self, key: Deadline) -> None:
        self._due.pop(key, None)

    def __contains__(self, key: Deadline) -> bool:
        return key in self._due

    def next_deadline(self) -> float | None:
        heap = self._heap
        while heap:
            when, _, key = heap[0]
            if self._due.get(key) == when:
                return when
            heapq.heappop(heap)  # cancelled or rescheduled
        return None

    def pop_due(self, now: float) -> Iterator[Deadline]:
        """The keys whose deadline is at or before `now`, earliest first (ties: first
        scheduled first), each forgotten as it is given. One at a time, so that what the
        caller does for one counts for the next: a key cancelled or moved meanwhile is not
        given; one scheduled meanwhile waits for the next call, even if already due."""
        heap = self._heap
        last = self._sequence
        while heap and heap[0][0] <= now and heap[0][1] <= last:
            when, _, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                yield key
