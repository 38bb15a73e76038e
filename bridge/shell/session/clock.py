"""A session's clock: sleeps until the core's next deadline, then tells the core.

Must not decide anything: the core says when (`next_deadline`); the driver moves the clock
when that moves (`watch`), after every batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import trio

from bridge.core.events import Event, TimerFired


class Deadlines(Protocol):
    def next_deadline(self) -> float | None: ...


class Clock:
    """Runs in the session's nursery (`run`); `watch` wakes it earlier."""

    def __init__(self, post: Callable[[Event], None], core: Deadlines) -> None:
        self._post = post
        self._core = core
        self._scope: trio.CancelScope | None = None

    def watch(self, deadline: float | None) -> None:
        """Wake for `deadline` if it is earlier than the one being waited for."""
        scope = self._scope
        if deadline is not None and scope is not None and deadline < scope.deadline:
            scope.deadline = deadline

    async def run(self) -> None:
        while True:
            deadline = self._core.next_deadline()
            with trio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._post(TimerFired())
