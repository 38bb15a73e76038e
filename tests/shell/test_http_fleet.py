"""Two fronts of one fleet, in process: real HTTP/1.1 over loopback between the client and
each front and between the fronts (httpx2), scripted legacy cores, fake server children. The
real clock: the fronts' own requests to each other go over real sockets.

What is checked: a legacy session's id names the node that holds it; any other node forwards
a request for it there (POST, its stream, a question's answer, DELETE) and streams the
answer back, with the client's credential; a forged id or pass is refused and forwarded
nowhere; a holder that cannot be reached makes the session ended (404), said once; a client
that closes a forwarded request closes it at the holder; a modern client's retry of a call
parked at one node, landing at the other, is resumed where it was parked (its credential's
tenant there), or answered as a call that ended when that node cannot be reached; and a
node's settings refuse to start a fleet they cannot run, naming the setting."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
import structlog
import trio
from structlog.testing import capture_logs

import tests.shell.test_http_front as modern
from bridge.core.config import CoreConfig
from bridge.core.events import Action, Event, Send
from bridge.core.modern_server_legacy_client import request_state
from bridge.core.modern_server_legacy_client.placement import node_named, node_of, process_of
from bridge.errors import ConfigError
from bridge.fleet import ids, passes, states
from bridge.fleet.home import Affinity
from bridge.fleet.keys import derive
from bridge.fleet.states import Elsewhere
from bridge.shell import logs
from bridge.shell.http.address import Address
from bridge.shell.http.auth import Tokens
from bridge.shell.http.fleet import KEY_ENV, Fleet, fleet_of, read_key
from bridge.shell.http.front import Access, Front
from bridge.shell.http.main import _fleet_fields, core_settings
from bridge.shell.services.listeners import bind_tcp
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from bridge.shell.settings import DaemonConfig
from bridge.streamable.drain import NodeStage
from tests.shell.fakes import WAIT, FakeChild, Spawner
from tests.shell.test_http_front import Client, ScriptedCore, client_message
from tests.shell.test_http_legacy import (
    LegacyCore,
    event_of,
    headers,
    initialized,
    last,
    post,
    rpc,
)

SECRET = b"fleet-secret-of-this-test-0123456789"
KEYS = derive(SECRET)


@dataclass
class Node:
    front: Front
    fleet: Fleet
    cores: list[Any]
    """Each legacy session's and tenant's core, as made."""
    shared: Any
    """The front's own core: the tenant of every modern client when no tokens are asked."""

    async def client(self) -> Client:
        return Client(await trio.open_tcp_stream("127.0.0.1", self.front.port))


@dataclass
class Fleet2:
    a: Node
    b: Node
    logs: list[Any]

    def events(self, name: str, node: str | None = None) -> list[Any]:
        return [e for e in self.logs if e["event"] == name
                and (node is None or e.get("node") == node)]


@asynccontextmanager
async def fleet(tokens: Tokens | None = None, absent: str | None = None,
                core: Callable[[str], Any] | None = None,
                drain_grace: float = 0.0,
                child: Callable[[trio.Nursery], Any] | None = None,
                affinity: Affinity = "tenant") -> AsyncIterator[Fleet2]:
    """Nodes "a" and "b" (and, listed, `absent`: an address where nothing listens), each
    of `fleet_affinity` `affinity` (a test of a modern client's requests spread over the
    nodes says "none"). Given
    `core`, every core of a node (its own, each session's and tenant's) is `core(its
    address)`; else the front's own is scripted and each legacy session's a LegacyCore.
    Each server a node starts is `child(nursery)` (default: a FakeChild that echoes)."""
    listeners = [bind_tcp("127.0.0.1", 0), bind_tcp("127.0.0.1", 0)]
    addresses = [f"http://127.0.0.1:{sock.getsockname()[1]}" for sock in listeners]
    nodes_listed = (*addresses, *([absent] if absent else []))
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured:
        async with AsyncExitStack() as stack, trio.open_nursery() as nursery:
            made: list[Node] = []
            for name, address, listener in zip("ab", addresses, listeners, strict=True):
                stack.enter_context(listener)
                cores: list[Any] = []

                def make_core(route: str = "", legacy: bool = False, cores: list[Any] = cores,
                              address: str = address) -> Any:
                    cores.append(LegacyCore() if core is None else core(address))
                    return cores[-1]

                spawner = Spawner(child or (lambda n: FakeChild(n, serving=True)))
                spawner.nursery = nursery
                member = Fleet(name, address, KEYS, nodes_listed, affinity=affinity)
                shared = ScriptedCore() if core is None else core(address)
                front = Front(shared, Servers(SessionSettings(), spawn=spawner),
                              Address("127.0.0.1", 0, "/mcp"), logs.logger().bind(node=name),
                              settings=SessionSettings(), make_core=make_core, fleet=member,
                              access=Access(allowed_hosts=("127.0.0.1",), tokens=tokens),
                              drain_grace=drain_grace)
                nursery.start_soon(front.run, listener)
                with trio.fail_after(WAIT):
                    await front.listening.wait()
                made.append(Node(front, member, cores, shared))
            yield Fleet2(made[0], made[1], captured)
            for node in made:
                node.front.stop()
            nursery.cancel_scope.cancel()


