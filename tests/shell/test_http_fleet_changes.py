"""A change a tenant's server raises at one node of a fleet reaches that tenant's listen
streams at the other: two fronts in process, real HTTP/1.1 over loopback between the client
and each front and between the fronts, cores scripted as mode B's is for changes.

What is checked: a change raised at node b is POSTed to node a with a pass naming its tenant,
and a's core for that tenant (only) takes it as relayed and puts it on the listen stream
there; a node that has no such tenant drops it; a change is never sent on by the node that
took it; a POST without a good pass, or whose body is no change, is refused; a node that
cannot be reached misses the changes, said once, and the others still get them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

import tests.shell.test_http_front as modern
from bridge.core.events import Action, ChangeRelayed, Event, Send, ShareChange
from bridge.fleet import changes, passes
from bridge.shell.http.auth import Tokens
from tests.shell.test_http_fleet import KEYS, Fleet2, fleet, until
from tests.shell.test_http_front import Answer, Client, ScriptedCore, client_message

TOOLS_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
SUB = "io.modelcontextprotocol/subscriptionId"
ONE, TWO = "token-one", "token-two"


class ChangingCore(ScriptedCore):
    """A tenant's core as mode B's is for changes: `tools/call` of "add_tool" is answered
    and shares the change its server raised (`ShareChange`); a change another node shared
    (`ChangeRelayed`) goes to each listen stream open here."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.relayed: list[Any] = []

    def handle(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChangeRelayed):
            self.relayed.append(event.message)
            return [Send("client", {**event.message, "params": {"_meta": {SUB: rid}}},
                         request=rid) for rid in self.ids_of("subscriptions/listen")]
        message = client_message(event)
        if message is None or message.get("params", {}).get("name") != "add_tool":
            return super().handle(event, now)
        self.received.append(message)
        rid = message["id"]
        return [ShareChange(TOOLS_CHANGED),
                Send("client", {"jsonrpc": "2.0", "id": rid, "result": {"content": []}},
                     request=rid)]


def tool_call(rid: int) -> dict[str, Any]:
    return modern.request(rid, "tools/call", name="add_tool")


async def listening(client: Client, **headers: str) -> Answer:
    """A listen stream opened on `client`, its acknowledgement read."""
    listen = modern.request("L", "subscriptions/listen", notifications={
        "toolsListChanged": True})
    await client.send("POST", json.dumps(listen).encode(),
                      {**modern.rpc_headers(listen), **headers})
    stream = await client.head()
    assert (await client.sse_event(stream))["method"] == \
        "notifications/subscriptions/acknowledged"
    return stream


def hears_at(f: Fleet2, node: str) -> list[Any]:
    """The changes other nodes POSTed to `node`, as its log says it answered them."""
    return [(e["status"], e.get("forwarded_by")) for e in f.events("http.request", node)
            if e["path"] == changes.PATH]


@pytest.fixture(autouse=True)
def _host() -> None:
    modern.HOST = "127.0.0.1"


async def test_a_change_raised_at_one_node_reaches_the_listen_stream_at_the_other() -> None:
    async with fleet(affinity="none", core=ChangingCore) as f:
        listener = await f.a.client()
        stream = await listening(listener)
        called = await (await f.b.client()).post(tool_call(1))
        assert called.status == 200
        assert await listener.sse_event(stream) == {
            **TOOLS_CHANGED, "params": {"_meta": {SUB: "L"}}}
        assert f.a.shared.relayed == [TOOLS_CHANGED]
        await until(lambda: hears_at(f, "a"))
        assert hears_at(f, "a") == [(202, "b")]
        await trio.sleep(0.2)  # a took it as relayed: it sends nothing on
        assert hears_at(f, "b") == [] and f.b.shared.relayed == []


