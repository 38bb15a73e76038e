"""A tenant's pool on the HTTP front, in process: a call that may be asked for input goes to
a process of its own (one more is started when every one is busy), a retry goes back to the
process its requestState names, past `max_servers` calls wait in order, `max_servers_total`
refuses naming itself, and an idle process is stopped after `server_idle`. Real HTTP/1.1
over loopback, scripted cores whose mode B load the test sets, fake server children, trio's
virtual clock."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from bridge.core.events import Action, ChangeRelayed, Event, Send, ShareChange, TimerFired
from bridge.core.modern_server_legacy_client.placement import Load
from bridge.shell.http.auth import Tokens
from bridge.shell.http.front import Access
from bridge.shell.session.pool import PoolSettings
from tests.shell.test_http_front import (
    META,
    Cores,
    Running,
    ScriptedCore,
    rpc_headers,
    running,
)

ALICE = "alice-token"
TOKENS = Tokens((ALICE.encode(),))
FREE = Load(own_free=True, shared_free=True, calls=0)
HOLDING = Load(own_free=False, shared_free=False, calls=1)
ASKING = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


class ModeB:
    """A mode B handler as placement reads it: its load, set by the test."""

    mode = "B"

    def __init__(self) -> None:
        self.now = FREE

    def load(self) -> Load:
        return self.now


class PooledCore(ScriptedCore):
    def __init__(self, route: str, legacy: bool) -> None:
        super().__init__()
        self.route, self.legacy = route, legacy
        self.handler = ModeB()  # type: ignore[assignment]
        self.relayed: list[Any] = []
        """The changes another core shared with it (`ChangeRelayed`)."""

    def handle(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChangeRelayed):
            self.relayed.append(event.message)
            return []
        return super().handle(event, now)


class PooledCores(Cores):
    def __call__(self, route: str = "", legacy: bool = False) -> PooledCore:
        self.append(PooledCore(route, legacy))
        return self[-1]  # type: ignore[return-value]

    def __getitem__(self, index: int) -> PooledCore:  # type: ignore[override]
        return super().__getitem__(index)  # type: ignore[return-value]


def call(rid: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "slow", "_meta": ASKING, **params}}


KEPT: list[Any] = []
"""Every client a test made: one dropped would close its connection, cancelling its call."""


async def send(r: Running, message: dict[str, Any]) -> Any:
    client = await r.client()
    KEPT.append(client)
    await client.send("POST", json.dumps(message).encode(),
                      {**rpc_headers(message), "authorization": f"Bearer {ALICE}"})
    return client


def answer(core: ScriptedCore, n: int) -> None:
    """The core's answer to its `n`th call, sent on its next timer."""
    wire = core.ids_of("tools/call")[n]
    core.later.append(Send("client", {"jsonrpc": "2.0", "id": wire, "result": {"n": n}},
                           request=wire))


def pooled(**settings: Any) -> dict[str, Any]:
    return {"access": Access(tokens=TOKENS), "pool": PoolSettings(**settings)}


async def test_a_call_that_may_be_asked_takes_a_process_of_its_own_and_its_retry_goes_back(
        autojump_clock: Any) -> None:
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=4)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]  # parked, say
        await send(r, call(2))
        await cores.made(2)
        await cores[1].wait_for("tools/call")
        assert [(c.route, c.legacy) for c in cores] == [("", False), ("1", True)]
        cores[1].handler.now = HOLDING  # type: ignore[attr-defined]
        await send(r, call(3, requestState="rs1.1~payload.mac"))  # names the process "1"
        await cores[1].wait_for("tools/call", 2)
        await send(r, call(4, requestState="rs1.9~payload.mac"))  # names none: the first's
        await cores[0].wait_for("tools/call", 2)
        assert len(cores) == 2
        assert [e["servers"] for e in r.events("pool.grew")] == [2]


async def test_past_max_servers_a_call_waits_for_a_free_process_then_runs(
        autojump_clock: Any) -> None:
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=1)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]
        waiting = await send(r, call(2))
        await trio.sleep(1.0)  # it is read, finds the one process busy, and waits
        assert len(cores) == 1 and len(cores[0].ids_of("tools/call")) == 1
        assert [len(t.pool.waiting) for t in r.front.tenants] == [1]
        cores[0].handler.now = FREE  # type: ignore[attr-defined]
        answer(cores[0], 0)
        assert r.front.tenants.get(TOKENS.check(f"Bearer {ALICE}")) is not None
        for tenant in r.front.tenants:
            assert tenant.first.driver is not None
            tenant.first.driver.post(TimerFired())  # call 1 answered: call 2 goes in
        await cores[0].wait_for("tools/call", 2)
        answer(cores[0], 1)
        for tenant in r.front.tenants:
            assert tenant.first.driver is not None
            tenant.first.driver.post(TimerFired())
        head = await waiting.head()
        assert head.status == 200


async def test_at_max_servers_total_a_call_is_refused_naming_it(autojump_clock: Any) -> None:
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=4, max_servers_total=0)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]
        refused = await send(r, call(2))
        body = (await refused.whole()).json
        assert body["id"] == 2
        assert body["error"]["data"] == {"max_servers_total": 0}
        assert "max_servers_total" in body["error"]["message"]
        assert len(cores) == 1


async def test_a_process_idle_for_server_idle_is_stopped_and_the_first_stays(
        autojump_clock: Any) -> None:
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=4, server_idle=60.0)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]
        second = await send(r, call(2))
        await cores.made(2)
        await cores[1].wait_for("tools/call")
        answer(cores[1], 0)
        for tenant in r.front.tenants:
            for member in tenant.pool.members:
                assert member.driver is not None
                member.driver.post(TimerFired())
        assert (await second.whole()).status == 200
        await trio.sleep(200.0)  # past server_idle, and a check of the pool's
        assert [e["server"] for e in r.events("pool.server_ending")] == ["1"]
        for tenant in r.front.tenants:
            assert [m.route for m in tenant.pool.members] == [""]


async def test_a_call_whose_client_leaves_as_its_process_starts_is_never_left_running(
        autojump_clock: Any) -> None:
    """Whether the client leaves before or after the call reaches the new process, that
    process never holds the call without its cancellation."""
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=4)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]
        leaving = await send(r, call(2))
        await cores.made(2)  # its process is starting
        await leaving.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        calls = cores[1].ids_of("tools/call")
        cancelled = [m["params"]["requestId"] for m in cores[1].received
                     if m.get("method") == "notifications/cancelled"]
        assert calls == cancelled and calls in ([], ["http-2"])


TOOLS_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
PROMPTS_CHANGED = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}


async def test_a_change_a_later_process_s_server_raises_reaches_the_first_s_core(
        autojump_clock: Any) -> None:
    """The first process's core holds the listen streams: a change another process's server
    raised goes there; the first's own is not handed back to it."""
    cores = PooledCores()
    async with running(make_core=cores, **pooled(max_servers=2)) as r:
        await send(r, call(1))
        await cores.made(1)
        await cores[0].wait_for("tools/call")
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]
        await send(r, call(2))
        await cores.made(2)
        await cores[1].wait_for("tools/call")
        cores[1].later.append(ShareChange(TOOLS_CHANGED))
        cores[0].later.append(ShareChange(PROMPTS_CHANGED))
        for tenant in r.front.tenants:
            assert tenant.pool.on_change is None  # no fleet: it goes nowhere else
            for member in reversed(tenant.pool.members):
                assert member.driver is not None
                member.driver.post(TimerFired())
        assert (cores[0].relayed, cores[1].relayed) == ([TOOLS_CHANGED], [])
