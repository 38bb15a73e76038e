"""A front told to stop drains first (`drain_grace`): /readyz says "draining" at once, a new
legacy session or a new tenant is refused with 503 and Retry-After, what it holds is still
served; it stops once nothing is in flight, or when the grace has passed (what is owed then is
ended), and a second stop ends it at once. Scripted cores, fake server children, trio's
virtual clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
import trio
import trio.testing
from structlog.testing import capture_logs

import tests.shell.test_http_front as modern
from bridge.core.events import Action, Event, Send, ShutdownRequested, Stop, TimerFired
from bridge.shell import logs
from bridge.shell.http.address import Address
from bridge.shell.http.front import Access, Front
from bridge.shell.services.listeners import bind_tcp
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from bridge.streamable.drain import NodeStage
from tests.shell.fakes import WAIT, FakeChild, Spawner
from tests.shell.test_http_front import Client, Cores, request, rpc_headers
from tests.shell.test_http_legacy import (
    LegacyCore,
    Running,
    answer,
    headers,
    initialized,
    last,
    post,
    rpc,
    running,
)
from tests.shell.test_http_pool import FREE, HOLDING, PooledCores, pooled
from tests.shell.test_http_tenants import ALICE, BOB, TOKENS, bearer

GRACE = 30.0


async def ready(client: Client) -> tuple[int, Any]:
    await client.send("GET", target="/readyz")
    got = await client.whole()
    return got.status, got.json


async def until_stage(front: Any, stage: NodeStage) -> None:
    with trio.fail_after(WAIT):
        while front.stage is not stage:
            await trio.sleep(0.01)


async def message(client: Client, head: Any) -> Any:
    """The next message of an event stream (its priming event, empty, and comments passed)."""
    while True:
        try:
            got = await client.sse_event(head)
        except json.JSONDecodeError:
            continue
        if got != ":":
            return got


async def slow_legacy_call(client: Client, session: str) -> Any:
    """A legacy slow call sent on `client`: its answer's head, its progress read."""
    call = rpc(5, "tools/call", name="slow")
    await client.send("POST", json.dumps(call).encode(), headers(session))
    head = await client.head()
    assert head.status == 200
    assert (await message(client, head))["method"] == "notifications/progress"
    return head


async def test_a_draining_front_serves_what_it_holds_refuses_new_sessions_then_stops(
        autojump_clock: Any) -> None:
    async with running(drain_grace=GRACE) as r:
        session = await initialized(await r.client())
        caller = await r.client()
        head = await slow_legacy_call(caller, session)
        start = trio.current_time()
        r.front.stop()
        assert r.front.stage is NodeStage.DRAINING
        probe = await r.client()
        assert await ready(probe) == (503, {"status": "draining"})
        refused = await post(await r.client(), rpc(0, "initialize", protocolVersion="2025-11-25",
                                                   capabilities={}, clientInfo={"name": "t",
                                                                                "version": "1"}))
        assert (refused.status, refused.headers["retry-after"]) == (503, "1")
        assert "this node is draining" in refused.json["error"]["message"]
        assert len(r.cores) == 1  # no session was opened for it
        held = await post(await r.client(), rpc(2, "tools/list"), session)
        assert (held.status, last(held)) == (200, answer(2, {"tools": []}).message)
        # The shared tenant (no tokens: every modern client's) is held too.
        assert (await (await r.client()).post(request(3, "tools/list"))).status == 200
        await trio.sleep(1.0)
        assert r.front.stage is NodeStage.DRAINING  # the slow call is still in flight
        r.cores[0].later = [answer(5, {"content": [{"type": "text", "text": "done"}]})]
        live = r.front.sessions.get(session)
        assert live is not None and live.driver is not None
        live.driver.post(TimerFired())
        assert (await message(caller, head))["result"]["content"][0]["text"] == "done"
        await until_stage(r.front, NodeStage.STOPPING)
        assert trio.current_time() - start < 2.0  # nothing in flight: no need for the grace
        drained = r.events("http.drained")
        assert [(e["grace_passed"], e["requests"], e["calls"]) for e in drained] == [
            (False, 0, 0)]
        assert r.events("http.draining")[0]["grace_s"] == GRACE


