"""Two fronts of one fleet (`test_http_fleet.fleet`), `fleet_affinity = "tenant"`: a modern
client's request landing at a node that is not its tenant's home is forwarded there and
served there; one another node forwarded is served where it arrives; a home that refuses
connections is passed over for the next node of the tenant's order (this node itself when
it is next), and one lost after the request was sent is an error, the request sent nowhere
else; a home being stopped serves the tenants it holds, and a new tenant of it is served at
the next node, wherever its requests land; with "none", each request is served where it
lands."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio

import tests.shell.test_http_front as modern
from bridge.fleet import home, passes
from bridge.shell.http.auth import Tokens
from bridge.streamable.drain import NodeStage
from tests.shell.test_http_fleet import KEYS, Fleet2, Node, fleet, until
from tests.shell.test_http_front import ScriptedCore, request, rpc_headers

CANDIDATES = tuple(f"token-{n}" for n in range(64))
TOKENS = Tokens(tuple(token.encode() for token in CANDIDATES), KEYS.credentials)


@pytest.fixture(autouse=True)
def _host() -> None:
    modern.HOST = "127.0.0.1"


def scripted(address: str) -> ScriptedCore:
    return ScriptedCore()


def digest(token: str) -> str:
    return TOKENS.check(f"Bearer {token}").digest


def homed_at(node: str, nodes: tuple[str, ...]) -> str:
    """A token whose tenant's home, among `nodes`, is `node`."""
    return next(token for token in CANDIDATES if home.ranked(digest(token), nodes)[0] == node)


def listed(rid: int) -> dict[str, Any]:
    return request(rid, "tools/list")


def tools_lists(core: Any) -> int:
    return len([m for m in core.received if m.get("method") == "tools/list"])


def by_home(f: Fleet2, credential: str | None) -> tuple[Node, Node]:
    """The tenant's home node, and the other."""
    first = home.ranked(credential, (f.a.fleet.address, f.b.fleet.address))[0]
    return (f.a, f.b) if first == f.a.fleet.address else (f.b, f.a)


async def test_a_tenant_s_requests_are_served_at_its_home_wherever_they_land() -> None:
    async with fleet(core=scripted) as f:
        at_home, other = by_home(f, None)
        for rid, node in enumerate((other, at_home, other), 1):
            answer = await (await node.client()).post(listed(rid))
            assert (answer.status, answer.json["result"]) == (200, {"tools": []})
        assert tools_lists(at_home.shared) == 3 and other.shared.received == []
        name = "a" if other is f.a else "b"
        await until(lambda: len(f.events("http.request", name)) == 2
                    and len(f.events("http.request", "b" if name == "a" else "a")) == 3)
        assert [e.get("forwarded_to") for e in f.events("http.request", name)] == [
            at_home.fleet.address] * 2
        served = f.events("http.request", "b" if name == "a" else "a")
        assert sorted(str(e.get("forwarded_by")) for e in served) == ["None", name, name]


async def test_each_token_s_tenant_runs_at_its_own_home_alone() -> None:
    async with fleet(TOKENS, core=scripted) as f:
        nodes = (f.a.fleet.address, f.b.fleet.address)
        at_a, at_b = homed_at(f.a.fleet.address, nodes), homed_at(f.b.fleet.address, nodes)
        for rid, (token, node) in enumerate([(at_a, f.b), (at_b, f.a), (at_a, f.a),
                                             (at_b, f.b)], 1):
            answer = await (await node.client()).post(listed(rid),
                                                      authorization=f"Bearer {token}")
            assert answer.status == 200
        [tenant_a], [tenant_b] = f.a.cores, f.b.cores  # one tenant at each: its home's
        assert tools_lists(tenant_a) == tools_lists(tenant_b) == 2


async def test_a_request_another_node_forwarded_is_served_where_it_arrives() -> None:
    async with fleet(core=scripted) as f:
        at_home, other = by_home(f, None)
        message = listed(1)
        body = json.dumps(message).encode()
        sent_by = "a" if at_home is f.a else "b"
        value = passes.issue(KEYS.passes, sent_by, time.time(), None,
                             passes.Bound("POST", "/mcp", "", body))
        client = await other.client()
        await client.send("POST", body, {**rpc_headers(message), passes.HEADER: value})
        answer = await client.whole()
        assert (answer.status, answer.json["result"]) == (200, {"tools": []})
        assert tools_lists(other.shared) == 1 and at_home.shared.received == []
        name = "b" if sent_by == "a" else "a"
        await until(lambda: f.events("http.request", name))
        [line] = f.events("http.request", name)
        assert (line["forwarded_by"], line.get("forwarded_to")) == (sent_by, None)


