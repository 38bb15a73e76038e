"""One session with the endpoint: the HTTP twin of a child's incarnation.

A link is a server generation (session/generation.py): every task that works for it (its
dispatcher, its requests, its GET stream, the wait for the endpoint) runs in its nursery, so
retiring it (the core restarted the server, or the session ends) cancels them all, and what
it still receives never reaches the core. It also carries the lines the core wrote for it, in
order, to its dispatcher.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import trio

from bridge.shell.session.generation import Generation, Task
from bridge.streamable.outbound import ServerSession


class Link:
    """One session with the endpoint, its tasks, and what the core wrote for it."""

    __slots__ = ("_cancels", "_generation", "_receive", "_send", "gen", "legacy", "listening",
                 "lost", "served")

    def __init__(self, gen: int, parent: trio.Nursery) -> None:
        self.gen = gen
        self._generation = Generation(parent, f"http-link-{gen}")
        self.legacy: ServerSession | None = None
        """Set once the core sent `initialize`: the server is legacy, this its session."""
        self.listening: trio.Event | None = None
        """Once the GET stream was started: set when its first attempt got an answer or
        failed, or the link retired."""
        self.served = False
        """Whether the server answered this link over HTTP at all (any status)."""
        self.lost = False
        """Whether the core was told the server went (once per link)."""
        self._cancels: dict[str | int, trio.CancelScope] = {}
        """The scope of each request under way, by its id: what cancelling it ends."""
        self._send, self._receive = trio.open_memory_channel[bytes](math.inf)

    @property
    def retired(self) -> bool:
        return self._generation.retired

    def start_soon(self, task: Task, *args: object, name: str) -> None:
        """Run `task` for this link (not once it is retired)."""
        self._generation.start_soon(task, *args, name=name)

    def retire(self) -> int:
        """Cancel the link's tasks; the bytes the core wrote that its dispatcher had not
        taken yet (they are dropped)."""
        self._generation.retire()
        self._send.close()
        untaken = 0
        while True:
            try:
                untaken += len(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return untaken

    # The core's lines, in order ----------------------------------------------------------

    def put(self, data: bytes) -> None:
        """Hand the dispatcher the lines in `data` (never blocks)."""
        self._send.send_nowait(data)

    def written(self) -> trio.MemoryReceiveChannel[bytes]:
        """What the core wrote, in order, for the link's dispatcher."""
        return self._receive

    # Requests under way ------------------------------------------------------------------

    @contextmanager
    def cancellable(self, request_id: str | int | None) -> Iterator[trio.CancelScope]:
        """A scope that `cancel(request_id)` ends (the client cancelled the request)."""
        with trio.CancelScope() as scope:
            if request_id is not None:
                self._cancels[request_id] = scope
            try:
                yield scope
            finally:
                if request_id is not None and self._cancels.get(request_id) is scope:
                    del self._cancels[request_id]

    def cancel(self, request_id: object) -> bool:
        """End request `request_id`'s exchange; whether it was under way."""
        scope = self._cancels.get(request_id) if isinstance(request_id, str | int) else None
        if scope is not None:
            scope.cancel()
        return scope is not None
