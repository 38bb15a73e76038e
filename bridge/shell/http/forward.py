"""A request another node of the fleet holds (for a legacy session of that node, or a
modern client's retry of a call parked there): sent there, with a pass, and its answer
(JSON, an event stream, a 202 or 404) streamed back as it comes.

Must not decide where a request goes (`legacy_requests.py` and `router.py` ask the fleet)
nor check it (the node that holds the session or the call does, trusting the pass for what
this node checked: Host, Origin, bearer token). Reuses httpx2, the upstream's client. The
client closing its connection closes the forwarded request (the holder then treats it as
its own client's close); a holder that cannot be reached answers nothing, so what it held
has ended with it: the request gets the answer its caller gives for that (by default a
session's, 404: §Session Management 4, the client starts a new one), and the node is said
once in the log until it is reached again. A request sent to its tenant's home (`offer`) is
not lost with a home that refuses the connection (nothing was sent), nor with one that is
being stopped and answers that it took nothing (a drain's 503, `replies.NOTHING_TAKEN`: no
server there saw it): the caller is told which, and offers it to the next node. Such a home
is reached, not lost: the tenants it holds still go to it. `forward` passes that 503 on as
any answer (what the request names is held there, nowhere else). `reachable` tells a
caller not to wait for a node lost less than RETRY_S ago.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

import httpx2
import trio

from bridge.fleet.passes import HEADER, Bound
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.fleet import Fleet
from bridge.shell.http.outcome import Outcome
from bridge.shell.logs import Logger
from bridge.streamable import replies
from bridge.streamable.era import SESSION_HEADER
from bridge.streamable.replies import Reply

CONNECT_TIMEOUT = 5.0
"""Seconds to reach the holder: past it, the node is taken as gone."""
KEEPALIVE_S = 5.0
"""Seconds an idle connection to another node is kept: well below a front's
`connection_idle` (60 s), so one is never reused just as its node closes it."""
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length"})
"""RFC 9110 §7.6.1: a hop's own headers, never passed on (each hop frames its own)."""
NOT_FORWARDED = HOP_BY_HOP | {"authorization", HEADER}
"""The bearer token stays at the node that checked it: the pass names its credential."""
RETRY_S = 5.0
"""Seconds a node that could not be reached is passed over (`reachable`) before a request
tries it again: a node back from a restart gets its tenants again within that."""
UNSENT_ERRORS = (httpx2.ConnectError, httpx2.ConnectTimeout)
"""No connection was made: the request was not sent, so another node may take it."""
Gone = Callable[[str], Reply]
"""The answer to a request whose holder is gone, given why (for the log)."""


class Unsent(Enum):
    """`offer`'s answer when the node took nothing of the request: another node may."""

    REFUSED = "the node could not be reached: nothing was sent"
    DECLINED = "the node is being stopped and took nothing: no server there saw it"


def took_nothing(answer: httpx2.Response) -> bool:
    """Whether `answer` is a drain's refusal: its node took nothing of the request."""
    return answer.status_code == 503 and replies.NOTHING_TAKEN in answer.headers