async def until(done: Any) -> None:
    """Wait for `done()`: a request's log line is written once its answer is out."""
    with trio.fail_after(WAIT):
        while not done():
            await trio.sleep(0.01)


@pytest.fixture(autouse=True)
def _host() -> None:
    modern.HOST = "127.0.0.1"


async def test_a_session_opened_at_one_node_is_served_at_the_other() -> None:
    async with fleet() as f:
        session = await initialized(await f.a.client())
        assert ids.holder(KEYS.ids, session) == f.a.fleet.address
        at_b = await f.b.client()
        listed = await post(at_b, rpc(1, "tools/list"), session)
        assert (listed.status, last(listed)) == (200, {"jsonrpc": "2.0", "id": 1,
                                                      "result": {"tools": []}})
        assert listed.headers["mcp-session-id"] == session
        assert len(f.a.cores) == 1 and f.b.cores == []  # b opened no session of its own
        assert [m["method"] for m in f.a.cores[0].received] == ["initialize", "tools/list"]
        await until(lambda: len(f.events("http.request", "a")) == 2)
        await until(lambda: f.events("http.request", "b"))
        forwarded = [e for e in f.events("http.request", "b") if e.get("rpc_method")]
        assert [(e["status"], e["forwarded_to"]) for e in forwarded] == [
            (200, f.a.fleet.address)]
        held = [e for e in f.events("http.request", "a") if e.get("forwarded_by")]
        assert [(e["rpc_method"], e["forwarded_by"]) for e in held] == [("tools/list", "b")]


async def test_a_draining_node_still_serves_its_sessions_forwarded_to_it() -> None:
    async with fleet(drain_grace=60.0) as f:
        session = await initialized(await f.a.client())
        caller = await f.a.client()
        await caller.send("POST", json.dumps(rpc(5, "tools/call", name="slow")).encode(),
                          headers(session))
        assert (await caller.head()).status == 200  # its answer waits: in flight
        f.a.front.stop()
        assert f.a.front.stage is NodeStage.DRAINING
        listed = await post(await f.b.client(), rpc(1, "tools/list"), session)
        assert (listed.status, last(listed)["result"]) == (200, {"tools": []})
        refused = await post(await f.a.client(), rpc(0, "initialize"))
        assert (refused.status, refused.headers["retry-after"]) == (503, "1")
        assert initialized_elsewhere(await initialized(await f.b.client()), f.b)
        assert f.a.front.stage is NodeStage.DRAINING


def initialized_elsewhere(session: str, node: Node) -> bool:
    return ids.holder(KEYS.ids, session) == node.fleet.address


async def test_a_question_asked_through_one_node_is_answered_through_the_other() -> None:
    async with fleet() as f:
        session = await initialized(await f.a.client())
        caller = await f.b.client()
        await caller.send("POST", json.dumps(rpc(7, "tools/call", name="ask")).encode(),
                          headers(session))
        stream = await caller.head()
        assert stream.headers["content-type"] == "text/event-stream"
        assert (await event_of(caller, stream))[1] is None  # the priming event
        _, question = await event_of(caller, stream)
        assert question["method"] == "elicitation/create"
        reply = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}}
        assert (await post(await f.b.client(), reply, session)).status == 202
        _, answered = await event_of(caller, stream)
        assert answered["result"] == {"answered": {"action": "accept"}}


