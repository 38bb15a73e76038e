"""The HTTP upstream: a Streamable HTTP endpoint that looks to the driver like a server child.

Must not interpret the protocol beyond what the transport needs (the core decides): it turns
each line the core writes into a POST (`bridge/streamable/outbound.py` says how) and each
answer into lines fed back, as the supervisor does with a child's pipes. Every request the core
sends gets exactly one line back (the server's answer, or an error line) unless the core
cancelled it.

Each session with the endpoint is a `Link` (link.py), a server generation with a nursery of
its own in the session's; retiring it (the core restarted the server, or the session ends)
cancels its tasks, and what it still receives never reaches the core:

    dispatch   the core's lines in order → one POST each; a request in a task of its own
               (but `initialize`, whose session id every later POST needs), at most
               `Network.connections` at once, the others waiting their turn in order
               (slots.py); a notification or a response awaited before the next line
               (ordered, as on a pipe)
    request-N  its POST (exchange.py); a JSON answer or the events of its stream (sse.py)
               → lines to the core
    listen     legacy only: the GET stream, reopened with back-off while the link lasts
               (listen.py)
    restart    a new link: the endpoint reachable again, or the old session ended (reach.py)

Back-pressure, as for a child on a pipe: too many requests waiting (or lines not yet taken)
make the upstream `congested`, so the client's reader stops until it is `relieved`; and the
reading of answers and events waits while the client's outlet (`feeds`) is congested.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import httpx2
import trio

from bridge.core.events import ChildStarted
from bridge.shell.logs import Logger
from bridge.shell.servers.remote.auth import AuthProvider, StaticHeaders
from bridge.shell.servers.remote.conduit import Conduit, Feed
from bridge.shell.servers.remote.endpoint import Endpoint
from bridge.shell.servers.remote.exchange import Poster
from bridge.shell.servers.remote.link import Link
from bridge.shell.servers.remote.listen import GetStream
from bridge.shell.servers.remote.reach import REACH_AT_MOST, Reachability
from bridge.shell.servers.remote.slots import Slots
from bridge.streamable.outbound import (
    Handling,
    ServerBound,
    ServerSession,
    handling,
    read_outgoing,
)

if TYPE_CHECKING:
    from bridge.shell.fdio.pump import Throttle
    from bridge.shell.session.sides import OpenServer


class HttpUpstream:
    """The server side of a session when the server is a URL: what the driver writes to."""

    def __init__(self, endpoint: Endpoint, driver: Feed, nursery: trio.Nursery, log: Logger,
                 *, limit: int, feeds: Throttle | None = None, auth: AuthProvider | None = None,
                 transport: httpx2.AsyncBaseTransport | None = None,
                 reach_first: bool = False) -> None:
        """`reach_first`: every session with the endpoint, the first one and those after it
        went, waits until it answers (a service that outlives the server's outages; its
        readiness stays red meanwhile), instead of starting at once, or after REACH_AT_MOST
        (a client waits: each request gets its error while the server is not there)."""
        self._reach_first = reach_first
        self._nursery = nursery
        self._log = log = log.bind(url=endpoint.url)
        conduit = Conduit(endpoint, driver, log, auth or StaticHeaders(endpoint.headers),
                          limit=limit, feeds=feeds, transport=transport)
        self._conduit = conduit
        self._poster = Poster(conduit)
        self._slots = Slots(endpoint.network.connections, self._poster.request, log)
        self._get = GetStream(conduit)
        self._reach = Reachability(conduit)
        self._hurried = False
        self._link = self._linked(1)

    # What the session and the driver call ------------------------------------------------

    @property
    def congested(self) -> bool:
        return self._slots.congested

    async def relieved(self) -> None:
        """Return once the upstream takes lines again (at once if it does)."""
        await self._slots.relieved()

    def write(self, data: bytes) -> bool:
        """Send the lines in `data` (whole lines, as the driver writes them), in order."""
        link = self._link
        if link.retired:
            return False
        link.put(data)
        self._slots.queue(len(data))
        return True

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        """As `write`: a POST's body is one bytes object."""
        return self.write(b"".join(pieces))

    def serve(self, child: object = None) -> None:
        """Start: the endpoint is "started" at once (a request finds out if it is there),
        or with `reach_first` once it answers."""
        link = self._link
        if self._reach_first:
            link.start_soon(self._first_reached, name="http-reach")
            return
        self._started(link)

    def restart(self) -> None:
        """A new session with the endpoint; what the old one still owes is dropped."""
        old = self._link
        self._retire(old)
        new = self._link = self._linked(old.gen + 1)
        new.start_soon(self._restarted, old, new, name=f"http-restart-{new.gen}")

    def hurry(self) -> None:
        self._hurried = True

    async def stop(self) -> None:
        """End for good: cancel what is under way, end a legacy session, close connections."""
        link = self._link
        self._retire(link)
        if not self._hurried:
            await self._reach.end_session(link)
        await self._conduit.aclose()

    def kill_all(self) -> None:
        self._retire(self._link)

    # Links -------------------------------------------------------------------------------

    def _linked(self, gen: int) -> Link:
        """A new link, its dispatcher waiting for the core's lines."""
        link = Link(gen, self._nursery)
        link.start_soon(self._dispatch, link, name=f"http-dispatch-{gen}")
        return link

    def _retire(self, link: Link) -> None:
        """Cancel `link`'s tasks; what it had not sent yet is dropped (the core answers the
        requests among it, as for a child that went)."""
        self._slots.take(link.retire())
        self._slots.drop(link)

    def _started(self, link: Link) -> None:
        self._log.info("upstream.started", gen=link.gen)
        self._conduit.post(ChildStarted())

    async def _first_reached(self) -> None:
        """`reach_first`: ChildStarted once the endpoint answers, however long that takes
        (requests wait in the core meanwhile, as for a child still starting)."""
        await self._reach.reachable(math.inf)
        self._started(self._link)

    async def _restarted(self, old: Link, new: Link) -> None:
        if old.lost:  # `reach_first`: a service waits for its server however long it is out
            await self._reach.reachable(math.inf if self._reach_first else REACH_AT_MOST)
        else:
            await self._reach.end_session(old)
        self._started(new)

    # Lines out ---------------------------------------------------------------------------

    async def _dispatch(self, link: Link) -> None:
        async for data in link.written():
            self._slots.take(len(data))
            for line in data.splitlines():
                if link.retired:  # by what the last line's POST told the core (it restarted)
                    return
                out = read_outgoing(line)
                if out is None:
                    self._log.warning("upstream.dropped", reason="not a JSON object")
                    continue
                await self._route(link, out)

    async def _route(self, link: Link, out: ServerBound) -> None:
        """Carry out what the Streamable HTTP layer decides for `out` (`outbound.handling`)."""
        how = handling(out, legacy=link.legacy is not None)
        if how is Handling.OPEN_SESSION:
            link.legacy = ServerSession()
            await self._poster.request(link, out)
        elif how is Handling.LISTEN:
            link.start_soon(self._poster.request, link, out, name="http-listen")
        elif how is Handling.TAKE_TURN:
            self._slots.take_turn(link, out)
        elif how is Handling.DROP:
            self._log.warning("upstream.dropped", reason="a response to a modern server")
        elif how.cancels and self._slots.unqueue(link, out.cancels):
            return  # the server never saw the request: nothing to cancel there
        elif how is Handling.CLOSE_STREAM:
            if not link.cancel(out.cancels):
                self._log.info("upstream.dropped", method=out.method,
                               reason="the request it cancels is not under way")
        else:
            await self._post(link, out, how)

    async def _post(self, link: Link, out: ServerBound, how: Handling) -> None:
        """POST a notification or a response, and what goes with it."""
        opened = self._get.open(link) if how is Handling.OPEN_LISTENING else None
        await self._poster.one_way(link, out)
        if how is Handling.POST_THEN_CLOSE:
            # Nothing more is wanted from the request's stream, which a server may hold open.
            link.cancel(out.cancels)
        if opened is not None:
            await self._get.opened(opened)


def opener(where: Endpoint, log: Logger, *, limit: int,
           reach_first: bool = False) -> OpenServer:
    """How a session opens its upstream to `where` once its nursery is open; `feeds` is the
    client's outlet, which paces the reading of answers and events."""
    from bridge.shell.servers.remote.auth import provider_for

    def open_upstream(driver: Feed, nursery: trio.Nursery, feeds: Throttle) -> HttpUpstream:
        return HttpUpstream(where, driver, nursery, log, limit=limit, feeds=feeds,
                            reach_first=reach_first, auth=provider_for(where, log))

    return open_upstream