async def test_what_is_still_in_flight_when_the_grace_ends_is_ended(
        autojump_clock: Any) -> None:
    async with running(drain_grace=GRACE) as r:
        session = await initialized(await r.client())
        caller = await r.client()
        head = await slow_legacy_call(caller, session)
        r.front.stop()
        await trio.sleep(GRACE - 0.5)
        assert r.front.stage is NodeStage.DRAINING
        await trio.sleep(1.0)
        assert r.front.stage is NodeStage.STOPPING
        ended = await caller.rest(head)  # the session ends: its stream closes
        assert ended.status == 200
        assert [(e["grace_passed"], e["requests"]) for e in r.events("http.drained")] == [
            (True, 1)]
        assert r.cores[0].stopped
        assert r.front.stage is NodeStage.STOPPING


async def test_a_drain_does_not_wait_for_streams_that_only_listen(autojump_clock: Any) -> None:
    async with running(drain_grace=GRACE) as r:
        session = await initialized(await r.client())
        legacy_stream = await r.client()
        await legacy_stream.send("GET", headers={**headers(session),
                                                 "accept": "text/event-stream"})
        assert (await legacy_stream.head()).status == 200
        listen = request(4, "subscriptions/listen", notifications={"toolsListChanged": True})
        listener = await r.client()
        await listener.send("POST", json.dumps(listen).encode(), rpc_headers(listen))
        head = await listener.head()
        assert (await message(listener, head))["method"] == \
            "notifications/subscriptions/acknowledged"
        start = trio.current_time()
        r.front.stop()
        await until_stage(r.front, NodeStage.STOPPING)
        assert trio.current_time() - start < 1.0
        assert [(e["grace_passed"], e["requests"]) for e in r.events("http.drained")] == [
            (False, 0)]


async def test_a_drain_waits_for_the_retry_of_a_parked_call(autojump_clock: Any) -> None:
    """No request is under way, but a tenant's core holds a call parked for its client's
    retry: the drain waits for it (and ends once it has been resumed and answered)."""
    cores = PooledCores()
    async with modern.running(make_core=cores, drain_grace=GRACE, **pooled()) as r:
        listed = await (await r.client()).post(request(1, "tools/list"),
                                               authorization="Bearer alice-token")
        assert listed.status == 200
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]  # a call parked
        r.front.stop()
        await trio.sleep(5.0)
        assert r.front.stage is NodeStage.DRAINING
        cores[0].handler.now = FREE  # type: ignore[attr-defined]  # resumed, answered
        await until_stage(r.front, NodeStage.STOPPING)
        assert [(e["grace_passed"], e["calls"]) for e in r.events("http.drained")] == [
            (False, 0)]


async def test_a_second_stop_while_draining_stops_at_once(autojump_clock: Any) -> None:
    async with running(drain_grace=GRACE) as r:
        session = await initialized(await r.client())
        caller = await r.client()
        head = await slow_legacy_call(caller, session)
        start = trio.current_time()
        r.front.stop()
        await trio.sleep(0.5)
        r.front.stop()
        assert r.front.stage is NodeStage.STOPPING
        await caller.rest(head)
        assert trio.current_time() - start < 2.0
        assert r.cores[0].stopped
        assert r.events("http.drained") == []  # the drain did not run its course


async def test_without_a_drain_grace_a_stop_ends_at_once(autojump_clock: Any) -> None:
    async with running() as r:
        await initialized(await r.client())
        r.front.stop()
        assert r.front.stage is NodeStage.STOPPING
        assert r.events("http.draining") == []


