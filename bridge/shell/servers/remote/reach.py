"""Whether the endpoint is there: waiting for it to answer again after it went, and ending a
legacy session with it.

Must not tell the core anything (the upstream does, once the endpoint answers): it only
tries, backs off, and logs the first failure and the first answer after one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx2
import trio

from bridge.streamable.media import EVENT_STREAM
from bridge.streamable.outbound import Kind, ServerBound, post_headers

if TYPE_CHECKING:
    from bridge.shell.servers.remote.conduit import Conduit
    from bridge.shell.servers.remote.link import Link

REACH_BACKOFF = (0.25, 5.0)
"""First and longest wait between tries to reach a server that went, before a new session."""
REACH_AT_MOST = 60.0
"""Seconds a new session waits for the server to be reachable again; then it starts anyway
(and its requests fail, each with its error, until the server is back)."""
CLOSE_TIMEOUT = 2.0
"""Seconds the DELETE that ends a legacy session may take when the session stops."""


class Reachability:
    """Tries the endpoint until it answers; ends a link's legacy session."""

    def __init__(self, conduit: Conduit) -> None:
        self._conduit = conduit

    async def reachable(self, at_most: float = REACH_AT_MOST) -> None:
        """Until the server answers anything (any status), or `at_most` seconds. The first
        failure is logged (`upstream.unreachable`), and the first answer after one."""
        conduit = self._conduit
        wait, longest = REACH_BACKOFF
        failed = False
        with trio.move_on_after(at_most):
            while True:
                try:
                    await conduit.client.request(
                        "GET", conduit.url, headers={"Accept": EVENT_STREAM},
                        timeout=conduit.network.connect_timeout or None)
                    if failed:
                        conduit.log.info("upstream.reachable")
                    return
                except httpx2.HTTPError as exc:
                    if not failed:
                        failed = True
                        conduit.log.warning("upstream.unreachable", error=conduit.problem(exc),
                                            retry_s=f"{wait:g} to {longest:g}")
                    await trio.sleep(wait)
                    wait = min(wait * 2, longest)

    async def end_session(self, link: Link) -> None:
        """DELETE a legacy session (transports.mdx §Session Management), if it had one."""
        conduit = self._conduit
        session = link.legacy
        if session is None or session.session_id is None:
            return
        with trio.move_on_after(CLOSE_TIMEOUT):
            try:
                await conduit.client.delete(conduit.url, headers=post_headers(
                    ServerBound(Kind.REQUEST, b""), session))
            except httpx2.HTTPError as exc:
                conduit.log.info("upstream.session_not_ended", error=repr(exc))
