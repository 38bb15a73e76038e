"""One POST of the core's: a request and its answer (JSON, or an event stream), or a
notification or a response the server only accepts.

Must not decide what an answer means (the core does): every request gets exactly one line back
(the server's answer, or an error line naming the problem) unless it was cancelled, or the
core was told the server went (then the core answers it, as for a crash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx2
import trio

from bridge.core.codec import decode
from bridge.shell.servers.remote.failures import GONE
from bridge.shell.servers.remote.learning import learn, screened
from bridge.shell.servers.remote.sse import RequestEvents
from bridge.streamable.learned import needs_relearn, tools_listing
from bridge.streamable.media import EVENT_STREAM, JSON, media_type
from bridge.streamable.outbound import (
    ServerBound,
    ServerSession,
    failure_line,
    is_answer,
    json_answer,
    logs_refusal,
    opens_session,
    status_answer,
    status_problem,
)

if TYPE_CHECKING:
    from bridge.shell.servers.remote.conduit import Conduit
    from bridge.shell.servers.remote.link import Link

ONE_WAY_TIMEOUT = 10.0
"""Seconds a notification's or a response's POST may take: the next line waits for it."""
REDIRECTS = 3
"""Same-origin 307/308 redirects a request follows at most (others are refused)."""
TOOL_PAGES = 20
"""Pages of tools/list read at most to learn the tools' annotations after a HeaderMismatch."""


class Poster:
    """POSTs the core's messages on a link and feeds their answers."""

    def __init__(self, conduit: Conduit) -> None:
        self._conduit = conduit
        self._events = RequestEvents(conduit)

    async def request(self, link: Link, out: ServerBound) -> None:
        """POST request `out` and feed its answer, unless the client cancelled it meanwhile."""
        line: bytes | None = None
        with link.cancellable(out.id) as scope:
            line = await self._exchange(link, out)
            if line is not None and needs_relearn(out, line) and await self._relearn(link, out):
                line = await self._exchange(link, out)
        if line is not None and not scope.cancelled_caught:
            self._conduit.feed(link, line)

    async def one_way(self, link: Link, out: ServerBound) -> None:
        """POST a notification or a response: 202 expected, and nothing to give the core."""
        conduit = self._conduit
        with trio.move_on_after(ONE_WAY_TIMEOUT) as timer:
            try:
                response = await conduit.client.post(conduit.url, content=out.body,
                                                     headers=conduit.headers(link, out))
            except httpx2.HTTPError as exc:
                problem = conduit.problem(exc)
                if not (isinstance(exc, GONE) and conduit.gone(link, conduit.went_away(exc))):
                    conduit.log.warning("upstream.failed", method=out.method, error=problem)
                return
            link.served = True
            if response.status_code == 404 and link.legacy is not None \
                    and link.legacy.session_id is not None:
                conduit.gone(link, conduit.session_ended())
            elif response.status_code not in (200, 202):
                conduit.log.warning("upstream.refused", method=out.method or "a response",
                                    status=response.status_code)
        if timer.cancelled_caught:
            conduit.log.warning("upstream.failed", method=out.method,
                                error=f"{conduit.url} took over {ONE_WAY_TIMEOUT:g}s to accept it")

    async def _exchange(self, link: Link, out: ServerBound) -> bytes | None:
        """POST request `out`; the line the core still needs (None: it has its answer)."""
        conduit = self._conduit
        url = httpx2.URL(conduit.url)
        try:
            hops = 0
            while True:
                async with conduit.client.stream("POST", url, content=out.body,
                                                 headers=conduit.headers(link, out)) as response:
                    link.served = True
                    target = same_origin_redirect(response) if hops < REDIRECTS else None
                    if target is None:
                        return await self._answer(link, out, response)
                url, hops = target, hops + 1
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            problem = conduit.problem(exc)
            if isinstance(exc, GONE) and conduit.gone(link, conduit.went_away(exc)):
                return None  # the core answers what the server took, as for a crash
            conduit.log.warning("upstream.failed", method=out.method, error=problem)
            return failure_line(out.id, problem)

    async def _answer(self, link: Link, out: ServerBound,
                      response: httpx2.Response) -> bytes | None:
        conduit = self._conduit
        status = response.status_code
        kind = media_type(response.headers.get("content-type"))
        if status == 200 and opens_session(out) and link.legacy is not None:
            link.legacy = ServerSession(response.headers.get("mcp-session-id"))
        if status == 200 and kind == EVENT_STREAM:
            return await self._events.answer(link, out, response)
        body = await conduit.body(response)
        if status == 200 and kind == JSON:
            line = json_answer(out, body, conduit.url)
            message = decode(line)
            learn(conduit, link, out, message)
            return screened(conduit, out, message) or line
        if status == 404 and link.legacy is not None and link.legacy.session_id is not None \
                and conduit.gone(link, conduit.session_ended()):
            return None  # transports.mdx §Session Management: start a new session
        challenge = response.headers.get("www-authenticate")
        remedy = conduit.auth.remedy(status)
        if logs_refusal(out):
            conduit.log.warning("upstream.refused", method=out.method, status=status,
                                error=status_problem(status, kind, body, conduit.url, challenge,
                                                     remedy))
        return status_answer(out, status, kind, body, conduit.url, challenge, remedy)

    async def _relearn(self, link: Link, out: ServerBound) -> bool:
        """streamable-http.mdx §Client Behavior: after a HeaderMismatch, list the tools (their
        annotations may have changed, or were never seen) before the one retry. Whether the
        listing was read."""
        cursor: str | None = None
        for page in range(TOOL_PAGES):
            answer = await self._fetch(link, tools_listing(out, page, cursor))
            result = answer.get("result") if isinstance(answer, dict) else None
            if not isinstance(result, dict):
                return False
            self._conduit.param_headers.learn(result)
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str):
                return True
            cursor = next_cursor
        return True

    async def _fetch(self, link: Link, out: ServerBound) -> object:
        """The answer to a request of the upstream's own (none of the core's): not fed."""
        conduit = self._conduit
        try:
            async with conduit.client.stream("POST", conduit.url, content=out.body,
                                             headers=conduit.headers(link, out)) as response:
                kind = media_type(response.headers.get("content-type"))
                if response.status_code != 200:
                    return None
                if kind == JSON:
                    return decode(await conduit.body(response))
                async for event in httpx2.EventSource(response, max_event_size=conduit.limit):
                    if event.data and is_answer(message := decode(event.data), out.id):
                        return message
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            conduit.log.info("upstream.failed", method=out.method, error=conduit.problem(exc))
        return None


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

