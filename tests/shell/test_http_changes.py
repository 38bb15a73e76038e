"""A node's relay of its tenants' changes, without sockets: httpx2's MockTransport plays the
other nodes, trio's virtual clock the time. What is checked: each change goes once to every
other node (never to this one), signed for its tenant; a node that does not answer costs at
most SEND_TIMEOUT and IN_FLIGHT sends, past which its changes are dropped; its failing and
its recovery are each said once; what is no change is not sent."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import trio
from structlog.testing import capture_logs

from bridge.fleet import changes
from bridge.fleet.keys import derive
from bridge.fleet.passes import Forwarded
from bridge.shell import logs
from bridge.shell.http import changes as relay
from bridge.shell.http.changes import ChangeRelay
from bridge.shell.http.fleet import Fleet

KEYS = derive(b"fleet-secret-of-this-test-0123456789")
NODES = ("http://10.0.0.1:8808", "http://10.0.0.2:8808", "http://10.0.0.3:8808")
TOOLS = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


class Nodes:
    """The other nodes, as a transport: what each took, and which ones hang."""

    def __init__(self) -> None:
        self.taken: list[tuple[str, Forwarded | str, Any]] = []
        self.hanging: set[str] = set()
        self.fleet = Fleet("n1", NODES[0], KEYS, NODES)

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        peer = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        if peer in self.hanging:
            await trio.sleep_forever()
        checked = self.fleet.check_change(request.headers[changes.HEADER], request.content)
        self.taken.append((peer, checked, changes.opened(request.content)))
        assert request.url.path == changes.PATH
        return httpx2.Response(202)


async def relaying(nodes: Nodes, nursery: trio.Nursery) -> ChangeRelay:
    made = ChangeRelay(nodes.fleet, logs.logger(), lambda credential: None,
                       transport=httpx2.MockTransport(nodes))
    await nursery.start(made.run)
    return made


async def test_a_change_goes_once_to_every_other_node_signed_for_its_tenant(
        autojump_clock: Any) -> None:
    nodes = Nodes()
    async with trio.open_nursery() as nursery:
        made = await relaying(nodes, nursery)
        made.share("c0ffee", TOOLS)
        made.share(None, {"jsonrpc": "2.0", "method": "notifications/message"})  # no change
        await trio.sleep(1.0)
        nursery.cancel_scope.cancel()
    assert sorted(nodes.taken) == [(NODES[1], Forwarded("n1", "c0ffee"), TOOLS),
                                   (NODES[2], Forwarded("n1", "c0ffee"), TOOLS)]


async def test_a_node_that_does_not_answer_is_given_up_in_time_and_bounded(
        autojump_clock: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "IN_FLIGHT", 2)
    nodes = Nodes()
    nodes.hanging.add(NODES[2])
    with capture_logs() as captured:
        async with trio.open_nursery() as nursery:
            made = await relaying(nodes, nursery)
            for _ in range(3):
                made.share(None, TOOLS)
                await trio.sleep(0.1)  # the node that answers has taken it
            # The third is dropped for the hanging node: two are under way to it.
            assert len([t for t in nodes.taken if t[0] == NODES[1]]) == 3
            missed = [e for e in captured if e["event"] == "fleet.changes_missed"]
            assert [(e["peer"], e["reason"]) for e in missed] == [
                (NODES[2], "2 changes to it are under way already")]
            await trio.sleep(relay.SEND_TIMEOUT)
            nodes.hanging.clear()
            made.share(None, TOOLS)
            await trio.sleep(0.1)
            nursery.cancel_scope.cancel()
    assert [t[0] for t in nodes.taken].count(NODES[2]) == 1  # the one after it came back
    said = [(e["event"], e.get("peer")) for e in captured if e["event"].startswith("fleet.")]
    assert said == [("fleet.changes_missed", NODES[2]), ("fleet.changes_reached", NODES[2])]


async def test_a_node_that_times_out_is_said_once(autojump_clock: Any) -> None:
    nodes = Nodes()
    nodes.hanging.add(NODES[1])
    with capture_logs() as captured:
        async with trio.open_nursery() as nursery:
            made = await relaying(nodes, nursery)
            made.share(None, TOOLS)
            made.share(None, TOOLS)
            await trio.sleep(relay.SEND_TIMEOUT + 1)
            nursery.cancel_scope.cancel()
    missed = [e for e in captured if e["event"] == "fleet.changes_missed"]
    assert [(e["peer"], e["reason"]) for e in missed] == [
        (NODES[1], f"no answer within {relay.SEND_TIMEOUT:g} s")]
