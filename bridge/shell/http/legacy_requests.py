"""One legacy HTTP request (2025-03-26 … 2025-11-25) on the front: its session, and its
answer. Spec citations are section names of 2025-11-25 `basic/transports.mdx`.

Must not hold sessions (`legacy.py` does): a POSTed request is carried like a modern one
(`router.RequestRouter._through_core`, given as `carry`: the core, the client's close), with the
session's routes, the `Mcp-Session-Id` header on its answer, and an answer of its own: always
an event stream, primed with an event id (§Sending Messages 6), every event with an id, so a
client that loses the connection resumes it by GET with `Last-Event-ID` (§Resumability).
In a fleet, a request (POST, GET or DELETE) for a session another node holds is that node's
to answer: it is forwarded there (`forward.py`) before anything else is looked at.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

import trio

from bridge.core.codec import Message
from bridge.core.eras import LEGACY_PROTOCOL_VERSIONS
from bridge.core.events import CLIENT, MessageDecoded
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.legacy import LegacySession, Sessions
from bridge.shell.http.modern import EventLog, PostExchange, Routes
from bridge.shell.http.outcome import Outcome
from bridge.streamable import replies, sse
from bridge.streamable.era import OPENS_SESSION, SESSION_HEADER, VERSION_HEADER
from bridge.streamable.event_ids import parse_event_id
from bridge.streamable.media import EVENT_STREAM
from bridge.streamable.replies import Reply

if TYPE_CHECKING:
    from bridge.shell.http.fleet import Fleet
    from bridge.shell.http.forward import Gone

Answer = Callable[[Connection, PostExchange, Outcome, tuple[tuple[str, str], ...]],
                  Awaitable[bool]]
"""Writes a POST's answer from its route; True once it is out (else the client left)."""


class Forward(Protocol):
    """Sends a request to the node at the address given (`forward.Forwarder.forward`) and its
    answer back; or the answer to give when it cannot (`gone`'s, given why; by default a
    session's end)."""

    def __call__(self, conn: Connection, request: Request, holder: str, outcome: Outcome,
                 gone: Gone = ...) -> Awaitable[Reply | None]: ...


def _method_of(message: object) -> str | None:
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


OpenSession = Callable[[], Awaitable[LegacySession | None]]
"""Opens a legacy session with its server started (None: it could not be)."""


class Carry(Protocol):
    """The router's way of taking a POSTed request through a core and back."""

    def __call__(self, conn: Connection, exchange: PostExchange, hand_in: Callable[[], None],
                 outcome: Outcome, routes: Routes, feed: Callable[[bytes], None],
                 headers: tuple[tuple[str, str], ...] = (),
                 answer: Answer | None = None) -> Awaitable[None]: ...