async def test_a_home_that_refuses_connections_is_passed_over_for_the_next_node() -> None:
    absent = "http://127.0.0.1:9"  # discard: nothing listens there
    async with fleet(TOKENS, absent=absent, core=scripted) as f:
        nodes = (f.a.fleet.address, f.b.fleet.address, absent)
        token = homed_at(absent, nodes)
        _, then, last = home.ranked(digest(token), nodes)
        nearer, farther = (f.a, f.b) if then == f.a.fleet.address else (f.b, f.a)
        assert last == farther.fleet.address
        for rid, node in enumerate((nearer, farther, farther), 1):
            answer = await (await node.client()).post(listed(rid),
                                                      authorization=f"Bearer {token}")
            assert (answer.status, answer.json["result"]) == (200, {"tools": []})
        [tenant] = nearer.cores
        assert tools_lists(tenant) == 3 and farther.cores == []
        far = "a" if farther is f.a else "b"
        await until(lambda: len(f.events("http.request", far)) == 2)
        assert [e.get("forwarded_to") for e in f.events("http.request", far)] == [then] * 2
        near = "b" if far == "a" else "a"
        assert [e["holder"] for e in f.events("fleet.node_unreachable")] == [absent] * 2
        assert {e["node"] for e in f.events("fleet.node_unreachable")} == {near, far}


async def test_a_new_tenant_of_a_home_being_stopped_is_served_at_the_next_node() -> None:
    async with fleet(TOKENS, core=scripted, drain_grace=60.0) as f:
        nodes = (f.a.fleet.address, f.b.fleet.address)
        kept = homed_at(f.a.fleet.address, nodes)
        new = next(token for token in CANDIDATES if token != kept
                   and home.ranked(digest(token), nodes)[0] == f.a.fleet.address)
        call = request(5, "tools/call", name="slow")
        caller = await f.a.client()  # in flight at its home: the drain waits for it
        await caller.send("POST", json.dumps(call).encode(),
                          {**rpc_headers(call), "authorization": f"Bearer {kept}"})
        assert (await caller.head()).status == 200
        f.a.front.stop()
        for rid, node in enumerate((f.b, f.a, f.b), 1):
            answer = await (await node.client()).post(listed(rid), authorization=f"Bearer {new}")
            assert (answer.status, answer.json["result"]) == (200, {"tools": []})
        again = await (await f.b.client()).post(listed(4), authorization=f"Bearer {kept}")
        assert again.status == 200
        assert f.a.front.stage is NodeStage.DRAINING
        [held], [took] = f.a.cores, f.b.cores
        assert (tools_lists(held), tools_lists(took)) == (1, 3)
        # Offered the new tenant from b, a declined twice; it passed itself over once, and
        # served the tenant it holds.
        await until(lambda: len(f.events("http.request", "a")) == 4)
        assert [(e["status"], e["forwarded_by"], e["reason"]) for e in f.events(
            "http.request", "a") if e["status"] == 503] == [
            (503, "b", "the node is draining: no new session")] * 2
        assert [e.get("forwarded_to") for e in f.events("http.request", "a")
                if "forwarded_by" not in e] == [f.b.fleet.address]
        assert [e["holder"] for e in f.events("fleet.home_declined")] == [f.a.fleet.address] * 2
        assert {e["node"] for e in f.events("fleet.home_declined")} == {"b"}
        assert f.events("fleet.node_unreachable") == []


@asynccontextmanager
async def cutting() -> AsyncIterator[str]:
    """A node that takes a request and closes its connection without an answer."""

    async def cut(stream: trio.SocketStream) -> None:
        await stream.receive_some()
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(partial(trio.serve_tcp, cut, 0, host="127.0.0.1"))
        yield f"http://127.0.0.1:{listener.socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


async def test_a_request_lost_at_its_home_after_it_was_sent_is_an_error_sent_nowhere_else(
        ) -> None:
    async with cutting() as lost, fleet(TOKENS, absent=lost, core=scripted) as f:
        nodes = (f.a.fleet.address, f.b.fleet.address, lost)
        token = homed_at(lost, nodes)
        then = home.ranked(digest(token), nodes)[1]
        nearer = f.a if then == f.a.fleet.address else f.b
        answer = await (await nearer.client()).post(listed(1), authorization=f"Bearer {token}")
        assert answer.status == 502
        assert answer.json["id"] == 1
        assert "the request may have run there" in answer.json["error"]["message"]
        assert nearer.cores == []  # not served here: it may have run at its home
        # Lost: the next request passes it over at once, and is served here.
        again = await (await nearer.client()).post(listed(2), authorization=f"Bearer {token}")
        assert again.status == 200
        assert tools_lists(nearer.cores[0]) == 1


async def test_with_no_affinity_each_request_is_served_where_it_lands() -> None:
    async with fleet(core=scripted, affinity="none") as f:
        for rid, node in enumerate((f.a, f.b), 1):
            assert (await (await node.client()).post(listed(rid))).status == 200
        assert tools_lists(f.a.shared) == tools_lists(f.b.shared) == 1
        await until(lambda: f.events("http.request", "a") and f.events("http.request", "b"))
        assert not [e for e in f.logs if e.get("forwarded_to") or e.get("forwarded_by")]


def test_the_affinity_is_tenant_unless_the_file_or_the_flag_says_none(tmp_path: Any) -> None:
    from bridge.cli import _settings
    from bridge.config import load_settings

    assert load_settings(None, {"command": ("srv",)}).daemon.fleet_affinity == "tenant"
    config = tmp_path / "c.toml"
    config.write_text('fleet_affinity = "none"\n')
    assert load_settings(str(config), {"command": ("srv",)}).daemon.fleet_affinity == "none"
    config.write_text('fleet_affinity = "tenant"\n')
    settings, _ = _settings(["--config", str(config), "--fleet-affinity", "none", "--", "srv"],
                            serve=True)
    assert settings.daemon.fleet_affinity == "none"