async def test_delete_through_another_node_ends_the_session_at_its_node() -> None:
    async with fleet() as f:
        session = await initialized(await f.a.client())
        at_b = await f.b.client()
        await at_b.send("DELETE", b"", {"mcp-session-id": session})
        assert (await at_b.whole()).status == 204
        await until(lambda: f.a.cores[0].stopped)
        gone = await post(await f.b.client(), rpc(2, "tools/list"), session)
        assert gone.status == 404


async def test_a_forged_or_foreign_id_is_forwarded_nowhere() -> None:
    async with fleet() as f:
        await initialized(await f.a.client())
        foreign = ids.mint(derive(b"another-fleet-key-0123456789").ids, f.a.fleet.address,
                           b"r" * 32)
        pieces = (await initialized(await f.a.client())).split(".")
        pieces[1] = pieces[1][:-2] + ("AA" if pieces[1][-2:] != "AA" else "BB")
        for session in (foreign, ".".join(pieces), "x" * 43):
            assert (await post(await f.b.client(), rpc(3, "tools/list"), session)).status \
                == 404
        await until(lambda: len(f.events("http.request", "b")) == 3)
        assert [e for e in f.logs if e.get("forwarded_to")] == []
        assert all(m["method"] == "initialize" for core in f.a.cores for m in core.received)


async def test_a_pass_this_fleet_did_not_sign_is_refused_with_403() -> None:
    async with fleet() as f:
        session = await initialized(await f.a.client())
        body = json.dumps(rpc(4, "tools/list")).encode()
        bound = passes.Bound("POST", "/mcp", session, body)
        forged = passes.issue(derive(b"another-fleet-key-0123456789").passes, "b", 0, None,
                              bound)
        client = await f.a.client()
        await client.send("POST", body, {**headers(session), passes.HEADER: forged})
        refused = await client.whole()
        assert refused.status == 403
        assert "fleet_key_file" in refused.json["error"]["message"]
        # A good pass for another request (here: another body) is refused just the same.
        good = f.b.fleet.issue(None, passes.Bound("POST", "/mcp", session, b"{}"))
        await client.send("POST", body, {**headers(session), passes.HEADER: good})
        assert (await client.whole()).status == 403
        assert [m["method"] for m in f.a.cores[0].received] == ["initialize"]


async def test_a_forwarded_request_is_never_forwarded_again() -> None:
    """A pass says the fleet sent it here: a session this node does not hold is unknown,
    even one another node holds (no loop between two nodes that disagree)."""
    async with fleet() as f:
        session = await initialized(await f.a.client())
        body = json.dumps(rpc(5, "tools/list")).encode()
        sent = f.a.fleet.issue(None, passes.Bound("POST", "/mcp", session, body))
        client = await f.b.client()
        await client.send("POST", body, {**headers(session), passes.HEADER: sent})
        assert (await client.whole()).status == 404
        await until(lambda: f.events("http.request", "b"))
        assert [(e["forwarded_by"], e.get("forwarded_to")) for e in
                f.events("http.request", "b")] == [("a", None)]
        assert [m["method"] for m in f.a.cores[0].received] == ["initialize"]


async def test_a_holder_that_cannot_be_reached_ends_its_sessions_said_once() -> None:
    absent = "http://127.0.0.1:9"  # discard: nothing listens there
    async with fleet(absent=absent) as f:
        session = ids.mint(KEYS.ids, absent, b"s" * 32)
        for rid in (1, 2):
            gone = await post(await f.b.client(), rpc(rid, "tools/list"), session)
            assert gone.status == 404
            assert "initialize" in gone.json["error"]["message"]
        await until(lambda: len(f.events("http.request", "b")) == 2)
        assert [e["reason"] for e in f.events("http.request", "b")] == [
            f"its node {absent} cannot be reached"] * 2
        assert len(f.events("fleet.node_unreachable", "b")) == 1
        # An address the fleet does not list is not even tried.
        stranger = ids.mint(KEYS.ids, "http://127.0.0.1:10", b"s" * 32)
        assert (await post(await f.b.client(), rpc(3, "tools/list"), stranger)).status == 404
        assert len(f.events("fleet.not_member", "b")) == 1


