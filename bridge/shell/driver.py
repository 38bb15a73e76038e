"""The driver: the only caller of the core, turning inbox events and deadlines into actions.

Must not block on a peer: sends are queued for the writers, never awaited; must not interpret
messages (the core does) nor sleep (it waits on its inbox with the core's deadline).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol

import trio

from bridge.core.events import (
    CLIENT,
    Action,
    Event,
    Log,
    NotifyReady,
    PeerClosed,
    RestartChild,
    Send,
    Stop,
    TimerFired,
)
from bridge.shell.pumps import Outbox, Tagged
from bridge.shell.supervisor import Supervisor


class Core(Protocol):
    """What the driver needs of bridge.core.bridge.Bridge (tests substitute fakes)."""

    def handle(self, event: Event, now: float) -> list[Action]: ...
    def next_deadline(self) -> float | None: ...


class Driver:
    def __init__(
        self,
        core: Core,
        inbox: trio.MemoryReceiveChannel[Tagged],
        client: Outbox,
        supervisor: Supervisor,
        log: Callable[[Log], None],
        notify: Callable[[], None],
    ) -> None:
        self._core = core
        self._inbox = inbox
        self._client = client
        self._supervisor = supervisor
        self._log = log
        self._notify = notify
        self._closed: set[tuple[int, str]] = set()

    async def run(self) -> int:
        """Feed the core until it says Stop; the exit code it chose."""
        while True:
            event = await self._next_event()
            if event is None:
                continue
            stop: int | None = None
            for action in self._core.handle(event, trio.current_time()):
                code = self._execute(action)
                stop = code if code is not None else stop
            if stop is not None:
                return stop

    async def _next_event(self) -> Event | None:
        deadline = self._core.next_deadline()
        if deadline is not None and deadline <= trio.current_time():
            await trio.lowlevel.checkpoint()
            return TimerFired()
        # Under load the inbox is rarely empty: taking what is there skips a cancel scope per
        # event (the dominant cost here); the bounded inbox bounds the run between checkpoints.
        try:
            gen, event = self._inbox.receive_nowait()
        except trio.WouldBlock:
            if deadline is None:  # no timer pending: a cancel scope would be pure cost
                gen, event = await self._inbox.receive()
                return self._filter(gen, event)
            with trio.move_on_at(deadline):
                gen, event = await self._inbox.receive()
                return self._filter(gen, event)
            return TimerFired()
        return self._filter(gen, event)

    def _filter(self, gen: int, event: Event) -> Event | None:
        if gen and gen != self._supervisor.gen:
            return None  # from a child that was replaced: the core has moved on
        if isinstance(event, PeerClosed):
            # The client's stdin EOF and a broken stdout both say "the client is gone": once.
            key = (0 if event.side == CLIENT else gen, event.side)
            if key in self._closed:
                return None
            self._closed.add(key)
        return event

    def _execute(self, action: Action) -> int | None:
        match action:
            case Send(side=side, message=message):
                self._send(side, message)
            case Log():
                self._log(action)
            case RestartChild():
                self._supervisor.restart()
            case NotifyReady():
                self._notify()
            case Stop(code=code):
                return code
        return None

    def _send(self, side: str, message: object) -> None:
        if side == CLIENT:
            # Refused only once the client's stdout broke; PeerClosed told the core.
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                self._client.send_nowait(message)
        else:
            # False means the child's stdin is gone; ChildExited / PeerClosed tell the core.
            self._supervisor.send(message)