async def test_a_draining_front_refuses_a_new_tenant_and_serves_one_it_holds(
        autojump_clock: Any) -> None:
    cores = Cores()
    async with modern.running(access=Access(tokens=TOKENS), make_core=cores,
                              drain_grace=GRACE) as r:
        client = await r.client()
        assert (await client.post(request(1, "tools/list"), **bearer(ALICE))).status == 200
        call = request(2, "tools/call", name="slow")
        caller = await r.client()
        await caller.send("POST", json.dumps(call).encode(), {**rpc_headers(call),
                                                              **bearer(ALICE)})
        head = await caller.head()
        assert (await caller.sse_event(head))["method"] == "notifications/progress"
        r.front.stop()
        new = await (await r.client()).post(request(3, "tools/list"), **bearer(BOB))
        assert (new.status, new.headers["retry-after"], new.json["id"]) == (503, "1", 3)
        assert "this node is draining" in new.json["error"]["message"]
        assert len(cores) == 1  # Bob's tenant was not started
        again = await (await r.client()).post(request(4, "tools/list"), **bearer(ALICE))
        assert again.status == 200
        wire = cores[0].ids_of("tools/call")[0]
        cores[0].later = [Send("client", {"jsonrpc": "2.0", "id": wire, "result": {"n": 1}},
                               request=wire)]
        tenant = r.front.tenants.get(TOKENS.check(f"Bearer {ALICE}"))
        assert tenant is not None and tenant.first.driver is not None
        tenant.first.driver.post(TimerFired())
        assert (await caller.sse_event(head)) == {"jsonrpc": "2.0", "id": 2, "result": {"n": 1}}
        await until_stage(r.front, NodeStage.STOPPING)


class WindingDown(LegacyCore):
    """A legacy session's core that, asked to stop with a grace, still owes its slow call
    until a TimerFired ends it (as a core answering within shutdown_grace does)."""

    def handle(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ShutdownRequested) and event.grace > 0:
            self.stopped = True
            return []
        if isinstance(event, TimerFired) and self.stopped:
            return [Stop(0)]
        return super().handle(event, now)


@asynccontextmanager
async def winding_down() -> AsyncIterator[Running]:
    """A front without a drain whose legacy sessions' cores are `WindingDown`."""
    cores: list[LegacyCore] = []

    def make_core(route: str = "", legacy: bool = False) -> LegacyCore:
        cores.append(WindingDown())
        return cores[-1]

    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured, bind_tcp("127.0.0.1", 0) as listener:
        front = Front(modern.ScriptedCore(), Servers(SessionSettings(), spawn=spawner),
                      Address("127.0.0.1", 0, "/mcp"), logs.logger(),
                      settings=SessionSettings(), make_core=make_core)
        async with trio.open_nursery() as nursery:
            spawner.nursery = nursery
            nursery.start_soon(front.run, listener)
            with trio.fail_after(WAIT):
                await front.listening.wait()
            modern.HOST = f"127.0.0.1:{front.port}"
            yield Running(front, cores, spawner, front.port, captured)
            front.stop()
            nursery.cancel_scope.cancel()


async def test_a_stopping_front_refuses_requests_and_takes_the_client_s_answers(
        autojump_clock: Any) -> None:
    async with winding_down() as r:
        session = await initialized(await r.client())
        asker = await r.client()
        call = rpc(6, "tools/call", name="ask")
        await asker.send("POST", json.dumps(call).encode(), headers(session))
        head = await asker.head()
        question = await message(asker, head)
        assert question["method"] == "elicitation/create"
        r.front.stop()
        assert r.front.stage is NodeStage.STOPPING
        refused = await post(await r.client(), rpc(7, "tools/list"), session)
        assert (refused.status, refused.headers["retry-after"]) == (503, "1")
        assert "this node stopped" in refused.json["error"]["message"]
        assert "initialize again" in refused.json["error"]["message"]
        assert await ready(await r.client()) == (503, {"status": "stopping"})
        # The client's answer is no new work: not refused as such (its session, ended, is
        # unknown at HTTP now: 404, as before any drain).
        late = await post(await r.client(), {"jsonrpc": "2.0", "id": question["id"],
                                             "result": {"action": "accept"}}, session)
        assert late.status == 404 and "this node stopped" not in late.body.decode()
        live = r.front.sessions.get(session)
        assert live is None and r.cores[0].stopped
