"""A modern request sent to its tenant's home (`fleet_affinity = "tenant"`): the node that
serves all of that tenant's 2026-07-28 requests, so its servers' state between requests is
one node's, and it runs its servers at that node alone.

Must not rank the nodes (`bridge.fleet.home` does, alike at every node), move the bytes
(`forward.Forwarder.offer` does) nor know a node's stage (the front says, through `Takes`,
whether it takes a tenant now). The request is offered to each node in the tenant's order
until one takes it. One passed over: a node that cannot be reached (no connection: nothing
was sent), or was lost less than `forward.RETRY_S` ago; a node being stopped that declines
it (a new tenant there: it took nothing); and this node itself when it does not take the
tenant now (draining, it takes only the tenants it holds). A new tenant whose home is being
stopped thus goes on at the next node of its order, as every node ranks it, from its first
request. When no node takes it, this node answers it (its own refusal, if it takes no new
tenant). A request lost after it was sent is answered with an error, never sent twice.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bridge.fleet.home import Local
from bridge.shell.http.auth import Credential
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.fleet import Fleet
from bridge.shell.http.forward import Forwarder, Unsent
from bridge.shell.http.outcome import Outcome
from bridge.streamable import replies
from bridge.streamable.replies import Reply

Takes = Callable[[Credential | None], bool]
"""Whether this node serves the tenant of a credential now (`drain.takes`): while it serves,
every tenant; while it drains, only one it holds (a new one it would refuse)."""


class TenantHomes:
    def __init__(self, fleet: Fleet, forwarder: Forwarder, takes: Takes) -> None:
        self._fleet = fleet
        self._forwarder = forwarder
        self._takes = takes

    async def send(self, conn: Connection, request: Request, request_id: object,
                   outcome: Outcome) -> Reply | Local | None:
        """`request` (of the tenant `outcome.credential`, not forwarded to this node) to its
        home and its answer back (None once it is out), or the answer to give when it was
        lost there; `Local.HOME` when this node is to serve it: it is the first node of the
        tenant's order that takes it, or no node does."""
        credential = outcome.credential.digest if outcome.credential is not None else None
        lost = partial(replies.home_lost, request_id)
        for node in await self._fleet.homes(credential):
            if node == self._fleet.address:
                if self._takes(outcome.credential):
                    return Local.HOME
                continue
            if not self._forwarder.reachable(node):
                continue
            answer = await self._forwarder.offer(conn, request, node, outcome, lost)
            if not isinstance(answer, Unsent):
                return answer
        return Local.HOME  # no node took it: this node's own answer
