"""The HTTP upstream: a Streamable HTTP endpoint that looks to the driver like a server child.

Must not interpret the protocol beyond what the transport needs (the core decides): it turns
each line the core writes into a POST (mapping.py says how) and each answer into lines fed
back, as the supervisor does with a child's pipes. Every request the core sends gets exactly
one line back (the server's answer, or an error line) unless the core cancelled it. Its
tasks live in the session's nursery; each belongs to one `Link`, and retiring the link (the
core restarted the server, or the session ends) cancels them all.

    dispatch   the core's lines in order → one POST each; a request in a task of its own
               (but `initialize`, whose session id every later POST needs), at most
               `Network.connections` at once, the others waiting their turn in order; a
               notification or a response awaited before the next line (ordered, as on a pipe)
    request-N  its POST; a JSON answer or the events of its stream → lines to the core
    listen     legacy only: the GET stream, reopened with back-off while the session lasts

Back-pressure, as for a child on a pipe: too many requests waiting (or lines not yet taken)
make the upstream `congested`, so the client's reader stops until it is `relieved`; and the
reading of answers and events waits while the client's outlet (`feeds`) is congested.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from contextlib import aclosing, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import httpx2
import trio

from bridge.core.codec import decode, encode
from bridge.core.eras import HEADER_MISMATCH
from bridge.core.events import SERVER, ChildExited, ChildStarted
from bridge.shell.http.modern import ParamHeaders
from bridge.shell.logs import Logger
from bridge.shell.remote.auth import AuthProvider, StaticHeaders
from bridge.shell.remote.endpoint import Endpoint, Network
from bridge.shell.remote.mapping import (
    EVENT_STREAM,
    JSON,
    Kind,
    LegacySession,
    Outgoing,
    failure_line,
    invalid_annotation,
    is_answer,
    json_answer,
    media_type,
    post_headers,
    read_outgoing,
    status_answer,
    status_problem,
)

if TYPE_CHECKING:
    from bridge.core.events import Event, Side
    from bridge.shell.driver import Source
    from bridge.shell.lines import Line
    from bridge.shell.pump import Throttle
    from bridge.shell.session import OpenUpstream


class Feed(Protocol):
    """What the upstream needs of the driver (bridge/shell/driver.py; tests substitute one)."""

    def lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None: ...
    def post(self, event: Event) -> None: ...

ONE_WAY_TIMEOUT = 10.0
"""Seconds a notification's or a response's POST may take: the next line waits for it."""
CLOSE_TIMEOUT = 2.0
"""Seconds the DELETE that ends a legacy session may take when the session stops."""
REDIRECTS = 3
"""Same-origin 307/308 redirects a request follows at most (others are refused)."""
TOOL_PAGES = 20
"""Pages of tools/list read at most to learn the tools' annotations after a HeaderMismatch."""
LISTEN_BACKOFF = (1.0, 30.0)
"""First and longest wait before the GET stream is opened again after it ended."""
LISTEN_OPEN_WAIT = 1.0
"""Seconds the lines after `notifications/initialized` wait for the GET stream's first answer
(its status line) before they go on without it."""
REACH_BACKOFF = (0.25, 5.0)
"""First and longest wait between tries to reach a server that went, before a new session."""
REACH_AT_MOST = 60.0
"""Seconds a new session waits for the server to be reachable again; then it starts anyway
(and its requests fail, each with its error, until the server is back)."""
SPARE_CONNECTIONS = 4
"""Idle connections the pool keeps alive beyond the slots. The pool itself is not bounded:
the slots bound the requests, and what takes no slot is few (the GET stream, the one-way
POST under way, a reachability check, the DELETE, the `subscriptions/listen` streams) and
must not queue behind them (a response the server waits for, behind the requests it holds
up; a listen, which lasts the session, would hold a slot for good)."""
WAITING_HIGH = 4
"""Requests waiting for a slot, per slot, past which the upstream is congested (the client's
reader stops); it is relieved once they are back to one per slot."""
QUEUED_HIGH = 1024 * 1024
"""Bytes written but not yet taken by the dispatcher past which the upstream is congested
(a notification's POST is awaited before the next line); relieved at a quarter of it."""
# A transport failure that means the server went (killed, restarted, its host gone): once it
# has answered this link, the core is told it exited, and hands the session over.
GONE = (httpx2.ConnectError, httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)
# A body cut short (the connection lost while it was read): a legacy stream that named an
# event id is resumed before this counts as the server going.
CUT = (httpx2.RemoteProtocolError, httpx2.ReadError)


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


