"""One legacy HTTP request (2025-03-26 … 2025-11-25) on the front: its session, and its
answer. Spec citations are section names of 2025-11-25 `basic/transports.mdx`.

Must not hold sessions (`legacy.py` does) nor write bytes itself beyond framing the GET
stream's events: a POSTed request is carried like a modern one (`router.Router._through_core`,
given as `carry`), with the session's routes and the `Mcp-Session-Id` header on its answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio

from bridge.core.codec import Message
from bridge.core.eras import LEGACY_PROTOCOL_VERSIONS
from bridge.shell.http import replies, sse
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.era import SESSION_HEADER, VERSION_HEADER
from bridge.shell.http.legacy import LegacySession, Sessions
from bridge.shell.http.modern import Exchange
from bridge.shell.http.replies import Reply
from bridge.shell.logs import Logger

if TYPE_CHECKING:
    from bridge.shell.http.router import Outcome, Routes

EVENT_STREAM = "text/event-stream"


class Carry(Protocol):
    """The router's way of taking a POSTed request through a core and back."""

    def __call__(self, conn: Connection, exchange: Exchange, line: bytes, outcome: Outcome,
                 routes: Routes, feed: Callable[[bytes], None],
                 headers: tuple[tuple[str, str], ...] = ()) -> Awaitable[None]: ...


class LegacyRequests:
    def __init__(self, sessions: Sessions, open_session: Callable[[], Awaitable[LegacySession]],
                 carry: Carry, log: Logger, *, keep_alive: float, grace: float) -> None:
        self._sessions = sessions
        self._open = open_session
        self._carry = carry
        self._log = log
        self._keep_alive = keep_alive
        self._grace = grace

    async def post(self, conn: Connection, request: Request, message: object,
                   outcome: Outcome) -> Reply | None:
        """A POST: a request carried to its answer, a response or notification fed to the
        session's core (202), or the refusal to answer."""
        if not isinstance(message, dict):
            return replies.legacy_batch()
        request_id, method = message.get("id"), message.get("method")
        outcome.rpc = method if isinstance(method, str) else None
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in LEGACY_PROTOCOL_VERSIONS:
            return replies.legacy_version_unsupported(request_id, version)
        found = await self._session_of(request.headers, message)
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
        exchange, line = session.admit(message, request.body)
        session.streams += 1
        try:
            await self._carry(conn, exchange, line, outcome, session, session.feed,
                              ((SESSION_HEADER, session.id),))
        finally:
            session.streams -= 1
            session.touch()
        return None

    async def _session_of(self, headers: dict[str, str],
                          message: Message) -> LegacySession | Reply:
        """§Session Management: `initialize` without an id opens a session; anything else
        needs a live one (400 without, 404 for an unknown or ended one)."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is not None:
            return self._sessions.get(session_id) or replies.session_unknown()
        method = message.get("method")
        if method != "initialize" or "id" not in message:
            return replies.session_missing(method)
        if self._sessions.full:
            limit = self._sessions.limit
            self._log.warning("http.session_refused", reason=f"max_sessions ({limit})")
            return replies.too_many_sessions(message.get("id"), limit)
        return await self._open()

    async def stream(self, conn: Connection, request: Request, outcome: Outcome) -> Reply | None:
        """A GET (the session's stream) or a DELETE (its end) naming a session."""
        session = self._sessions.get(request.headers[SESSION_HEADER])
        if session is None:
            return replies.session_unknown()
        outcome.session = session.number
        if request.method == "DELETE":  # §Session Management 5
            session.end("the client sent DELETE", self._grace)
            return replies.session_deleted()
        if EVENT_STREAM not in request.headers.get("accept", ""):
            return replies.not_acceptable()
        if session.listening:
            return replies.stream_taken()
        outcome.status, outcome.stream = 200, True
        session.listening = True
        session.streams += 1
        try:
            await conn.start_stream(200, sse.HEADERS)
            async with trio.open_nursery() as nursery:
                async def watch() -> None:
                    await conn.watch_close()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch, name="watch-close")
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._relay(conn, session, request.headers.get("last-event-id"))
                nursery.cancel_scope.cancel()
        finally:
            session.listening = False
            session.streams -= 1
            session.touch()
        return None

    async def _relay(self, conn: Connection, session: LegacySession,
                     last_event: str | None) -> None:
        """The GET stream: what the client missed after `last_event` (§Resumability), then
        each message as it comes, a keep-alive comment after `keep_alive` of quiet, and the
        stream's end once the session ends."""
        for missed in (session.replay_after(last_event) or []) if last_event else []:
            await conn.send(sse.event(missed.message, missed.event_id))
        while True:
            with trio.move_on_after(self._keep_alive) as waited:
                queued = await session.next_queued()
            if waited.cancelled_caught:
                await conn.send(sse.KEEP_ALIVE)
                continue
            if queued is None:
                break
            await conn.send(sse.event(queued.message, queued.event_id))
        await conn.end_stream()
