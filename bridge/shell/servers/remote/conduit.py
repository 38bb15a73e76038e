"""What every part of the HTTP upstream sends with and feeds to: the endpoint's HTTP client,
the headers of a link's requests, the driver, and the client's pace.

Must not route or decide (the parts do): it holds what they share, and the few moves they all
make: feed a line to the core, read a body within the limit, tell the core the server went.
"""

from __future__ import annotations

import math
from contextlib import aclosing
from typing import TYPE_CHECKING, Protocol

import httpx2
import trio

from bridge.core.events import SERVER, ChildExited
from bridge.shell.logs import Logger
from bridge.shell.servers.remote.auth import AuthProvider
from bridge.shell.servers.remote.endpoint import Endpoint, Network
from bridge.shell.servers.remote.failures import transport_problem
from bridge.streamable.headers import ParamHeaders
from bridge.streamable.media import EVENT_STREAM, JSON
from bridge.streamable.outbound import Kind, ServerBound, post_headers

if TYPE_CHECKING:
    from bridge.core.events import Event, Side
    from bridge.shell.fdio.lines import Line
    from bridge.shell.fdio.pump import Throttle
    from bridge.shell.servers.remote.link import Link
    from bridge.shell.session.driver import Source


class Feed(Protocol):
    """What the upstream needs of the driver (session/driver.py; tests substitute one)."""

    def lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None: ...
    def post(self, event: Event) -> None: ...


SPARE_CONNECTIONS = 4
"""Idle connections the pool keeps alive beyond the slots. The pool itself is not bounded:
the slots bound the requests, and what takes no slot is few (the GET stream, the one-way
POST under way, a reachability check, the DELETE, the `subscriptions/listen` streams) and
must not queue behind them (a response the server waits for, behind the requests it holds
up; a listen, which lasts the session, would hold a slot for good)."""


class Conduit:
    """The endpoint's client and what goes with it, shared by the upstream's parts."""

    def __init__(self, endpoint: Endpoint, driver: Feed, log: Logger, auth: AuthProvider, *,
                 limit: int, feeds: Throttle | None,
                 transport: httpx2.AsyncBaseTransport | None) -> None:
        self.url = endpoint.url
        self.network = network = endpoint.network
        self.log = log
        self.limit = limit
        self.auth = auth
        self.param_headers = ParamHeaders()
        """The tools' `x-mcp-header` annotations, learned from the tools/list answers."""
        self._driver = driver
        self._feeds = feeds
        """The client's outlet: answers and events are read only while it is not congested."""
        self.client = httpx2.AsyncClient(
            auth=auth.auth(), timeout=client_timeout(network),
            limits=httpx2.Limits(max_connections=None,
                                 max_keepalive_connections=network.connections
                                 + SPARE_CONNECTIONS),
            follow_redirects=False, transport=transport)  # a transport: only tests give one

    # To the core --------------------------------------------------------------------------

    def feed(self, link: Link, line: bytes) -> None:
        """One line from the server, unless `link` was retired meanwhile (the driver drops
        the lines of a retired source)."""
        self._driver.lines(SERVER, [line], link)

    def post(self, event: Event) -> None:
        self._driver.post(event)

    async def paced(self) -> None:
        """Wait while the client does not read what it was sent (its outlet is congested)."""
        feeds = self._feeds
        if feeds is not None and feeds.congested:
            await feeds.relieved()

    def gone(self, link: Link, went: str) -> bool:
        """Tell the core the server went, as a child's exit, if it had answered this link:
        the core answers what it had taken and starts a new session (restart budget and
        back-off included). False for a server never reached: each request gets its error.
        `went` reads after "the server": "at URL went away (...)"."""
        if not link.served or link.retired:
            return False
        if not link.lost:
            link.lost = True
            self.log.warning("upstream.lost", gen=link.gen, went=went)
            self._driver.post(ChildExited(None, went=went))
        return True

    def session_ended(self) -> str:
        return (f"at {self.url} ended the session (HTTP 404: it restarted, or the session "
                f"expired)")

    def went_away(self, exc: Exception) -> str:
        return f"at {self.url} went away ({exc or type(exc).__name__})"

    def problem(self, exc: Exception) -> str:
        return transport_problem(exc, self.url, self.network)

    # To the endpoint ----------------------------------------------------------------------

    def headers(self, link: Link, out: ServerBound) -> dict[str, str]:
        """The headers of `out`'s POST on `link`."""
        headers = post_headers(out, link.legacy)
        headers["Content-Type"] = JSON
        if out.params is not None:  # streamable-http.mdx §Custom Headers from Tool Parameters
            headers.update(self.param_headers.headers_for(out.params))
        return headers

    def stream_headers(self, link: Link, last_id: str) -> dict[str, str]:
        """The headers of a GET for an event stream on `link`, resumed after `last_id`."""
        headers = post_headers(ServerBound(Kind.REQUEST, b""), link.legacy)
        headers["Accept"] = EVENT_STREAM
        if last_id:
            headers["Last-Event-ID"] = last_id
        return headers

    async def body(self, response: httpx2.Response) -> bytes:
        """The whole body, but no more than a message may be: the rest is not read. A gap
        of `read_timeout` between its bytes is httpx2's ReadTimeout."""
        await self.paced()
        parts: list[bytes] = []
        size = 0
        gap = self.network.read_timeout or math.inf
        async with aclosing(response.aiter_bytes()) as chunks:
            while size <= self.limit:
                with trio.move_on_after(gap) as timer:
                    chunk = await anext(chunks, None)
                if timer.cancelled_caught:
                    raise httpx2.ReadTimeout("no byte of the body", request=response.request)
                if chunk is None:
                    break
                parts.append(chunk)
                size += len(chunk)
        return b"".join(parts)[:self.limit]

    async def aclose(self) -> None:
        await self.client.aclose()


def client_timeout(network: Network) -> httpx2.Timeout:
    """httpx2's timeouts: connecting, and writing a body the server does not take. No read
    timeout: an answer may rightly take long and a stream may rightly be quiet (the core's
    request_timeout bounds a request); a JSON body once begun is bounded by `Conduit.body`.
    No pool timeout either: the upstream's own slots bound what waits for a connection. 0:
    never."""
    return httpx2.Timeout(None, connect=network.connect_timeout or None,
                          write=network.read_timeout or None)
