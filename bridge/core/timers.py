"""Deadlines keyed by name: the core's only notion of time, fed by the `now` it is given.

Must not read a clock: callers pass `now`; cancelled keys are dropped lazily when due.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable


class Timers:
    """A min-heap of (deadline, key) with one live deadline per key."""

    __slots__ = ("_due", "_heap")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Hashable]] = []
        self._due: dict[Hashable, float] = {}

    def schedule(self, key: Hashable, when: float) -> None:
        """Fire `key` at `when`, replacing any earlier deadline for it."""
        self._due[key] = when
        # id() breaks ties without comparing keys of different types.
        heapq.heappush(self._heap, (when, id(key), key))

    def cancel(self, key: Hashable) -> None:
        self._due.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._due

    def next_deadline(self) -> float | None:
        heap = self._heap
        while heap:
            when, _, key = heap[0]
            if self._due.get(key) == when:
                return when
            heapq.heappop(heap)  # cancelled or rescheduled
        return None

    def pop_due(self, now: float) -> list[Hashable]:
        """The keys whose deadline is at or before `now`, earliest first, now forgotten."""
        fired: list[Hashable] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, _, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                fired.append(key)
        return fired
