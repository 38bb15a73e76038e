"""Legacy HTTP sessions (clients of 2025-03-26 … 2025-11-25): the table of sessions, and one
session's client side, which routes what its core sends the client.

Must not read or write HTTP (`legacy_requests.py` does) nor decide anything for the protocol
(each session's own core does). A legacy session is a bridge session of its own
(bridge/shell/session/session.py), as the daemon gives each Unix-socket connection: its own core and
its own server (the front runs it), one client, so no ids are renamed. Spec citations are
section names of 2025-11-25 `basic/transports.mdx`.

What the core sends the client goes (§Sending Messages 6, §Listening for Messages):
  - to the stream of the POST whose request it names (`Send.request`): its answer, and the
    questions, progress and logs that belong to it, also while that POST's connection is
    lost (the client resumes the stream by GET with `Last-Event-ID`);
  - else to the session's GET stream (a `list_changed`, a legacy server's own request), held
    in a bounded queue while no GET stream is open (the oldest dropped, logged).
Every stream's events carry ids (`EventLog`) and its last ones are kept for a resumption
(§Resumability and Redelivery).
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from bridge.core.codec import Message, encode
from bridge.core.events import CLIENT, MessageDecoded, Send, ShutdownRequested
from bridge.shell.http.auth import Credential
from bridge.shell.http.modern import EventLog, PostExchange, open_exchange
from bridge.shell.http.route import STREAM_BACKLOG, Outgoing, RouteState
from bridge.shell.logs import Logger
from bridge.shell.session.driver import line_of
from bridge.shell.session.sides import NEVER_FULL

if TYPE_CHECKING:
    from bridge.shell.fdio.pump import Throttle
    from bridge.shell.session.driver import Driver

QUEUE_LIMIT = 256
"""Messages held for the GET stream while none is open; one more drops the oldest."""
REPLAY_LIMIT = 256
"""Events of one stream kept for a client that resumes it (§Resumability)."""
STREAMS_KEPT = 32
"""POST streams a session keeps for resumption; one more forgets the oldest."""
ID_BYTES = 32
"""secrets.token_urlsafe's bytes of randomness: 43 visible ASCII characters (§Session
Management: globally unique, cryptographically secure, 0x21 to 0x7E). In a fleet the id
also names the node that holds the session (`bridge.fleet.ids`), with as many random bytes."""
GET_PREFIX = "g"
POST_PREFIX = "p"




class LegacySession:
    """One legacy client's side of its bridge session: its routes, its GET stream's queue,
    its activity. The session opens it (`driver` is set then), before the first request."""

    def __init__(self, session_id: str, number: int, log: Logger, *, idle: float,
                 queue_limit: int = QUEUE_LIMIT, replay_limit: int = REPLAY_LIMIT,
                 backlog: int = STREAM_BACKLOG) -> None:
        self.id = session_id
        self.number = number
        self._log = log
        self._idle = idle
        self._backlog = backlog
        self.driver: Driver | None = None
        self._routes: dict[object, PostExchange] = {}
        self._pending: deque[Message | list[Message]] = deque()
        self._queue_limit = queue_limit
        self._replay_limit = replay_limit
        self.get_log = EventLog(GET_PREFIX, replay_limit)
        self._post_logs: OrderedDict[str, EventLog] = OrderedDict()
        self._posts = itertools.count(1)
        self._arrived = trio.Event()
        self.listening = False
        """A GET stream is open (§Listening: one per session here)."""
        self.streams = 0
        """Streams open (POSTs waiting for their answer, the GET stream): not idle."""
        self.last_active = trio.current_time()
        self.ended = False
        self.credential: Credential | None = None
        """The token that opened it (when tokens are in force): only its bearer may use it."""

    # Requests in -------------------------------------------------------------------------

    def touch(self) -> None:
        self.last_active = trio.current_time()

    def in_flight(self, request_id: object) -> bool:
        return request_id in self._routes

    def admit(self, message: Message, body: bytes) -> tuple[PostExchange, EventLog, bytes]:
        """A POSTed request: its route, its stream's event log, the line to hand the core."""
        request_id = message.get("id")
        exchange = open_exchange(request_id, str(request_id), str(message.get("method")),
                                 self._log, self._backlog, session=self.number)
        self._routes[request_id] = exchange
        log = EventLog(f"{POST_PREFIX}{next(self._posts)}", self._replay_limit, exchange)
        self._post_logs[log.prefix] = log
        if len(self._post_logs) > STREAMS_KEPT:
            self._post_logs.popitem(last=False)
        return exchange, log, _line(message, body)

    def stream_log(self, prefix: str) -> EventLog | None:
        """The stream an event id names (the GET stream, or a POST stream still kept)."""
        return self.get_log if prefix == GET_PREFIX else self._post_logs.get(prefix)

    def accept(self, message: Message, body: bytes) -> None:
        """A POSTed response or notification: to the core, as the value decoded here (and the
        line that spells it), parsed once."""
        assert self.driver is not None
        self.driver.decoded(MessageDecoded(CLIENT, message, _line(message, body)))

    @staticmethod
    def abandon(exchange: PostExchange) -> bytes | None:
        """The POST's connection closed before its answer. §Sending Messages 6: that is not a
        cancellation; the route stays, so what the core still sends for the request waits on
        its channel for the client to resume the stream (GET with `Last-Event-ID`)."""
        return None

    def feed(self, line: bytes) -> None:
        assert self.driver is not None
        self.driver.lines(CLIENT, [line])

    # Messages out ------------------------------------------------------------------------

    batch = None
    throttle = NEVER_FULL
    """What the core sends is queued per stream, each within its own bound (`route.py`)."""

    def send(self, send: Send) -> None:
        """A message the core sends the client: onto its POST's stream, else the GET stream.
        The driver calls it, so it must not wait."""
        message = send.message
        request = send.request
        exchange = self._routes.get(request) if request is not None else None
        if exchange is None or not isinstance(message, dict):
            self._queue(message)
            return
        is_answer = "method" not in message and message.get("id") == request
        if is_answer:
            del self._routes[request]
        route = exchange.route
        # Ids pass as they are (one client per session): the core's line is the client's.
        line = line_of(send)
        if not route.put(Outgoing(line, is_answer)) and route.state is RouteState.CLOSED:
            self._log.warning("http.dropped", session=self.number, method=message.get("method"),
                              request=request, reason="the POST's stream is gone")
        if is_answer:
            route.close()

    def _queue(self, message: Message | list[Message]) -> None:
        if self.ended:
            return
        if len(self._pending) >= self._queue_limit:
            dropped = self._pending.popleft()
            self._log.warning("http.dropped", session=self.number,
                              method=dropped.get("method") if isinstance(dropped, dict)
                              else "(batch)",
                              reason=f"no GET stream took it; over {self._queue_limit} held")
        self._pending.append(message)
        self._arrived.set()

    async def next_queued(self) -> bytes | None:
        """The GET stream's next event, framed (and kept for a resumption), or None once
        the session ended."""
        while not self._pending:
            if self.ended:
                return None
            self._arrived = trio.Event()
            await self._arrived.wait()
        return self.get_log.frame(self._pending.popleft())

    # Its life ------------------------------------------------------------------------------

    def end(self, reason: str, grace: float = 0.0) -> None:
        """Ask the core to stop (answering what it owes within `grace`); its child follows."""
        if self.ended:
            return
        self.ended = True
        self._arrived.set()
        self._log.info("http.session_ending", session=self.number, reason=reason)
        assert self.driver is not None
        self.driver.post(ShutdownRequested(grace))

    def open(self, driver: Driver, nursery: trio.Nursery) -> None:
        self.driver = driver
        nursery.start_soon(self._watch_idle, name=f"idle-{self.number}")

    def listen(self, server: Throttle) -> None:
        """Requests come as connections carry them (`feed`, `accept`)."""

    async def drain(self, stall_timeout: float) -> None:
        """The core stopped: every stream ends once it has written what is queued (each
        within its connection's own stall timeout)."""
        self.close()

    def close(self) -> None:
        self.ended = True
        self._arrived.set()
        for exchange in list(self._routes.values()):
            exchange.route.close()
        self._routes.clear()

    async def _watch_idle(self) -> None:
        """§Session Management 3: the server may end a session; one with no request and no
        open stream for `idle` seconds ends (its child is stopped)."""
        while True:
            await trio.sleep_until(self.last_active + self._idle)
            if self.streams:
                self.touch()  # an open stream is activity; its closing touches again
            elif trio.current_time() >= self.last_active + self._idle:
                self.end(f"idle for {self._idle:g} s (session_idle)")
                return