class Forwarder:
    def __init__(self, fleet: Fleet, log: Logger,
                 transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self._fleet = fleet
        self._log = log
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(None, connect=CONNECT_TIMEOUT), follow_redirects=False,
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=64,
                                 keepalive_expiry=KEEPALIVE_S),
            trust_env=False, transport=transport)  # the fleet's own network: no proxy
        self._unreachable: dict[str, float] = {}
        """Each node lost (not reached) since it was last reached, and when (trio's clock)."""

    async def aclose(self) -> None:
        await self._client.aclose()

    async def forward(self, conn: Connection, request: Request, holder: str,
                      outcome: Outcome, gone: Gone = replies.session_node_gone) -> Reply | None:
        """`request` to the node at `holder` and its answer back; or, when it cannot be,
        `gone`'s answer (what it held has ended with its node)."""
        outcome.forwarded_to = holder
        if not await self._fleet.is_member(holder):
            self._log.warning("fleet.not_member", holder=holder,
                              fix="a session id or requestState names a node that is not "
                                  "in fleet_nodes (or fleet_dns): list every node on every "
                                  "node")
            return gone(f"its node {holder} is not in the fleet")
        refused = await self._carry(conn, request, holder, outcome, gone, passable=False)
        assert not isinstance(refused, Unsent)
        return refused

    async def offer(self, conn: Connection, request: Request, node: str, outcome: Outcome,
                    gone: Gone) -> Reply | Unsent | None:
        """`request` to the node at `node` (a fleet member: its tenant's home) and its answer
        back; an `Unsent` (nothing was sent, or the node took nothing: another node may take
        it); `gone`'s answer when it was lost after it was sent (it may have run there: it is
        never sent twice)."""
        outcome.forwarded_to = node
        answer = await self._carry(conn, request, node, outcome, gone, passable=True)
        if isinstance(answer, Unsent):
            outcome.forwarded_to = None
        if answer is Unsent.DECLINED:
            self._log.info("fleet.home_declined", holder=node,
                           effect="the node is being stopped and takes no new tenant: the "
                                  "next node of the tenant's order is offered the request")
        return answer

    def reachable(self, node: str) -> bool:
        """Whether to try `node`: reached, or lost at least RETRY_S ago."""
        lost_at = self._unreachable.get(node)
        return lost_at is None or trio.current_time() - lost_at >= RETRY_S

    async def _carry(self, conn: Connection, request: Request, holder: str,
                     outcome: Outcome, gone: Gone, *, passable: bool) -> Reply | Unsent | None:
        refused: Reply | Unsent | None = None

        async def carry() -> None:
            nonlocal refused
            refused = await self._exchange(conn, request, holder, outcome, gone, passable)

        # The client's close cancels this (the reader sees it): the forwarded request closes.
        await conn.until_closed(carry)
        return refused

    async def _exchange(self, conn: Connection, request: Request, holder: str,
                        outcome: Outcome, gone: Gone,
                        passable: bool) -> Reply | Unsent | None:
        bound = Bound(request.method, request.target, request.headers.get(SESSION_HEADER, ""),
                      request.body)
        credential = outcome.credential.digest if outcome.credential is not None else None
        headers = [(name, value) for name, value in request.headers.items()
                   if name not in NOT_FORWARDED]
        headers.append((HEADER, self._fleet.issue(credential, bound)))
        try:
            async with self._client.stream(request.method, holder + request.target,
                                           content=request.body, headers=headers) as answer:
                self._reached(holder)
                if passable and took_nothing(answer):
                    await answer.aread()  # the connection goes back to the pool
                    return Unsent.DECLINED
                await self._relay(conn, answer, outcome)
        except httpx2.TransportError as exc:
            if outcome.status:  # the answer had begun: the client sees it cut, and resumes
                self._log.warning("fleet.answer_cut", holder=holder, error=repr(exc))
                return None
            self._lost(holder, exc)
            if passable and isinstance(exc, UNSENT_ERRORS):
                return Unsent.REFUSED
            return gone(f"its node {holder} cannot be reached")
        return None

    @staticmethod
    async def _relay(conn: Connection, answer: httpx2.Response, outcome: Outcome) -> None:
        status = answer.status_code
        head = tuple((name.lower(), value) for name, value in answer.headers.items()
                     if name.lower() not in HOP_BY_HOP)
        if "content-length" in answer.headers:  # a whole answer: JSON, or none (202, 404)
            body = await answer.aread()
            outcome.status = status
            await conn.respond(status, body, head)
            return
        outcome.status, outcome.stream = status, True
        await conn.start_stream(status, head)
        async for chunk in answer.aiter_raw():
            await conn.send(chunk)
        await conn.end_stream()

    def _lost(self, holder: str, exc: Exception) -> None:
        if holder not in self._unreachable:
            self._log.warning("fleet.node_unreachable", holder=holder, error=repr(exc),
                              effect="its sessions and parked calls are answered as ended; "
                                     "the tenants it is home to are served at another node")
        self._unreachable[holder] = trio.current_time()

    def _reached(self, holder: str) -> None:
        if holder in self._unreachable:
            del self._unreachable[holder]
            self._log.info("fleet.node_reachable", holder=holder)
