"""A legacy session's GET stream: what the server sends outside requests, fed to the core,
reopened with back-off while the link lasts.

Must not outlive its link: it runs in the link's nursery, which retiring the link cancels.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx2
import trio

from bridge.shell.servers.remote.failures import CUT, GONE
from bridge.shell.servers.remote.sse import StreamPlace

if TYPE_CHECKING:
    from bridge.shell.servers.remote.conduit import Conduit
    from bridge.shell.servers.remote.link import Link

LISTEN_BACKOFF = (1.0, 30.0)
"""First and longest wait before the GET stream is opened again after it ended."""
LISTEN_OPEN_WAIT = 1.0
"""Seconds the lines after `notifications/initialized` wait for the GET stream's first answer
(its status line) before they go on without it."""


class GetStream:
    """Opens each legacy link's GET stream, and reads it."""

    def __init__(self, conduit: Conduit) -> None:
        self._conduit = conduit

    def open(self, link: Link) -> trio.Event | None:
        """Start a legacy session's GET stream (once per link), beside the POST of its
        `notifications/initialized`; the event is set once its first attempt is answered."""
        if link.legacy is None or link.listening is not None:
            return None
        link.listening = trio.Event()
        link.start_soon(self._listen, link, link.listening, name=f"http-listen-{link.gen}")
        return link.listening

    async def opened(self, opened: trio.Event) -> None:
        """Hold the next lines until the GET stream's first attempt is answered (or failed),
        at most LISTEN_OPEN_WAIT: a request that overtook it would miss what the server sends
        on it about that request (a list_changed, or an answer a server delivers there, as
        the conformance suite's sse-retry server does)."""
        with trio.move_on_after(LISTEN_OPEN_WAIT):
            await opened.wait()
            return
        self._conduit.log.info("upstream.listen_slow", waited_s=LISTEN_OPEN_WAIT,
                               reason="the GET stream has no answer yet; requests go on "
                                      "without it")

    async def _listen(self, link: Link, opened: trio.Event) -> None:
        """transports.mdx §Listening for Messages from the Server: 405 means none, 404 that
        the session ended (§Session Management: the core starts a new one). Reopened with
        back-off when it ends, or is cut after naming an event id (§Resumability and
        Redelivery: the reconnection carries Last-Event-ID). `opened` is set once the first
        attempt has its answer, or failed, or the link retired."""
        conduit = self._conduit
        wait, longest = LISTEN_BACKOFF
        place = StreamPlace()  # across reconnections: Last-Event-ID, the server's retry
        with _setting(opened):
            while True:
                try:
                    headers = conduit.stream_headers(link, place.last_id)
                    async with conduit.client.stream("GET", conduit.url,
                                                     headers=headers) as response:
                        opened.set()
                        if not await self._listened(link, response, place):
                            return
                except (httpx2.HTTPError, httpx2.StreamError) as exc:
                    opened.set()
                    if isinstance(exc, CUT) and place.last_id:
                        conduit.log.info("upstream.listen_cut", error=repr(exc),
                                         last_event_id=place.last_id)
                    else:
                        if isinstance(exc, GONE) and conduit.gone(link, conduit.went_away(exc)):
                            return
                        conduit.log.warning("upstream.listen_failed", error=conduit.problem(exc))
                if place.fed:
                    wait = LISTEN_BACKOFF[0]
                await trio.sleep(place.wait(wait))
                wait = min(wait * 2, longest)

    async def _listened(self, link: Link, response: httpx2.Response,
                        place: StreamPlace) -> bool:
        """Feed one GET stream until it ends; False when it is not to be opened again."""
        conduit = self._conduit
        status = response.status_code
        place.fed = False
        if status == 405:
            conduit.log.info("upstream.no_listen_stream", status=405)
            return False
        if status == 404 and link.legacy is not None and link.legacy.session_id is not None:
            return not conduit.gone(link, conduit.session_ended())
        if status != 200:
            conduit.log.warning("upstream.listen_refused", status=status)
            return True
        async for event in httpx2.EventSource(response, max_event_size=conduit.limit):
            place.saw(event)
            if event.data:
                await conduit.paced()
                place.fed = True
                conduit.feed(link, event.data.encode())
        return True


@contextmanager
def _setting(event: trio.Event) -> Iterator[None]:
    """Set `event` however the block ends."""
    try:
        yield
    finally:
        event.set()
