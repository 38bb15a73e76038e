"""The changes a tenant's servers raise on this node, sent to the fleet's other nodes; and
the ones they send, handed to the tenant's core here, whose listen streams hear them.

Must not decide what is sent nor check what comes (`bridge.fleet.changes` does: the
envelope, its pass naming the tenant) nor filter it for a stream (the tenant's core does, as
for its own server's). A change is sent once to each other node, each POST in a task of this
relay's nursery, never waited for by the core that raised it: a node slow or gone costs at
most `SEND_TIMEOUT` and `IN_FLIGHT` tasks, and a change past that bound is dropped (a hint:
the client lists again on the next one). A node's failing and its recovery are logged once.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import trio

from bridge.core.codec import Message
from bridge.core.events import ChangeRelayed
from bridge.fleet import changes
from bridge.fleet.passes import Forwarded
from bridge.shell.http.connection import Request
from bridge.shell.http.fleet import Fleet
from bridge.shell.http.forward import KEEPALIVE_S
from bridge.shell.http.outcome import Outcome
from bridge.shell.logs import Logger
from bridge.shell.session.driver import Driver
from bridge.streamable import replies
from bridge.streamable.media import JSON
from bridge.streamable.replies import Reply

SEND_TIMEOUT = 2.0
"""Seconds one change may take to reach a node (connect, send, answer), then it is missed."""
IN_FLIGHT = 16
"""Changes under way to one node at most: past it, the next is dropped."""
WAITING = 64
"""Changes waiting for the fleet's addresses (`fleet_dns` resolving) at most."""
ListenersOf = Callable[[str | None], Driver | None]
"""The driver of the core that holds a tenant's listen streams here, by its credential's
digest (None: the one tenant without tokens); None when this node has no such tenant."""


class ChangeRelay:
    """This node's side of the fleet's changes: `share` sends, `hear` takes."""

    def __init__(self, fleet: Fleet, log: Logger, listeners_of: ListenersOf,
                 transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self._fleet = fleet
        self._log = log
        self._listeners_of = listeners_of
        self._client = httpx2.AsyncClient(
            timeout=SEND_TIMEOUT, follow_redirects=False, trust_env=False, transport=transport,
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=16,
                                 keepalive_expiry=KEEPALIVE_S))
        self._nursery: trio.Nursery | None = None
        self._waiting = 0
        self._in_flight: dict[str, int] = {}
        self._failing: dict[str, str] = {}
        """The nodes whose last change did not reach them, and why (logged once)."""
        self._told_itself = False

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Own the sending tasks until cancelled (the front's end); then close the client."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            with trio.CancelScope(shield=True):
                await self._client.aclose()

    # Sending -------------------------------------------------------------------------------

    def share(self, credential: str | None, message: Message) -> None:
        """A change the tenant `credential`'s server raised here: to every other node (a
        pool's `on_change`; must not wait)."""
        body = changes.envelope(message)
        if body is None or self._nursery is None:
            return
        if self._waiting >= WAITING:
            self._log.debug("fleet.change_dropped", reason=f"{WAITING} changes wait already")
            return
        self._waiting += 1
        self._nursery.start_soon(self._fan_out, credential, body)

    async def _fan_out(self, credential: str | None, body: bytes) -> None:
        try:
            peers = await self._fleet.peers()
        finally:
            self._waiting -= 1
        assert self._nursery is not None
        for peer in peers:
            if self._in_flight.get(peer, 0) >= IN_FLIGHT:
                self._failed(peer, f"{IN_FLIGHT} changes to it are under way already")
                continue
            self._in_flight[peer] = self._in_flight.get(peer, 0) + 1
            self._nursery.start_soon(self._send, peer, credential, body)

    async def _send(self, peer: str, credential: str | None, body: bytes) -> None:
        headers = {"content-type": JSON,
                   changes.HEADER: self._fleet.issue_change(credential, body)}
        try:
            with trio.move_on_after(SEND_TIMEOUT) as waited:
                answer = await self._client.post(peer + changes.PATH, content=body,
                                                 headers=headers)
            if waited.cancelled_caught:
                self._failed(peer, f"no answer within {SEND_TIMEOUT:g} s")
            elif answer.status_code != 202:
                self._failed(peer, f"it answered {answer.status_code}: is its fleet key the "
                                   "same, and its version as new?")
            else:
                self._reached(peer)
        except httpx2.HTTPError as exc:
            self._failed(peer, repr(exc))
        finally:
            self._in_flight[peer] -= 1

    def _failed(self, peer: str, why: str) -> None:
        if peer not in self._failing:
            self._failing[peer] = why
            self._log.warning("fleet.changes_missed", peer=peer, reason=why,
                              effect="its tenants' listen streams miss the changes raised "
                                     "here until it is reached again")

    def _reached(self, peer: str) -> None:
        if self._failing.pop(peer, None) is not None:
            self._log.info("fleet.changes_reached", peer=peer)

    # Taking --------------------------------------------------------------------------------

    def hear(self, request: Request, outcome: Outcome) -> Reply:
        """Another node's change (POST `changes.PATH`): to the tenant its pass names, if this
        node has it (else dropped: it has no listener here); 202 either way."""
        if request.method != "POST":
            return replies.fleet_change_refused(405, "a fleet change is POSTed")
        value = request.headers.get(changes.HEADER)
        if value is None:
            return replies.forbidden("a fleet change without its pass")
        checked = self._fleet.check_change(value, request.body)
        if isinstance(checked, str):
            return replies.fleet_pass_refused(checked)
        outcome.forwarded_by = checked.node
        message = changes.opened(request.body)
        if isinstance(message, str):
            return replies.fleet_change_refused(400, message)
        self._deliver(checked, message)
        return Reply(202, b"", reason=f"a change from {checked.node}")

    def _deliver(self, sent: Forwarded, message: Message) -> None:
        """To the core of the tenant `sent` names: it tells its streams (and sends nothing
        on: it takes the change as relayed)."""
        listeners = self._listeners_of(sent.credential)
        if sent.node == self._fleet.node:  # its own streams heard it already
            self._from_itself()
        elif listeners is None:
            self._log.debug("fleet.change_dropped", method=message["method"],
                            reason="no such tenant here")
        else:
            listeners.post(ChangeRelayed(message))

    def _from_itself(self) -> None:
        """Said once: a node's name is not its own, or it is among its own peers."""
        if not self._told_itself:
            self._told_itself = True
            self._log.warning("fleet.change_from_itself",
                              fix="a change came signed with this node's name: give each "
                                  "node a name of its own (node), and with fleet_dns a "
                                  "node_url that is an address the name resolves to")
