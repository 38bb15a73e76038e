"""A server generation's tasks: a nursery of their own inside the session's.

A generation is one life of the server side: a child process (its incarnation) or one session
with a remote endpoint (its link). Its tasks run in its nursery, so ending it cancels them all
at once and none outlives it; and what it still says after it was retired never reaches the
core (the driver drops the lines of a retired source: `retired` is what it reads).

The nursery opens in a task of the session's nursery, and a generation is made and given its
first tasks by synchronous code (a restart runs in the driver, which must not wait): tasks
started before the nursery is open wait for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

Task = Callable[..., Awaitable[object]]


class Generation:
    """The nursery of one server generation, and whether it still serves."""

    __slots__ = ("_early", "_nursery", "_scope", "ended", "retired")

    def __init__(self, parent: trio.Nursery, name: str) -> None:
        self._scope = trio.CancelScope()
        self._nursery: trio.Nursery | None = None
        self._early: list[tuple[Task, tuple[Any, ...], str]] = []
        """Tasks started before the nursery was open."""
        self.ended = trio.Event()
        """Set once every task of the generation has returned."""
        self.retired = False
        """Whether the generation was retired: its tasks are cancelled, or being. A plain
        attribute, not the scope's `cancel_called` (a property that reads the clock): the
        driver reads it for every line the server sends."""
        parent.start_soon(self._host, name=name)

    def start_soon(self, task: Task, *args: Any, name: str) -> None:
        """Run `task` in the generation; a retired generation starts nothing."""
        if self.retired:
            return
        if self._nursery is None:
            self._early.append((task, args, name))
        else:
            self._nursery.start_soon(task, *args, name=name)

    def retire(self) -> None:
        """Cancel every task of the generation: nothing more of it reaches the core."""
        self.retired = True
        self._scope.cancel()

    async def _host(self) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    early, self._early = self._early, []
                    for task, args, name in early:
                        nursery.start_soon(task, *args, name=name)
                    await trio.sleep_forever()  # open for later tasks until retired
        finally:
            self.ended.set()