async def answer_404(stream: trio.SocketStream) -> None:
    """A node's stand-in: reads one request, answers 404, closes."""
    async with stream:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        while length is not None and len(body) < int(length.group(1)):
            body += await stream.receive_some(65536)
        await stream.send_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n"
                              b"connection: close\r\n\r\n")


async def test_a_lost_node_is_said_once_per_loss_and_once_when_it_is_back() -> None:
    with bind_tcp("127.0.0.1", 0) as probe:
        port = probe.getsockname()[1]
    lost = f"http://127.0.0.1:{port}"  # nothing listens there, for now
    async with fleet(absent=lost) as f:
        session = ids.mint(KEYS.ids, lost, b"s" * 32)

        async def asked(times: int) -> None:
            for rid in range(times):
                await post(await f.b.client(), rpc(rid, "tools/list"), session)

        await asked(3)
        assert len(f.events("fleet.node_unreachable", "b")) == 1
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(  # the node is back
                trio.serve_tcp, answer_404, port, host="127.0.0.1"))
            await asked(3)
            for listener in listeners:
                await listener.aclose()
            nursery.cancel_scope.cancel()
        assert len(f.events("fleet.node_reachable", "b")) == 1
        await asked(3)  # lost again: said again, once
        assert [e["event"] for e in f.logs if e["event"].startswith("fleet.node_")] == [
            "fleet.node_unreachable", "fleet.node_reachable", "fleet.node_unreachable"]


async def test_closing_a_forwarded_request_closes_it_at_its_node() -> None:
    async with fleet() as f:
        session = await initialized(await f.a.client())
        caller = await f.b.client()
        await caller.send("POST", json.dumps(rpc(9, "tools/call", name="slow")).encode(),
                          headers(session))
        stream = await caller.head()
        await event_of(caller, stream)  # priming
        assert (await event_of(caller, stream))[1]["method"] == "notifications/progress"
        await caller.stream.aclose()
        await until(lambda: [e for e in f.events("http.request", "a")
                             if e.get("rpc_method") == "tools/call"])
        held = [e for e in f.events("http.request", "a") if e.get("rpc_method") == "tools/call"]
        assert held[0]["reason"] == "the client closed the connection before the answer"


async def test_a_session_is_its_token_s_on_every_node() -> None:
    tokens = Tokens((b"token-one", b"token-two"), KEYS.credentials)
    async with fleet(tokens) as f:
        one = {"authorization": "Bearer token-one"}
        opener = await f.a.client()
        init = rpc(0, "initialize", protocolVersion="2025-11-25", capabilities={},
                   clientInfo={"name": "t", "version": "1"})
        await opener.send("POST", json.dumps(init).encode(), {**headers(), **one})
        session = (await opener.whole()).headers["mcp-session-id"]
        assert (await post(await f.b.client(), rpc(1, "tools/list"), session, **one)).status \
            == 200
        other = await post(await f.b.client(), rpc(2, "tools/list"), session,
                           authorization="Bearer token-two")
        assert other.status == 404
        none = await post(await f.b.client(), rpc(3, "tools/list"), session)
        assert none.status == 401  # checked where it landed: never forwarded
        await until(lambda: len(f.events("http.request", "b")) == 3)
        assert len([e for e in f.logs if e.get("forwarded_to")]) == 2


# --- a modern client's retry of a parked call ---------------------------------------------------


