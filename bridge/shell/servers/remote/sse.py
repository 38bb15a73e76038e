"""The event stream a request is answered on: its events fed to the core until its answer,
and a legacy stream cut or ended early resumed where it got to.

Must not decide what an event means (the core does): it feeds each message as a line, notes
the answer to the request so the stream can end, and keeps the place a resumption needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx2
import trio

from bridge.core.codec import decode
from bridge.shell.servers.remote.failures import CUT
from bridge.shell.servers.remote.learning import learn, screened
from bridge.streamable.media import EVENT_STREAM, media_type
from bridge.streamable.outbound import ServerBound, failure_line, is_answer

if TYPE_CHECKING:
    from bridge.shell.servers.remote.conduit import Conduit
    from bridge.shell.servers.remote.link import Link

RESUMES = 5
"""Times a legacy request's stream is resumed (GET with Last-Event-ID) before its error."""
RESUME_WAIT = 1.0
"""Seconds before a resumption when the server named no `retry`."""


class StreamPlace:
    """Where a legacy event stream got to: the last event id, the server's `retry`, and the
    transport error that cut it (None: it ended, or goes on)."""

    __slots__ = ("cut", "fed", "last_id", "retry_ms")

    def __init__(self) -> None:
        self.last_id = ""
        self.retry_ms: int | None = None
        self.cut: Exception | None = None
        self.fed = False
        """Whether the GET stream last opened fed a message (the back-off starts again)."""

    def saw(self, event: httpx2.ServerSentEvent) -> None:
        if event.id:
            self.last_id = event.id
        if event.retry is not None:
            self.retry_ms = event.retry

    def wait(self, otherwise: float) -> float:
        """Seconds to wait before reconnecting: at least what the server asked for."""
        return otherwise if self.retry_ms is None else max(otherwise, self.retry_ms / 1000)


class RequestEvents:
    """Reads the event streams that answer requests."""

    def __init__(self, conduit: Conduit) -> None:
        self._conduit = conduit

    async def answer(self, link: Link, out: ServerBound, response: httpx2.Response) -> bytes | None:
        """Feed the stream's events; its answer ends it (streamable-http.mdx §Receiving
        Messages: "The final JSON-RPC response SHOULD terminate the stream"). A legacy
        stream that ends or is cut first, having named an event id, is resumed with a GET and
        Last-Event-ID after the `retry` it asked for (transports.mdx §Resumability and
        Redelivery: after a disconnection "whether due to network failure or
        server-initiated closure"; SEP-1699's polling). A cut not resumed is the server
        going (raised to the exchange). The line the core still needs (None: it has its
        answer, or was told the server went)."""
        conduit = self._conduit
        place = StreamPlace()
        answered = await self._read(link, out, response, place)
        resumed = 0
        while not answered and link.legacy is not None and place.last_id and resumed < RESUMES:
            resumed += 1
            await trio.sleep(place.wait(RESUME_WAIT))
            headers = conduit.stream_headers(link, place.last_id)
            async with conduit.client.stream("GET", conduit.url, headers=headers) as again:
                if again.status_code == 404 and link.legacy.session_id is not None \
                        and conduit.gone(link, conduit.session_ended()):
                    return None  # the session, and the stream with it, is gone
                if again.status_code != 200 \
                        or media_type(again.headers.get("content-type")) != EVENT_STREAM:
                    break
                place.cut = None
                answered = await self._read(link, out, again, place)
        if answered:
            return None
        if place.cut is not None:
            raise place.cut
        problem = f"{conduit.url} ended the event stream of {out.method} without answering it"
        conduit.log.warning("upstream.failed", method=out.method, error=problem)
        return failure_line(out.id, problem)

    async def _read(self, link: Link, out: ServerBound, response: httpx2.Response,
                    place: StreamPlace) -> bool:
        """Feed one stream's events until `out`'s answer (True) or its end (False). A cut
        (the connection lost mid-body) of a stream that can be resumed is noted in
        `place.cut`; any other is raised."""
        conduit = self._conduit
        try:
            async for event in httpx2.EventSource(response, max_event_size=conduit.limit):
                place.saw(event)
                if not event.data:
                    continue  # a priming event: an id and a retry, no message
                await conduit.paced()
                data = event.data.encode()
                answered = (b'"result"' in data or b'"error"' in data) \
                    and is_answer(message := decode(data), out.id)
                if answered:
                    learn(conduit, link, out, message)
                    data = screened(conduit, out, message) or data
                conduit.feed(link, data)
                if answered:
                    return True
        except CUT as exc:
            if link.legacy is None or not place.last_id:
                raise
            place.cut = exc
        return False
