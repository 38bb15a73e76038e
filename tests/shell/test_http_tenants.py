"""Tenants on the HTTP front in process: each bearer token's modern requests reach a core of
their own, what one tenant's core sends never reaches another's client, an idle tenant ends
after `tenant_idle`, and `max_tenants` makes room or refuses. Real HTTP/1.1 over loopback
(the h11 client of test_http_front.py), scripted cores, fake server children, trio's virtual
clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from bridge.cli import _settings
from bridge.config import load_settings
from bridge.core.events import Send, TimerFired
from bridge.errors import ConfigError
from bridge.shell.http.auth import Tokens
from bridge.shell.http.front import Access
from bridge.shell.session.pool import PoolSettings
from tests.shell.test_http_front import Cores, Running, request, rpc_headers, running
from tests.shell.test_http_pool import FREE, HOLDING, PooledCores

ALICE, BOB = "alice-token", "bob-token"
TOKENS = Tokens((ALICE.encode(), BOB.encode()))
LIST = request(1, "tools/list")


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def listed(r: Running, token: str) -> int:
    client = await r.client()
    return (await client.post(LIST, **bearer(token))).status


async def test_each_token_s_requests_reach_a_core_of_its_own(autojump_clock: Any) -> None:
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores) as r:
        assert await listed(r, ALICE) == 200
        assert await listed(r, BOB) == 200
        assert await listed(r, ALICE) == 200
        assert [len(core.ids_of("tools/list")) for core in cores] == [2, 1]
        assert r.core.received == []  # the front's own session serves no token
        await trio.testing.wait_all_tasks_blocked()
        started = r.events("http.tenant_started")
        assert len(started) == 2 and {e["tenant"] for e in started} == {
            TOKENS.check(f"Bearer {ALICE}").digest, TOKENS.check(f"Bearer {BOB}").digest}
        assert not any(token in json.dumps(e, default=str) for e in r.logs
                       for token in (ALICE, BOB))


async def test_a_token_s_first_requests_at_once_start_one_tenant(autojump_clock: Any) -> None:
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores) as r:
        statuses: list[int] = []

        async def one() -> None:
            statuses.append(await listed(r, ALICE))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
        assert statuses == [200] * 3
        assert len(cores) == 1 and len(cores[0].ids_of("tools/list")) == 3


async def test_what_a_tenant_s_core_sends_reaches_only_its_own_clients(
        autojump_clock: Any) -> None:
    """Both tenants' calls take the same id and progress token; each core's progress and
    answer reach its own client only."""
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores) as r:
        call = request(1, "tools/call", token="t", name="slow")
        alice, bob = await r.client(), await r.client()
        await alice.send("POST", json.dumps(call).encode(), {**rpc_headers(call),
                                                              **bearer(ALICE)})
        await bob.send("POST", json.dumps(call).encode(), {**rpc_headers(call),
                                                            **bearer(BOB)})
        await cores.made(2)
        for core in cores:
            await core.wait_for("tools/call")
        for n, core in enumerate(cores):
            [wire] = core.ids_of("tools/call")
            core.later = [Send("client", {"jsonrpc": "2.0", "id": wire,
                                          "result": {"tenant": n}}, request=wire)]
        for tenant in r.front.tenants:
            assert tenant.first.driver is not None
            tenant.first.driver.post(TimerFired())
        for client, n in ((alice, 0), (bob, 1)):
            answer = await client.head()
            assert (await client.sse_event(answer))["params"]["progressToken"] == "t"
            assert await client.sse_event(answer) == {"jsonrpc": "2.0", "id": 1,
                                                      "result": {"tenant": n}}


async def test_a_tenant_idle_for_tenant_idle_ends_and_its_next_request_starts_anew(
        autojump_clock: Any) -> None:
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores,
                       tenant_idle=60.0, keep_alive=1000.0) as r:
        assert await listed(r, ALICE) == 200
        listen = request(9, "subscriptions/listen")
        bob = await r.client()
        await bob.send("POST", json.dumps(listen).encode(), {**rpc_headers(listen),
                                                              **bearer(BOB)})
        await bob.head()  # Bob's listen stream stays open: his tenant is in use
        await trio.sleep(61.0)
        ending = r.events("http.tenant_ending")
        assert [e["tenant"] for e in ending] == [TOKENS.check(f"Bearer {ALICE}").digest]
        assert "tenant_idle" in ending[0]["reason"]
        assert len(r.front.tenants) == 1  # Alice's ended, her server stopped
        assert await listed(r, ALICE) == 200
        assert len(cores) == 3 and cores[2].ids_of("tools/list") == cores[0].ids_of(
            "tools/list")  # a new core, the request renamed as in a fresh session


async def test_max_tenants_ends_the_tenant_idle_longest_to_make_room(
        autojump_clock: Any) -> None:
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores, max_tenants=1) as r:
        assert await listed(r, ALICE) == 200
        await trio.sleep(11.0)  # idle past EVICTABLE_AFTER
        assert await listed(r, BOB) == 200
        [ending] = r.events("http.tenant_ending")
        assert ending["tenant"] == TOKENS.check(f"Bearer {ALICE}").digest
        assert "max_tenants (1)" in ending["reason"]
        assert len(cores) == 2


async def test_max_tenants_keeps_a_tenant_whose_core_holds_a_parked_call(
        autojump_clock: Any) -> None:
    """A call parked for its client's retry (mode B's input round: a person may be filling in
    a form) keeps its tenant: a new credential is refused while it is held, and makes room
    once the call has ended."""
    cores = PooledCores()
    async with running(make_core=cores, max_tenants=1, access=Access(tokens=TOKENS),
                       pool=PoolSettings()) as r:
        assert await listed(r, ALICE) == 200
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]  # a call parked
        await trio.sleep(60.0)  # idle long past EVICTABLE_AFTER
        refused = await (await r.client()).post(LIST, **bearer(BOB))
        assert refused.status == 503 and refused.json["error"]["data"] == {"max_tenants": 1}
        assert r.events("http.tenant_ending") == [] and len(cores) == 1
        cores[0].handler.now = FREE  # type: ignore[attr-defined]  # resumed and answered
        assert await listed(r, BOB) == 200
        [ending] = r.events("http.tenant_ending")
        assert ending["tenant"] == TOKENS.check(f"Bearer {ALICE}").digest
        assert len(cores) == 2


async def test_a_parked_call_keeps_its_tenant_past_tenant_idle(autojump_clock: Any) -> None:
    cores = PooledCores()
    async with running(make_core=cores, tenant_idle=60.0, access=Access(tokens=TOKENS),
                       pool=PoolSettings()) as r:
        assert await listed(r, ALICE) == 200
        cores[0].handler.now = HOLDING  # type: ignore[attr-defined]  # a call parked
        await trio.sleep(300.0)
        assert r.events("http.tenant_ending") == []
        cores[0].handler.now = FREE  # type: ignore[attr-defined]  # resumed and answered
        await trio.sleep(130.0)
        [ending] = r.events("http.tenant_ending")
        assert "tenant_idle" in ending["reason"]


async def test_max_tenants_every_one_in_use_refuses_naming_the_setting(
        autojump_clock: Any) -> None:
    cores = Cores()
    async with running(access=Access(tokens=TOKENS), make_core=cores, max_tenants=1,
                       keep_alive=1000.0) as r:
        listen = request(9, "subscriptions/listen")
        alice = await r.client()
        await alice.send("POST", json.dumps(listen).encode(), {**rpc_headers(listen),
                                                                **bearer(ALICE)})
        await alice.head()
        await trio.sleep(60.0)
        bob = await r.client()
        refused = await bob.post(LIST, **bearer(BOB))
        assert refused.status == 503
        assert refused.json["id"] == 1
        assert refused.json["error"]["data"] == {"max_tenants": 1}
        assert "max_tenants" in refused.json["error"]["message"]
        assert len(cores) == 1 and r.events("http.tenant_ending") == []


async def test_without_tokens_every_client_is_the_front_s_own_tenant(
        autojump_clock: Any) -> None:
    cores = Cores()
    async with running(make_core=cores, tenant_idle=1.0) as r:
        assert await listed(r, ALICE) == 200  # a header that names no token checked
        assert await listed(r, BOB) == 200
        await trio.sleep(5.0)
        assert await listed(r, BOB) == 200
        assert cores == [] and len(r.core.ids_of("tools/list")) == 3
        assert r.events("http.tenant_ending") == []


def test_max_tenants_and_tenant_idle_from_the_file_and_the_flags(tmp_path: Path) -> None:
    defaults = load_settings(None, {"command": ("srv",)}).daemon
    assert (defaults.max_tenants, defaults.tenant_idle) == (16, 1800.0)
    config = tmp_path / "c.toml"
    config.write_text('max_tenants = 4\ntenant_idle = "90s"\n')
    assert load_settings(str(config), {"command": ("srv",)}).daemon.tenant_idle == 90.0
    settings, _ = _settings(["--config", str(config), "--max-tenants", "2", "--tenant-idle",
                             "2m", "--", "srv"], serve=True)
    assert (settings.daemon.max_tenants, settings.daemon.tenant_idle) == (2, 120.0)
    config.write_text('tenant_idle = "soon"\n')
    with pytest.raises(ConfigError, match="tenant_idle"):
        load_settings(str(config), {})