class ParkingCore(ScriptedCore):
    """A tenant's core as mode B's is for a call that is asked for input: `tools/call` of
    "ask" parks, answered with a requestState sealed under this core's secret and naming
    this node (its route, as the front makes it: `Fleet.state_route`); its retry is
    answered with the name it brings, if the state is this core's."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.secret = os.urandom(32)
        self.route = Fleet("x", address, KEYS).state_route("")
        self.sent: list[Send] = []
        """Its input_required answers."""

    def handle(self, event: Event, now: float) -> list[Action]:
        message = client_message(event)
        if message is None or message.get("method") != "tools/call":
            return super().handle(event, now)
        self.received.append(message)
        params, rid = message["params"], message["id"]
        state = params.get("requestState")
        if state is None:
            state = request_state.seal(self.secret, key="c1", nonce="n1", digest="d",
                                       expires=now + 60, route=self.route)
            result = {"resultType": "input_required", "requestState": state,
                      "inputRequests": {"q": {"method": "elicitation/create", "params": {}}}}
            self.sent.append(Send("client", {"jsonrpc": "2.0", "id": rid, "result": result},
                                  request=rid))
            return [self.sent[-1]]
        elif request_state.unseal(self.secret, state) is None:
            return [Send("client", {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": "Invalid requestState", "data": {
                    "reason": "tampered"}}}, request=rid)]
        else:
            name = params["inputResponses"]["q"]["content"]["name"]
            result = {"content": [{"type": "text", "text": f"hello {name}"}]}
        return [Send("client", {"jsonrpc": "2.0", "id": rid, "result": result}, request=rid)]


def sent_by(core: ParkingCore) -> list[Any]:
    """The answers the core gave a first call: as it sent them, before the front's envelope."""
    return [action.message for action in core.sent]


def calls(core: ParkingCore) -> list[str]:
    """What the core was sent, in order: a first call, or a retry."""
    return ["retry" if "requestState" in m["params"] else "call" for m in core.received]


def ask(rid: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "ask", "_meta": modern.META, **params}}


def retry_of(parked: Any, rid: int, name: str = "octocat") -> dict[str, Any]:
    state = parked.json["result"]["requestState"]
    return ask(rid, requestState=state,
               inputResponses={"q": {"action": "accept", "content": {"name": name}}})


