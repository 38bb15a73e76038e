"""The driver: the only caller of the core, turning events from any thread into actions.

Must not block on a peer: the outlets it writes to queue what a pipe cannot take; must not
interpret messages (the core does) nor sleep (the runner's clock waits for deadlines).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from bridge.core.codec import encode
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
)
from bridge.shell.pumps import Outlet
from bridge.shell.supervisor import Supervisor


class Core(Protocol):
    """What the driver needs of bridge.core.bridge.Bridge (tests substitute fakes)."""

    def handle(self, event: Event, now: float) -> list[Action]: ...
    def next_deadline(self) -> float | None: ...


class Driver:
    """Feeds the core one event at a time (a lock serialises the reader threads).

    `wake` tells the runner's clock to look again: the core stopped, failed, or its next
    deadline moved earlier than the one the clock is waiting for.
    """

    def __init__(self, core: Core, log: Callable[[Log], None], notify: Callable[[], None],
                 wake: Callable[[], None]) -> None:
        self._core = core
        self._log = log
        self._notify = notify
        self._wake = wake
        self._lock = threading.Lock()
        self._gone: set[tuple[int, str]] = set()  # peers whose PeerClosed the core has had
        self._waiting_for: float | None = None  # the deadline the clock sleeps until
        self._to_client: list[bytes] = []  # this batch's writes, one write per peer
        self._to_server: list[bytes] = []
        self._retired = False
        self.client: Outlet | None = None
        self.supervisor: Supervisor | None = None
        self.stop_code: int | None = None
        self.failure: BaseException | None = None

    def post(self, event: Event, gen: int = 0) -> None:
        """Hand the core one event; `gen` is the child generation it came from (0: none)."""
        self.post_all([event], gen)

    def post_all(self, events: list[Event], gen: int = 0) -> None:
        """Hand the core several events in order, writing what they produce once per peer."""
        with self._lock:
            if self._retired:
                return
            try:
                for event in events:
                    if self.stop_code is not None or self.failure is not None:
                        break  # the core is done; shutdown is the runner's now
                    if not self._stale(gen, event):
                        self._run(event)
            except Exception as exc:  # a core bug must still end the bridge cleanly
                self.failure = exc
                self._wake()
            finally:
                self._flush()
            self._watch_deadline()

    def deadline(self) -> float | None:
        """The core's next deadline; the clock waits for it and will be woken if it moves."""
        with self._lock:
            self._waiting_for = self._core.next_deadline()
            return self._waiting_for

    def close(self) -> None:
        """Take no more events: the run is over (threads still reading are ignored)."""
        with self._lock:
            self._retired = True

    def outcome(self) -> int | None:
        """The core's exit code once it stopped (None before); re-raises a core failure.

        Read under the lock: a Stop is only seen once the writes of its batch are handed to
        the outlets, so closing them after cannot cut those writes off.
        """
        with self._lock:
            if self.failure is not None:
                raise self.failure
            return self.stop_code

    def _stale(self, gen: int, event: Event) -> bool:
        supervisor = self.supervisor
        if gen and supervisor is not None and gen != supervisor.gen:
            return True  # from a child that was replaced: the core has moved on
        if isinstance(event, PeerClosed):
            # The client's stdin EOF and a broken stdout both say "the client is gone": once.
            key = (0 if event.side == CLIENT else gen, event.side)
            if key in self._gone:
                return True
            self._gone.add(key)
        return False

    def _run(self, event: Event) -> None:
        for action in self._core.handle(event, time.monotonic()):
            if type(action) is Send:  # nearly every action: one type check, no match
                (self._to_client if action.side == CLIENT else self._to_server).append(
                    encode(action.message))
            else:
                self._execute(action)

    def _execute(self, action: Action) -> None:
        match action:
            case Log():
                self._log(action)
            case RestartChild():
                assert self.supervisor is not None
                self._flush()  # what was meant for the old child goes to the old child
                self.supervisor.restart()
            case NotifyReady():
                self._notify()
            case Stop(code=code):
                if self.stop_code is None:
                    self.stop_code = code
                    self._wake()

    def _watch_deadline(self) -> None:
        deadline = self._core.next_deadline()
        if deadline is not None and (self._waiting_for is None or deadline < self._waiting_for):
            self._waiting_for = deadline
            self._wake()

    def _flush(self) -> None:
        # A refused write means that peer is gone; PeerClosed / ChildExited tell the core.
        if self._to_client:
            assert self.client is not None
            self.client.write(_joined(self._to_client))
        if self._to_server:
            assert self.supervisor is not None
            self.supervisor.send(_joined(self._to_server))


def _joined(parts: list[bytes]) -> bytes:
    """The parts as one write (the list is emptied); one part is not copied."""
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    parts.clear()
    return data