async def test_a_change_reaches_only_its_own_tenant_at_the_other_node() -> None:
    tokens = Tokens((ONE.encode(), TWO.encode()), KEYS.credentials)
    async with fleet(tokens, affinity="none", core=ChangingCore) as f:
        ones, twos = await f.a.client(), await f.a.client()
        one_stream = await listening(ones, authorization=f"Bearer {ONE}")
        two_stream = await listening(twos, authorization=f"Bearer {TWO}")
        tenant_one, tenant_two = f.a.cores
        await (await f.b.client()).post(tool_call(1), authorization=f"Bearer {TWO}")
        assert (await twos.sse_event(two_stream))["method"] == TOOLS_CHANGED["method"]
        assert (tenant_one.relayed, tenant_two.relayed) == ([], [TOOLS_CHANGED])
        await (await f.b.client()).post(tool_call(2), authorization=f"Bearer {ONE}")
        assert (await ones.sse_event(one_stream))["method"] == TOOLS_CHANGED["method"]
        assert (tenant_one.relayed, tenant_two.relayed) == ([TOOLS_CHANGED], [TOOLS_CHANGED])
        assert f.a.shared.relayed == []  # the tokenless tenant is no one's here


async def test_a_change_for_a_tenant_a_node_does_not_have_is_dropped_there() -> None:
    tokens = Tokens((ONE.encode(),), KEYS.credentials)
    async with fleet(tokens, affinity="none", core=ChangingCore) as f:
        await (await f.b.client()).post(tool_call(1), authorization=f"Bearer {ONE}")
        await until(lambda: hears_at(f, "a"))
        assert hears_at(f, "a") == [(202, "b")]
        assert f.a.cores == [] and f.a.shared.relayed == []  # no tenant was started for it


async def post_change(f: Fleet2, body: bytes, **headers: str) -> Answer:
    client = await f.a.client()
    await client.send("POST", body, {"content-type": "application/json", **headers},
                      target=changes.PATH)
    return await client.whole()


async def test_a_change_without_a_good_pass_or_that_is_no_change_is_refused() -> None:
    async with fleet(affinity="none", core=ChangingCore) as f:
        body = changes.envelope(TOOLS_CHANGED)
        assert body is not None
        assert (await post_change(f, body)).status == 403
        forwarded = f.b.fleet.issue(None, passes.Bound("POST", changes.PATH, "", body))
        assert (await post_change(f, body, **{changes.HEADER: forwarded})).status == 403
        other = changes.envelope({"method": "notifications/prompts/list_changed"})
        assert other is not None
        signed = f.b.fleet.issue_change(None, other)
        assert (await post_change(f, body, **{changes.HEADER: signed})).status == 403
        junk = b'{"method":"tools/call"}'
        junk_pass = f.b.fleet.issue_change(None, junk)
        assert (await post_change(f, junk, **{changes.HEADER: junk_pass})).status == 400
        client = await f.a.client()
        await client.send("GET", target=changes.PATH)
        assert (await client.whole()).status == 405
        assert f.a.shared.relayed == []


async def test_a_node_that_cannot_be_reached_misses_the_changes_said_once() -> None:
    absent = "http://127.0.0.1:9"  # discard: nothing listens there
    async with fleet(absent=absent, affinity="none", core=ChangingCore) as f:
        listener = await f.a.client()
        stream = await listening(listener)
        for rid in (1, 2):
            await (await f.b.client()).post(tool_call(rid))
            assert (await listener.sse_event(stream))["method"] == TOOLS_CHANGED["method"]
        await until(lambda: f.events("fleet.changes_missed", "b"))
        await trio.sleep(0.2)
        assert [e["peer"] for e in f.events("fleet.changes_missed", "b")] == [absent]


async def test_a_change_signed_with_the_node_s_own_name_is_not_told_twice() -> None:
    """A node that finds itself among its peers (a name given twice, a node_url that is no
    address fleet_dns resolves to) would tell its streams twice: it says so, once."""
    async with fleet(affinity="none", core=ChangingCore) as f:
        listener = await f.a.client()
        await listening(listener)
        body = changes.envelope(TOOLS_CHANGED)
        assert body is not None
        for _ in range(2):
            own = f.a.fleet.issue_change(None, body)
            assert (await post_change(f, body, **{changes.HEADER: own})).status == 202
        assert f.a.shared.relayed == []
        assert len(f.events("fleet.change_from_itself", "a")) == 1