async def test_a_retry_landing_at_another_node_is_resumed_at_the_node_that_parked_it() -> None:
    async with fleet(affinity="none", core=ParkingCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        assert parked.json["result"]["resultType"] == "input_required"
        envelope = parked.json["result"]["requestState"]
        assert states.place(KEYS.states, envelope, None, f.b.fleet.address, f.b.fleet.life) \
            == Elsewhere(f.a.fleet.address)
        [inner] = [m["result"]["requestState"] for m in sent_by(f.a.shared)]
        assert node_named(ask(2, requestState=inner)) == f.a.fleet.address  # mode B's too
        resumed = await (await f.b.client()).post(retry_of(parked, 2))
        assert (resumed.status, resumed.json) == (200, {"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "hello octocat"}]}})
        assert calls(f.a.shared) == ["call", "retry"]
        assert f.b.shared.received == []  # b's core never saw it: it could not open it
        await until(lambda: len(f.events("http.request", "a")) == 2
                    and f.events("http.request", "b"))
        [at_b] = f.events("http.request", "b")
        assert (at_b["rpc_method"], at_b["forwarded_to"], at_b["status"]) == (
            "tools/call", f.a.fleet.address, 200)
        assert [e.get("forwarded_by") for e in f.events("http.request", "a")] == [None, "b"]


async def test_a_forwarded_retry_reaches_its_credential_s_tenant_at_the_holder() -> None:
    tokens = Tokens((b"token-one", b"token-two"), KEYS.credentials)
    async with fleet(tokens, affinity="none", core=ParkingCore) as f:
        one = {"authorization": "Bearer token-one"}
        parked = await (await f.b.client()).post(ask(1), **one)
        resumed = await (await f.a.client()).post(retry_of(parked, 2), **one)
        assert resumed.json["result"]["content"][0]["text"] == "hello octocat"
        [tenant] = f.b.cores  # the holder's tenant of token-one took both
        assert calls(tenant) == ["call", "retry"]
        assert f.a.cores == []  # no tenant started where the retry landed
        other = await (await f.a.client()).post(retry_of(parked, 3, "mallory"),
                                                authorization="Bearer token-two")
        assert other.json["error"]["data"] == {"reason": "tampered"}  # token-two's own tenant
        assert calls(tenant) == ["call", "retry"]
        assert (await (await f.a.client()).post(retry_of(parked, 4))).status == 401


async def test_a_retry_whose_node_cannot_be_reached_is_answered_as_a_call_that_ended() -> None:
    absent = "http://127.0.0.1:9"  # discard: nothing listens there
    async with fleet(absent=absent, affinity="none", core=ParkingCore) as f:
        lost = ask(1, requestState=request_state.seal(
            b"k" * 32, key="c1", nonce="n1", digest="d", expires=9e9,
            route=Fleet("x", absent, KEYS).state_route("2")),
                   inputResponses={"q": {"action": "accept", "content": {"name": "x"}}})
        for _ in range(2):
            ended = await (await f.b.client()).post(lost)
            assert (ended.status, ended.json["error"]["code"], ended.json["error"]["data"]) \
                == (200, -32602, {"reason": "ended"})
            assert "has ended" in ended.json["error"]["message"]
        await until(lambda: len(f.events("http.request", "b")) == 2)
        assert [e["reason"] for e in f.events("http.request", "b")] == [
            f"its node {absent} cannot be reached"] * 2
        assert len(f.events("fleet.node_unreachable", "b")) == 1
        stranger = dict(lost, params={**lost["params"], "requestState": request_state.seal(
            b"k" * 32, key="c1", nonce="n1", digest="d", expires=9e9,
            route=Fleet("x", "http://127.0.0.1:10", KEYS).state_route(""))})
        refused = await (await f.b.client()).post(stranger)
        assert refused.json["error"]["data"] == {"reason": "ended"}
        assert len(f.events("fleet.not_member", "b")) == 1
        assert f.b.shared.received == []


async def test_a_forwarded_retry_is_never_forwarded_again() -> None:
    async with fleet(affinity="none", core=ParkingCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        [inner] = [m["result"]["requestState"] for m in sent_by(f.a.shared)]
        for state, answer in ((parked.json["result"]["requestState"], "ended"),
                              (inner, "tampered")):  # an envelope; mode B's route alone
            retry = ask(2, requestState=state, inputResponses={})
            body = json.dumps(retry).encode()
            sent = f.a.fleet.issue(None, passes.Bound("POST", "/mcp", "", body))
            client = await f.b.client()
            await client.send("POST", body, {**modern.rpc_headers(retry), passes.HEADER: sent})
            refused = await client.whole()
            assert refused.json["error"]["data"] == {"reason": answer}
        assert calls(f.b.shared) == ["retry"]  # its core refused mode B's state as not its own
        assert calls(f.a.shared) == ["call"]


# --- the settings -------------------------------------------------------------------------------

LISTED = ("http://127.0.0.1:8001", "http://127.0.0.1:8002")


def test_a_node_finds_its_own_address_in_the_list_by_its_port() -> None:
    made = fleet_of(DaemonConfig(fleet_nodes=LISTED, node="n1"), 8002, {KEY_ENV: "k" * 20})
    assert made is not None
    assert (made.node, made.address, made.nodes) == ("n1", "http://127.0.0.1:8002", LISTED)
    assert made.affinity == "tenant"
    spread = fleet_of(DaemonConfig(fleet_nodes=LISTED, fleet_affinity="none"), 8002,
                      {KEY_ENV: "k" * 20})
    assert spread is not None and spread.affinity == "none"
    assert fleet_of(DaemonConfig(), 8002, {}) is None


@pytest.mark.parametrize(("daemon", "environ", "says"), [
    (DaemonConfig(fleet_nodes=LISTED), {}, "fleet_nodes is set but no fleet key"),
    (DaemonConfig(fleet_dns="fleet.local"), {}, "fleet_dns is set but no fleet key"),
    (DaemonConfig(), {KEY_ENV: "k" * 20}, "but no fleet: set fleet_nodes"),
    (DaemonConfig(fleet_nodes=LISTED, fleet_dns="fleet.local"), {KEY_ENV: "k" * 20},
     "both fleet_nodes and fleet_dns"),
    (DaemonConfig(fleet_nodes=LISTED), {KEY_ENV: "short"}, "MCP_ROSETTA_FLEET_KEY: the fleet "
                                                          "key is 5 bytes"),
    (DaemonConfig(fleet_nodes=("http://127.0.0.1:9001",)), {KEY_ENV: "k" * 20},
     "none of its entries is this node (port 8001"),
    (DaemonConfig(fleet_nodes=LISTED, node_url="http://10.9.9.9:8001"), {KEY_ENV: "k" * 20},
     "node_url http://10.9.9.9:8001 is not in fleet_nodes"),
    (DaemonConfig(fleet_nodes=LISTED, fleet_key_file="/nonexistent/key"), {},
     "fleet_key_file /nonexistent/key: cannot read it"),
])
def test_a_fleet_it_cannot_run_is_refused_naming_the_setting(
        daemon: DaemonConfig, environ: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        fleet_of(daemon, 8001, environ)


def test_the_key_is_read_from_its_file_first_and_never_shown(tmp_path: Any) -> None:
    key_file = tmp_path / "fleet.key"
    key_file.write_bytes(b"from-the-file-0123456789\n")
    assert read_key(str(key_file), {KEY_ENV: "from-the-environment-0123"}) == \
        b"from-the-file-0123456789\n"
    assert read_key(None, {KEY_ENV: "from-the-environment-0123"}) == \
        b"from-the-environment-0123"
    made = fleet_of(DaemonConfig(fleet_nodes=LISTED, fleet_key_file=str(key_file)), 8001, {})
    assert made is not None
    shown = repr(made) + repr(_fleet_fields(made))
    assert "from-the-file" not in shown and repr(KEYS.ids) not in shown
    assert _fleet_fields(made) == {"node": made.node, "node_url": "http://127.0.0.1:8001",
                                   "fleet": 2, "fleet_affinity": "tenant"}


async def test_with_fleet_dns_a_member_is_an_address_the_name_resolves_to() -> None:
    member = Fleet("a", "http://127.0.0.1:8001", KEYS, dns="localhost")
    assert await member.is_member("http://127.0.0.1:8002")
    assert not await member.is_member("http://10.9.9.9:8001")
    made = fleet_of(DaemonConfig(fleet_dns="localhost", node_url="http://127.0.0.1:8001"),
                    8001, {KEY_ENV: "k" * 20})
    assert made is not None and (made.address, made.dns) == ("http://127.0.0.1:8001",
                                                             "localhost")


@pytest.mark.parametrize(("key", "value", "says"), [
    ("fleet_nodes", ["10.0.0.2:8808"], 'fleet_nodes: expected a node\'s address as '
                                       'http://HOST:PORT, e.g. "http://10.0.0.2:8808"'),
    ("fleet_nodes", "http://10.0.0.2:8808", "fleet_nodes: expected an array"),
    ("node_url", "http://10.0.0.2:8808/mcp", "node_url: expected a node's address"),
    ("fleet_dns", "not a name", "fleet_dns: expected a host name"),
    ("node", "node a", "node: expected a name of visible ASCII"),
    ("fleet_affinity", "session", "fleet_affinity: expected one of tenant, none"),
])
def test_a_fleet_setting_that_is_no_such_thing_is_refused_with_an_example(
        key: str, value: object, says: str) -> None:
    from bridge.config import validate

    with pytest.raises(ConfigError, match=re.escape(says)):
        validate({key: value}, "config x.toml", ConfigError)
    assert validate({"fleet_nodes": ["HTTP://10.0.0.2:8808/"]}, "x", ConfigError) == {
        "fleet_nodes": ("http://10.0.0.2:8808",)}


def test_every_tenant_core_of_a_fleet_node_seals_its_node_into_its_route() -> None:
    core = CoreConfig()
    member = Fleet("a", "http://10.0.0.2:8808", KEYS)
    assert core_settings(core, None, "") is core  # outside a fleet: no route, as on stdio
    assert core_settings(core, None, "2").state_route == "2"
    first, third = core_settings(core, member, ""), core_settings(core, member, "3")
    assert (node_of(first.state_route), process_of(first.state_route)) == (member.address, "")
    assert (node_of(third.state_route), process_of(third.state_route)) == (member.address, "3")