def _line(message: Message, body: bytes) -> bytes:
    """The line to hand the core: the body itself unless it spans lines (the core may pass a
    line on to the server as it is, and the server reads one message a line)."""
    return body if b"\n" not in body and b"\r" not in body else encode(message)


def _random_id() -> str:
    return secrets.token_urlsafe(ID_BYTES)


EVICTABLE_AFTER = 10.0
"""Seconds without a request before a session with no open stream may be ended to make
room (a new session's client opens its GET stream right after `initialize`)."""


class Sessions:
    """The legacy sessions by id. A place is taken when a session is added (in the request
    that opens it), so a burst of `initialize` cannot pass `limit`."""

    def __init__(self, limit: int, mint: Callable[[], str] | None = None) -> None:
        """`mint`: a new session's id (in a fleet, one naming this node: `fleet.Fleet`)."""
        self.limit = limit
        self._mint = mint or _random_id
        self._by_id: dict[str, LegacySession] = {}
        self._numbers = itertools.count(1)
        self._emptied = trio.Event()

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def full(self) -> bool:
        """`limit` live sessions (one ending no longer counts: its child is stopping)."""
        return sum(not session.ended for session in self._by_id.values()) >= self.limit

    def make_room(self) -> LegacySession | None:
        """Full: end the live session idle longest among those with no open stream and no
        request for `EVICTABLE_AFTER` s, and return it; None if every session is in use.
        A client that is still there keeps its GET stream open; many never DELETE (the
        inspector CLI opens a session per call), so this is where their sessions go."""
        now = trio.current_time()
        idle = [session for session in self._by_id.values() if not session.ended
                and not session.streams and session.last_active + EVICTABLE_AFTER <= now]
        if not idle:
            return None
        oldest = min(idle, key=lambda session: session.last_active)
        oldest.end(f"max_sessions ({self.limit}) reached: the session idle longest, with "
                   "no open stream, makes room for a new one")
        return oldest

    def get(self, session_id: str) -> LegacySession | None:
        """The live session of `session_id`; None for an unknown or ended one."""
        session = self._by_id.get(session_id)
        return None if session is None or session.ended else session

    def new(self, log: Logger, idle: float, backlog: int = STREAM_BACKLOG) -> LegacySession:
        session = LegacySession(self._mint(), next(self._numbers), log,
                                idle=idle, backlog=backlog)
        self._by_id[session.id] = session
        return session

    def discard(self, session: LegacySession) -> None:
        self._by_id.pop(session.id, None)
        if not self._by_id:
            self._emptied.set()

    def end_all(self, grace: float) -> None:
        for session in list(self._by_id.values()):
            session.end("the front is stopping", grace)

    async def wait_empty(self) -> None:
        while self._by_id:
            self._emptied = trio.Event()
            await self._emptied.wait()