class LegacyRequests:
    def __init__(self, sessions: Sessions, open_session: OpenSession, carry: Carry, *,
                 keep_alive: float, grace: float, fleet: Fleet | None = None,
                 forward: Forward | None = None,
                 refuse_new: Callable[[object], Reply | None] = lambda _: None) -> None:
        """`fleet` and `forward`: in a fleet, which node holds a session, and how a request
        for one this node does not hold reaches it; `refuse_new`: a draining node's refusal
        of a new session (its `initialize`'s id given), None to open it."""
        self._sessions = sessions
        self._open = open_session
        self._carry = carry
        self._keep_alive = keep_alive
        self._grace = grace
        self._fleet = fleet
        self._forward = forward
        self._refuse_new = refuse_new

    def _holder(self, request: Request, outcome: Outcome) -> str | None:
        """The other node holding the session `request` names, to forward it to; None to
        look the session up here (this node's, or no id of the fleet: then unknown). A
        request another node forwarded is never forwarded again."""
        session_id = request.headers.get(SESSION_HEADER)
        if self._fleet is None or session_id is None or outcome.forwarded_by is not None:
            return None
        return self._fleet.holder(session_id)

    async def post(self, conn: Connection, request: Request, message: object,
                   outcome: Outcome) -> Reply | None:
        """A POST: a request carried to its answer, a response or notification fed to the
        session's core (202), or the refusal to answer; for a session another node of the
        fleet holds, whatever that node answers."""
        holder = self._holder(request, outcome)
        if holder is not None and self._forward is not None:
            outcome.rpc = _method_of(message)
            return await self._forward(conn, request, holder, outcome)
        if not isinstance(message, dict):
            return replies.legacy_batch()
        request_id, method = message.get("id"), message.get("method")
        outcome.rpc = method if isinstance(method, str) else None
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in LEGACY_PROTOCOL_VERSIONS:
            return replies.legacy_version_unsupported(request_id, version)
        found = await self._session_of(request.headers, message, outcome)
        if not isinstance(found, LegacySession):
            return found
        session = found
        outcome.session = session.number
        session.touch()
        if method is None or "id" not in message:  # §Sending Messages 4
            session.accept(message, request.body)
            return replies.accepted()
        if session.in_flight(request_id):
            return replies.id_in_flight(request_id)
        exchange, log, line = session.admit(message, request.body)
        assert session.driver is not None
        # The core takes the value decoded here (and the line that spells it): parsed once.
        hand_in = partial(session.driver.decoded, MessageDecoded(CLIENT, message, line))
        session.streams += 1
        try:
            await self._carry(conn, exchange, hand_in, outcome, session, session.feed,
                              ((SESSION_HEADER, session.id),), partial(self._post_stream, log))
        finally:
            session.streams -= 1
            session.touch()
        return None

    async def _session_of(self, headers: dict[str, str], message: Message,
                          outcome: Outcome) -> LegacySession | Reply:
        """§Session Management: `initialize` without an id opens a session; anything else
        needs a live one (400 without, 404 for an unknown or ended one)."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is not None:
            return self._bound(session_id, outcome) or replies.session_unknown()
        method = message.get("method")
        if method != OPENS_SESSION or "id" not in message:
            return replies.session_missing(method)
        refused = self._refuse_new(message.get("id"))
        if refused is not None:
            return refused
        if self._sessions.full and self._sessions.make_room() is None:
            # logged once, as the request's `http.request` line
            return replies.too_many_sessions(message.get("id"), self._sessions.limit)
        session = await self._open()
        if session is None:
            return replies.session_not_started(message.get("id"))
        session.credential = outcome.credential
        return session

    def _bound(self, session_id: str, outcome: Outcome) -> LegacySession | None:
        """The live session of `session_id` if this request's credential opened it: another
        token's client gets 404, as for an id that never existed (the id names no session
        of theirs, and says nothing of others')."""
        session = self._sessions.get(session_id)
        if session is None or session.credential != outcome.credential:
            return None
        return session

    async def stream(self, conn: Connection, request: Request, outcome: Outcome) -> Reply | None:
        """A GET (the session's stream) or a DELETE (its end) naming a session."""
        holder = self._holder(request, outcome)
        if holder is not None and self._forward is not None:
            return await self._forward(conn, request, holder, outcome)
        session = self._bound(request.headers[SESSION_HEADER], outcome)
        if session is None:
            return replies.session_unknown()
        outcome.session = session.number
        if request.method == "DELETE":  # §Session Management 5
            session.end("the client sent DELETE", self._grace)
            return replies.session_deleted()
        if EVENT_STREAM not in request.headers.get("accept", ""):
            return replies.not_acceptable()
        return await self._get(conn, session, request.headers.get("last-event-id"), outcome)

    async def _get(self, conn: Connection, session: LegacySession, last_event_id: str | None,
                   outcome: Outcome) -> Reply | None:
        """A GET: the resumption of the stream its `Last-Event-ID` names (§Resumability 2),
        else the session's GET stream (§Listening for Messages); one writer per stream."""
        resumed = parse_event_id(last_event_id) if last_event_id else None
        log = session.stream_log(resumed[0]) if resumed is not None else None
        after = resumed[1] if resumed is not None else 0
        if log is not None and log.exchange is not None:  # a POST's stream
            if log.attached:
                return replies.stream_taken()
            await self._resume(conn, session, log, after, outcome)
            return None
        if session.listening:
            return replies.stream_taken()
        session.listening = True
        try:
            missed = log.after(after) if log is not None else []
            await self._watched(conn, session, outcome, partial(self._listen, session, missed))
        finally:
            session.listening = False
        return None

    async def _watched(self, conn: Connection, session: LegacySession, outcome: Outcome,
                       relay: Callable[[Connection], Awaitable[None]]) -> None:
        """A GET's event stream, `relay` writing it, until it ends or the client leaves."""
        outcome.status, outcome.stream = 200, True
        session.streams += 1
        try:
            await conn.start_stream(200, sse.HEADERS)

            async def relay_all() -> None:
                await relay(conn)
                await conn.end_stream()

            await conn.until_closed(relay_all)
        finally:
            session.streams -= 1
            session.touch()

    async def _listen(self, session: LegacySession, missed: list[bytes],
                      conn: Connection) -> None:
        """The GET stream: what the client missed (§Resumability), then each message as it
        comes, a keep-alive comment after `keep_alive` of quiet, until the session ends."""
        for event in missed:
            await conn.send(event)
        while True:
            with trio.move_on_after(self._keep_alive) as waited:
                data = await session.next_queued()
            if waited.cancelled_caught:
                await conn.send(sse.KEEP_ALIVE)
                continue
            if data is None:
                return
            await conn.send(data)

    async def _post_stream(self, log: EventLog, conn: Connection, exchange: PostExchange,
                           outcome: Outcome, headers: tuple[tuple[str, str], ...]) -> bool:
        """A POST's answer: an event stream, its priming event first (§Sending Messages 6),
        then the request's messages until its answer."""
        outcome.status, outcome.stream = 200, True
        log.attached = True
        try:
            await conn.start_stream(200, (*sse.HEADERS, *headers))
            await conn.send(log.priming())
            await self._relay_route(conn, log)
            await conn.end_stream()
            return True
        finally:
            log.attached = False

    async def _resume(self, conn: Connection, session: LegacySession, log: EventLog,
                      last: int, outcome: Outcome) -> None:
        """§Resumability 2: a POST stream resumed by GET: the events after `last`, then the
        rest of the stream, on this connection (never on another stream)."""
        log.attached = True
        try:
            async def relay(conn: Connection) -> None:
                for data in log.after(last):
                    await conn.send(data)
                await self._relay_route(conn, log)

            await self._watched(conn, session, outcome, relay)
        finally:
            log.attached = False

    async def _relay_route(self, conn: Connection, log: EventLog) -> None:
        """The messages of a POST stream's route until it closes (its answer delivered, or
        the session ended); each framed, and kept, before it is written."""
        assert log.exchange is not None
        route = log.exchange.route
        while True:
            with trio.move_on_after(self._keep_alive) as waited:
                try:
                    taken = await route.take()  # all it holds, in one write
                except trio.EndOfChannel:
                    return
            if waited.cancelled_caught:
                await conn.send(sse.KEEP_ALIVE)
                continue
            await conn.send(b"".join(log.frame_line(outgoing.line) for outgoing in taken))
