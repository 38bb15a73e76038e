"""A modern request sent to its tenant's home (`fleet_affinity = "tenant"`): the node that
serves all of that tenant's 2026-07-28 requests, so its servers' state between requests is
one node's, and it runs its servers at that node alone.

Must not rank the nodes (`bridge.fleet.home` does, alike at every node) nor move the bytes
(`forward.Forwarder.offer` does). A home that cannot be reached (no connection: nothing was
sent) is passed over for the next node in the tenant's order, this node itself when it is
next; a node lost less than `forward.RETRY_S` ago is passed over without a wait. A request
lost after it was sent is answered with an error, never sent twice.
"""

from __future__ import annotations

from functools import partial

from bridge.fleet.home import Local
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.fleet import Fleet
from bridge.shell.http.forward import Forwarder, Unsent
from bridge.shell.http.outcome import Outcome
from bridge.streamable import replies
from bridge.streamable.replies import Reply


class TenantHomes:
    def __init__(self, fleet: Fleet, forwarder: Forwarder) -> None:
        self._fleet = fleet
        self._forwarder = forwarder

    async def send(self, conn: Connection, request: Request, request_id: object,
                   outcome: Outcome) -> Reply | Local | None:
        """`request` (of the tenant `outcome.credential`, not forwarded to this node) to its
        home and its answer back (None once it is out), or the answer to give when it was
        lost there; `Local.HOME` when this node is to serve it."""
        credential = outcome.credential.digest if outcome.credential is not None else None
        lost = partial(replies.home_lost, request_id)
        for node in await self._fleet.homes(credential):
            if node == self._fleet.address:
                return Local.HOME
            if not self._forwarder.reachable(node):
                continue
            answer = await self._forwarder.offer(conn, request, node, outcome, lost)
            if answer is not Unsent.REFUSED:
                return answer
        return Local.HOME  # not reached: this node is among the homes, and never passed over