@contextmanager
def _setting(event: trio.Event) -> Iterator[None]:
    """Set `event` however the block ends."""
    try:
        yield
    finally:
        event.set()


class Link:
    """One session with the endpoint (the HTTP twin of a child incarnation). Once `retired`,
    its tasks are cancelled and nothing it receives reaches the core."""

    __slots__ = ("gen", "inflight", "legacy", "listening", "lost", "retired", "scopes",
                 "served")

    def __init__(self, gen: int) -> None:
        self.gen = gen
        self.retired = False
        self.legacy: LegacySession | None = None
        """Set once the core sent `initialize`: the server is legacy, this its session."""
        self.listening: trio.Event | None = None
        """Once the GET stream was started: set when its first attempt got an answer or
        failed, or the link retired."""
        self.served = False
        """Whether the server answered this link over HTTP at all (any status)."""
        self.lost = False
        """Whether the core was told the server went (once per link)."""
        self.scopes: set[trio.CancelScope] = set()
        self.inflight: dict[str | int, trio.CancelScope] = {}

    @contextmanager
    def guard(self, request_id: str | int | None = None) -> Iterator[trio.CancelScope]:
        """A scope that retiring the link cancels (and, for a request, its cancellation)."""
        with trio.CancelScope() as scope:
            if self.retired:
                scope.cancel()
            self.scopes.add(scope)
            if request_id is not None:
                self.inflight[request_id] = scope
            try:
                yield scope
            finally:
                self.scopes.discard(scope)
                if request_id is not None and self.inflight.get(request_id) is scope:
                    del self.inflight[request_id]

    def cancel(self, request_id: object) -> bool:
        scope = self.inflight.get(request_id) if isinstance(request_id, str | int) else None
        if scope is not None:
            scope.cancel()
        return scope is not None

    def retire(self) -> None:
        self.retired = True
        for scope in self.scopes:
            scope.cancel()


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
        self._url = endpoint.url
        self._reach_first = reach_first
        self._driver = driver
        self._nursery = nursery
        self._log = log.bind(url=endpoint.url)
        self._limit = limit
        self._feeds = feeds
        """The client's outlet: answers and events are read only while it is not congested."""
        self._network = network = endpoint.network
        self._auth = auth or StaticHeaders(endpoint.headers)
        self._link = Link(1)
        self._hurried = False
        self._param_headers = ParamHeaders()
        """The tools' `x-mcp-header` annotations, learned from the tools/list answers."""
        self._send, self._receive = trio.open_memory_channel[tuple[Link, bytes]](math.inf)
        self._queued = 0
        """Bytes written and not yet taken by the dispatcher."""
        self._in_flight = 0
        self._waiting: deque[tuple[Link, Outgoing]] = deque()
        """Requests waiting for a slot (one of `network.connections`), in order."""
        self._congested = False
        self._relieved = trio.Event()
        self._client = httpx2.AsyncClient(
            auth=self._auth.auth(), timeout=client_timeout(network),
            limits=httpx2.Limits(max_connections=None,
                                 max_keepalive_connections=network.connections
                                 + SPARE_CONNECTIONS),
            follow_redirects=False, transport=transport)  # a transport: only tests give one

    # What the session and the driver call ------------------------------------------------

    @property
    def congested(self) -> bool:
        return self._congested

    async def relieved(self) -> None:
        """Return once the upstream takes lines again (at once if it does)."""
        while self._congested:
            await self._relieved.wait()

    def write(self, data: bytes) -> bool:
        """Send the lines in `data` (whole lines, as the driver writes them), in order."""
        if self._link.retired:
            return False
        self._send.send_nowait((self._link, data))
        self._queued += len(data)
        self._check_congestion()
        return True

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        """As `write`: a POST's body is one bytes object."""
        return self.write(b"".join(pieces))

    def serve(self, child: object = None) -> None:
        """Start: the endpoint is "started" at once (a request finds out if it is there),
        or with `reach_first` once it answers."""
        self._nursery.start_soon(self._dispatch, name="http-dispatch")
        if self._reach_first:
            self._nursery.start_soon(self._first_reached, self._link, name="http-reach")
            return
        self._started()

    def _started(self) -> None:
        self._log.info("upstream.started", gen=self._link.gen)
        self._driver.post(ChildStarted())

    def restart(self) -> None:
        """A new session with the endpoint; what the old one still owes is dropped."""
        old = self._link
        old.retire()
        self._link = Link(old.gen + 1)
        self._nursery.start_soon(self._restarted, old, name=f"http-restart-{self._link.gen}")

    def hurry(self) -> None:
        self._hurried = True

    async def stop(self) -> None:
        """End for good: cancel what is under way, end a legacy session, close connections."""
        link = self._link
        link.retire()
        if not self._hurried:
            await self._end_session(link)
        await self._client.aclose()

    def kill_all(self) -> None:
        self._link.retire()

    # Lines out ---------------------------------------------------------------------------

    async def _dispatch(self) -> None:
        async for link, data in self._receive:
            self._queued -= len(data)
            self._check_congestion()
            for line in data.splitlines():
                if link.retired:
                    break
                out = read_outgoing(line)
                if out is None:
                    self._log.warning("upstream.dropped", reason="not a JSON object")
                    continue
                await self._route(link, out)

    async def _route(self, link: Link, out: Outgoing) -> None:
        if out.kind is Kind.REQUEST:
            if out.method == "initialize":  # every later POST needs its session id
                link.legacy = LegacySession()
                await self._request(link, out)
            elif out.method == "subscriptions/listen":  # a stream for the session, not work:
                self._nursery.start_soon(self._request, link, out, name="http-listen")
            else:
                self._take_turn(link, out)
        elif out.kind is Kind.NOTIFICATION:
            if out.method == "notifications/cancelled" and self._unqueue(link, out.cancels):
                return  # the server never saw the request: nothing to cancel there
            if out.method == "notifications/cancelled" and link.legacy is None:
                # streamable-http.mdx §Cancellation: closing the stream is the cancel message.
                if not link.cancel(out.cancels):
                    self._log.info("upstream.dropped", method=out.method,
                                   reason="the request it cancels is not under way")
                return
            opened = self._open_listen(link) if out.method == "notifications/initialized" \
                else None
            await self._one_way(link, out)
            if out.method == "notifications/cancelled":
                # transports.mdx §Sending Messages: a disconnection is no cancel, so the
                # notification went first; now nothing more is wanted from the request's
                # stream, which a server may hold open for ever.
                link.cancel(out.cancels)
            if opened is not None:
                await self._listen_opened(opened)
        elif link.legacy is None:  # streamable-http.mdx §Sending Messages: no responses
            self._log.warning("upstream.dropped", reason="a response to a modern server")
        else:
            await self._one_way(link, out)

    # Requests in flight, and back-pressure --------------------------------------------------

    def _take_turn(self, link: Link, out: Outgoing) -> None:
        """Start request `out` if a slot is free, else queue it behind those waiting."""
        if self._in_flight < self._network.connections and not self._waiting:
            self._start(link, out)
        else:
            self._waiting.append((link, out))
            self._check_congestion()

    def _start(self, link: Link, out: Outgoing) -> None:
        self._in_flight += 1
        self._nursery.start_soon(self._in_slot, link, out, name=f"http-{out.method}")

    async def _in_slot(self, link: Link, out: Outgoing) -> None:
        try:
            await self._request(link, out)
        finally:
            self._in_flight -= 1
            self._next_turn()

    def _next_turn(self) -> None:
        """Start the requests waiting, in order, while slots are free (a retired link's are
        dropped: the core answered them when the server went)."""
        waiting = self._waiting
        while waiting and self._in_flight < self._network.connections:
            link, out = waiting.popleft()
            if not link.retired:
                self._start(link, out)
        self._check_congestion()

    def _unqueue(self, link: Link, request_id: object) -> bool:
        """Drop the waiting request `request_id` (cancelled before its turn); whether it was."""
        for entry in self._waiting:
            if entry[0] is link and entry[1].id == request_id:
                self._waiting.remove(entry)
                self._check_congestion()
                return True
        return False

    def _check_congestion(self) -> None:
        waiting, slots = len(self._waiting), self._network.connections
        if not self._congested:
            if waiting > WAITING_HIGH * slots or self._queued > QUEUED_HIGH:
                self._congested = True
                self._relieved = trio.Event()
                self._log.debug("upstream.congested", waiting=waiting, queued=self._queued)
        elif waiting <= slots and self._queued <= QUEUED_HIGH // 4:
            self._congested = False
            self._relieved.set()

    async def _paced(self) -> None:
        """Wait while the client does not read what it was sent (its outlet is congested)."""
        feeds = self._feeds
        if feeds is not None and feeds.congested:
            await feeds.relieved()

    def _headers(self, link: Link, out: Outgoing) -> dict[str, str]:
        headers = post_headers(out, link.legacy)
        headers["Content-Type"] = JSON
        if out.params is not None:  # streamable-http.mdx §Custom Headers from Tool Parameters
            headers.update(self._param_headers.headers_for(out.params))
        return headers

    async def _request(self, link: Link, out: Outgoing) -> None:
        line: bytes | None = None
        with link.guard(out.id) as scope:
            line = await self._exchange(link, out)
            if line is not None and out.params is not None and is_header_mismatch(line) \
                    and await self._relearn(link, out):
                line = await self._exchange(link, out)
        if line is not None and not scope.cancelled_caught:
            self._feed(link, line)

    async def _relearn(self, link: Link, out: Outgoing) -> bool:
        """streamable-http.mdx §Client Behavior: after a HeaderMismatch, list the tools (their
        annotations may have changed, or were never seen) before the one retry. Whether the
        listing was read."""
        assert isinstance(out.params, dict)
        params: dict[str, object] = {"_meta": out.params.get("_meta")}
        for page in range(TOOL_PAGES):
            request_id = f"rosetta-upstream-tools-{page}"
            request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
                       "params": params}
            listing = Outgoing(Kind.REQUEST, encode(request), id=request_id,
                               method="tools/list", version=out.version)
            answer = await self._fetch(link, listing)
            result = answer.get("result") if isinstance(answer, dict) else None
            if not isinstance(result, dict):
                return False
            self._param_headers.learn(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                return True
            params = {**params, "cursor": cursor}
        return True

    async def _fetch(self, link: Link, out: Outgoing) -> object:
        """The answer to a request of the upstream's own (none of the core's): not fed."""
        try:
            async with self._client.stream("POST", self._url, content=out.body,
                                           headers=self._headers(link, out)) as response:
                kind = media_type(response.headers.get("content-type"))
                if response.status_code != 200:
                    return None
                if kind == JSON:
                    return decode(await self._body(response))
                async for event in httpx2.EventSource(response, max_event_size=self._limit):
                    if event.data and is_answer(message := decode(event.data), out.id):
                        return message
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            self._log.info("upstream.failed", method=out.method,
                           error=transport_problem(exc, self._url, self._network))
        return None

    async def _exchange(self, link: Link, out: Outgoing) -> bytes | None:
        """POST request `out`; the line the core still needs (None: it has its answer)."""
        url = httpx2.URL(self._url)
        try:
            hops = 0
            while True:
                async with self._client.stream("POST", url, content=out.body,
                                               headers=self._headers(link, out)) as response:
                    link.served = True
                    target = same_origin_redirect(response) if hops < REDIRECTS else None
                    if target is None:
                        return await self._answer(link, out, response)
                url, hops = target, hops + 1
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            problem = transport_problem(exc, self._url, self._network)
            if isinstance(exc, GONE) and self._gone(link, self._went_away(exc)):
                return None  # the core answers what the server took, as for a crash
            self._log.warning("upstream.failed", method=out.method, error=problem)
            return failure_line(out.id, problem)

    async def _answer(self, link: Link, out: Outgoing, response: httpx2.Response) -> bytes | None:
        status = response.status_code
        kind = media_type(response.headers.get("content-type"))
        if status == 200 and out.method == "initialize" and link.legacy is not None:
            link.legacy = LegacySession(response.headers.get("mcp-session-id"))
        if status == 200 and kind == EVENT_STREAM:
            return await self._events(link, out, response)
        body = await self._body(response)
        if status == 200 and kind == JSON:
            line = json_answer(out, body, self._url)
            message = decode(line)
            self._learn(link, out, message)
            return self._screened(out, message) or line
        if status == 404 and link.legacy is not None and link.legacy.session_id is not None \
                and self._gone(link, self._session_ended()):
            return None  # transports.mdx §Session Management: start a new session
        challenge = response.headers.get("www-authenticate")
        remedy = self._auth.remedy(status)
        if out.method != "server/discover":  # the probe's refusal is how a legacy server says so
            self._log.warning("upstream.refused", method=out.method, status=status,
                              error=status_problem(status, kind, body, self._url, challenge,
                                                   remedy))
        return status_answer(out, status, kind, body, self._url, challenge, remedy)

    async def _events(self, link: Link, out: Outgoing, response: httpx2.Response) -> bytes | None:
        """Feed the stream's events; its answer ends it (streamable-http.mdx §Receiving
        Messages: "The final JSON-RPC response SHOULD terminate the stream"). A legacy
        stream that ends or is cut first, having named an event id, is resumed with a GET and
        Last-Event-ID after the `retry` it asked for (transports.mdx §Resumability and
        Redelivery: after a disconnection "whether due to network failure or
        server-initiated closure"; SEP-1699's polling). A cut not resumed is the server
        going (raised to `_exchange`)."""
        place = StreamPlace()
        answered = await self._read_events(link, out, response, place)
        resumed = 0
        while not answered and link.legacy is not None and place.last_id and resumed < RESUMES:
            resumed += 1
            await trio.sleep(place.wait(RESUME_WAIT))
            async with self._client.stream("GET", self._url,
                                           headers=self._resume_headers(link, place)) as again:
                if again.status_code == 404 and link.legacy.session_id is not None \
                        and self._gone(link, self._session_ended()):
                    return None  # the session, and the stream with it, is gone
                if again.status_code != 200 \
                        or media_type(again.headers.get("content-type")) != EVENT_STREAM:
                    break
                place.cut = None
                answered = await self._read_events(link, out, again, place)
        if answered:
            return None
        if place.cut is not None:
            raise place.cut
        problem = f"{self._url} ended the event stream of {out.method} without answering it"
        self._log.warning("upstream.failed", method=out.method, error=problem)
        return failure_line(out.id, problem)

    async def _read_events(self, link: Link, out: Outgoing, response: httpx2.Response,
                           place: StreamPlace) -> bool:
        """Feed one stream's events until `out`'s answer (True) or its end (False). A cut
        (the connection lost mid-body) of a stream that can be resumed is noted in
        `place.cut`; any other is raised."""
        try:
            async for event in httpx2.EventSource(response, max_event_size=self._limit):
                place.saw(event)
                if not event.data:
                    continue  # a priming event: an id and a retry, no message
                await self._paced()
                data = event.data.encode()
                answered = (b'"result"' in data or b'"error"' in data) \
                    and is_answer(message := decode(data), out.id)
                if answered:
                    self._learn(link, out, message)
                    data = self._screened(out, message) or data
                self._feed(link, data)
                if answered:
                    return True
        except CUT as exc:
            if link.legacy is None or not place.last_id:
                raise
            place.cut = exc
        return False

    def _resume_headers(self, link: Link, place: StreamPlace) -> dict[str, str]:
        headers = post_headers(Outgoing(Kind.REQUEST, b""), link.legacy)
        headers["Accept"] = EVENT_STREAM
        if place.last_id:
            headers["Last-Event-ID"] = place.last_id
        return headers

    def _learn(self, link: Link, out: Outgoing, answer: object) -> None:
        """What an answer teaches the next requests: the tools' `x-mcp-header` annotations
        (a modern tools/list), or the protocol version a legacy server's `initialize` result
        names, sent on every later request (transports.mdx §Protocol Version Header)."""
        if out.method == "tools/list" and out.version is not None and isinstance(answer, dict):
            self._param_headers.learn(answer.get("result"))
            return
        if out.method != "initialize" or link.legacy is None or not isinstance(answer, dict):
            return
        result = answer.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            link.legacy = replace(link.legacy, protocol_version=version)

    def _screened(self, out: Outgoing, answer: object) -> bytes | None:
        """A modern tools/list answer without the tools whose `x-mcp-header` annotations are
        invalid (§Schema Extension: the client MUST exclude them, SHOULD log why); None when
        it has none."""
        if out.method != "tools/list" or out.version is None or not isinstance(answer, dict):
            return None
        result = answer.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return None
        kept = []
        for tool in tools:
            why = invalid_annotation(tool.get("inputSchema")) if isinstance(tool, dict) else None
            if why is None:
                kept.append(tool)
            else:
                self._log.warning("upstream.tool_excluded", tool=tool.get("name"), reason=why)
        if len(kept) == len(tools):
            return None
        assert isinstance(result, dict)
        return encode({**answer, "result": {**result, "tools": kept}})

    async def _body(self, response: httpx2.Response) -> bytes:
        """The whole body, but no more than a message may be: the rest is not read. A gap
        of `read_timeout` between its bytes is httpx2's ReadTimeout."""
        await self._paced()
        parts: list[bytes] = []
        size = 0
        gap = self._network.read_timeout or math.inf
        async with aclosing(response.aiter_bytes()) as chunks:
            while size <= self._limit:
                with trio.move_on_after(gap) as timer:
                    chunk = await anext(chunks, None)
                if timer.cancelled_caught:
                    raise httpx2.ReadTimeout("no byte of the body", request=response.request)
                if chunk is None:
                    break
                parts.append(chunk)
                size += len(chunk)
        return b"".join(parts)[:self._limit]

    async def _one_way(self, link: Link, out: Outgoing) -> None:
        """POST a notification or a response: 202 expected, and nothing to give the core."""
        with link.guard(), trio.move_on_after(ONE_WAY_TIMEOUT) as timer:
            try:
                response = await self._client.post(self._url, content=out.body,
                                                   headers=self._headers(link, out))
            except httpx2.HTTPError as exc:
                problem = transport_problem(exc, self._url, self._network)
                if not (isinstance(exc, GONE) and self._gone(link, self._went_away(exc))):
                    self._log.warning("upstream.failed", method=out.method, error=problem)
                return
            link.served = True
            if response.status_code == 404 and link.legacy is not None \
                    and link.legacy.session_id is not None:
                self._gone(link, self._session_ended())
            elif response.status_code not in (200, 202):
                self._log.warning("upstream.refused", method=out.method or "a response",
                                  status=response.status_code)
        if timer.cancelled_caught:
            self._log.warning("upstream.failed", method=out.method,
                              error=f"{self._url} took over {ONE_WAY_TIMEOUT:g}s to accept it")

    # Lines in ----------------------------------------------------------------------------

    def _feed(self, link: Link, line: bytes) -> None:
        self._driver.lines(SERVER, [line], link)

    def _open_listen(self, link: Link) -> trio.Event | None:
        """Start a legacy session's GET stream (once per link), beside the POST of its
        `notifications/initialized`; the event is set once its first attempt is answered."""
        if link.legacy is None or link.listening is not None:
            return None
        link.listening = trio.Event()
        self._nursery.start_soon(self._listen, link, link.listening,
                                 name=f"http-listen-{link.gen}")
        return link.listening

    async def _listen_opened(self, opened: trio.Event) -> None:
        """Hold the next lines until the GET stream's first attempt is answered (or failed),
        at most LISTEN_OPEN_WAIT: a request that overtook it would miss what the server sends
        on it about that request (a list_changed, or an answer a server delivers there, as
        the conformance suite's sse-retry server does)."""
        with trio.move_on_after(LISTEN_OPEN_WAIT):
            await opened.wait()
            return
        self._log.info("upstream.listen_slow", waited_s=LISTEN_OPEN_WAIT,
                       reason="the GET stream has no answer yet; requests go on without it")

    async def _listen(self, link: Link, opened: trio.Event) -> None:
        """A legacy session's GET stream: what the server sends outside requests
        (transports.mdx §Listening for Messages from the Server); 405 means none, 404 that
        the session ended (§Session Management: the core starts a new one). Reopened with
        back-off when it ends, or is cut after naming an event id (§Resumability and
        Redelivery: the reconnection carries Last-Event-ID). `opened` is set once the first
        attempt has its answer, or failed, or the link retired."""
        wait, longest = LISTEN_BACKOFF
        place = StreamPlace()  # across reconnections: Last-Event-ID, the server's retry
        with link.guard(), _setting(opened):
            while not link.retired:
                try:
                    headers = self._resume_headers(link, place)
                    async with self._client.stream("GET", self._url, headers=headers) as response:
                        opened.set()
                        if not await self._listened(link, response, place):
                            return
                except (httpx2.HTTPError, httpx2.StreamError) as exc:
                    opened.set()
                    if isinstance(exc, CUT) and place.last_id:
                        self._log.info("upstream.listen_cut", error=repr(exc),
                                       last_event_id=place.last_id)
                    else:
                        if isinstance(exc, GONE) and self._gone(link, self._went_away(exc)):
                            return
                        self._log.warning("upstream.listen_failed",
                                          error=transport_problem(exc, self._url, self._network))
                if place.fed:
                    wait = LISTEN_BACKOFF[0]
                await trio.sleep(place.wait(wait))
                wait = min(wait * 2, longest)

    async def _listened(self, link: Link, response: httpx2.Response,
                        place: StreamPlace) -> bool:
        """Feed one GET stream until it ends; False when it is not to be opened again."""
        status = response.status_code
        place.fed = False
        if status == 405:
            self._log.info("upstream.no_listen_stream", status=405)
            return False
        if status == 404 and link.legacy is not None and link.legacy.session_id is not None:
            return not self._gone(link, self._session_ended())
        if status != 200:
            self._log.warning("upstream.listen_refused", status=status)
            return True
        async for event in httpx2.EventSource(response, max_event_size=self._limit):
            place.saw(event)
            if event.data:
                await self._paced()
                place.fed = True
                self._feed(link, event.data.encode())
        return True

    # A server that went ----------------------------------------------------------------

    def _gone(self, link: Link, went: str) -> bool:
        """Tell the core the server went, as a child's exit, if it had answered this link:
        the core answers what it had taken and starts a new session (restart budget and
        back-off included). False for a server never reached: each request gets its error.
        `went` reads after "the server": "at URL went away (...)"."""
        if not link.served or link.retired:
            return False
        if not link.lost:
            link.lost = True
            self._log.warning("upstream.lost", gen=link.gen, went=went)
            self._driver.post(ChildExited(None, went=went))
        return True

    def _session_ended(self) -> str:
        return (f"at {self._url} ended the session (HTTP 404: it restarted, or the session "
                f"expired)")

    def _went_away(self, exc: Exception) -> str:
        return f"at {self._url} went away ({exc or type(exc).__name__})"

    async def _reachable(self, at_most: float = REACH_AT_MOST) -> None:
        """Until the server answers anything (any status), or `at_most` seconds. The first
        failure is logged (`upstream.unreachable`), and the first answer after one."""
        wait, longest = REACH_BACKOFF
        failed = False
        with trio.move_on_after(at_most):
            while True:
                try:
                    await self._client.request("GET", self._url, headers={"Accept": EVENT_STREAM},
                                               timeout=self._network.connect_timeout or None)
                    if failed:
                        self._log.info("upstream.reachable")
                    return
                except httpx2.HTTPError as exc:
                    if not failed:
                        failed = True
                        self._log.warning("upstream.unreachable",
                                          error=transport_problem(exc, self._url, self._network),
                                          retry_s=f"{wait:g} to {longest:g}")
                    await trio.sleep(wait)
                    wait = min(wait * 2, longest)

    async def _first_reached(self, link: Link) -> None:
        """`reach_first`: ChildStarted once the endpoint answers, however long that takes
        (requests wait in the core meanwhile, as for a child still starting)."""
        with link.guard():
            await self._reachable(math.inf)
            self._started()

    # Ending ------------------------------------------------------------------------------

    async def _restarted(self, old: Link) -> None:
        if old.lost:  # `reach_first`: a service waits for its server however long it is out
            await self._reachable(math.inf if self._reach_first else REACH_AT_MOST)
        else:
            await self._end_session(old)
        self._started()

    async def _end_session(self, link: Link) -> None:
        """DELETE a legacy session (transports.mdx §Session Management), if it had one."""
        session = link.legacy
        if session is None or session.session_id is None:
            return
        with trio.move_on_after(CLOSE_TIMEOUT):
            try:
                await self._client.delete(self._url, headers=post_headers(
                    Outgoing(Kind.REQUEST, b""), session))
            except httpx2.HTTPError as exc:
                self._log.info("upstream.session_not_ended", error=repr(exc))


def opener(where: Endpoint, log: Logger, *, limit: int,
           reach_first: bool = False) -> OpenUpstream:
    """How a session opens its upstream to `where` once its nursery is open; `feeds` is the
    client's outlet, which paces the reading of answers and events."""
    from bridge.shell.remote.auth import provider_for

    def open_upstream(driver: Feed, nursery: trio.Nursery, feeds: Throttle) -> HttpUpstream:
        return HttpUpstream(where, driver, nursery, log, limit=limit, feeds=feeds,
                            reach_first=reach_first, auth=provider_for(where, log))

    return open_upstream


def same_origin_redirect(response: httpx2.Response) -> httpx2.URL | None:
    """Where a 307/308 sends the POST, if to the same origin (scheme, host, port): a redirect
    elsewhere would hand the request, and the user's headers, to another server; a 301/302/303
    would turn the POST into a GET."""
    location = response.headers.get("location")
    if response.status_code not in (307, 308) or not location:
        return None
    here = response.request.url
    there = here.join(location)
    same = (there.scheme, there.host, there.port) == (here.scheme, here.host, here.port)
    return there if same else None


def is_certificate_error(exc: BaseException) -> bool:
    """Whether a connect error is a TLS certificate the bridge does not trust (or that does
    not name the host)."""
    import ssl

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def is_header_mismatch(line: bytes) -> bool:
    message = decode(line) if b"-32020" in line else None
    error = message.get("error") if isinstance(message, dict) else None
    return isinstance(error, dict) and error.get("code") == HEADER_MISMATCH


def client_timeout(network: Network) -> httpx2.Timeout:
    """httpx2's timeouts: connecting, and writing a body the server does not take. No read
    timeout: an answer may rightly take long and a stream may rightly be quiet (the core's
    request_timeout bounds a request); a JSON body once begun is bounded by `_body`. No pool
    timeout either: the upstream's own slots bound what waits for a connection. 0: never."""
    return httpx2.Timeout(None, connect=network.connect_timeout or None,
                          write=network.read_timeout or None)


def transport_problem(exc: Exception, url: str, network: Network) -> str:
    """What a failed exchange means for the user, and the fix."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return (f"no connection to {url} within {network.connect_timeout:g}s "
                "(connect_timeout): check that the server runs and can be reached")
    if isinstance(exc, httpx2.ReadTimeout):
        return (f"{url} stopped sending its answer midway: no byte in "
                f"{network.read_timeout:g}s (read_timeout)")
    if isinstance(exc, httpx2.WriteTimeout):
        return (f"{url} stopped taking the request: nothing taken in "
                f"{network.read_timeout:g}s (read_timeout)")
    if isinstance(exc, httpx2.ConnectError) and is_certificate_error(exc):
        return (f"cannot connect to {url}: its TLS certificate is not trusted ({exc}); if it "
                "comes from a private CA, trust that CA: SSL_CERT_FILE=/path/to/ca.pem")
    if isinstance(exc, httpx2.ConnectError):
        return (f"cannot connect to {url} ({exc}): check that the server runs and the URL "
                "(host, port) is right")
    if isinstance(exc, httpx2.SSEError):
        return f"{url} sent an event stream the bridge cannot read ({exc})"
    if isinstance(exc, httpx2.TimeoutException):
        return f"{url} timed out ({type(exc).__name__})"
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        return f"{url} dropped the connection before it answered ({exc or type(exc).__name__})"
    return f"the request to {url} failed: {type(exc).__name__}: {exc}"
