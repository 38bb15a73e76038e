"""The Streamable HTTP front in process: real HTTP/1.1 over a loopback socket (an h11
client), a scripted core behind it, fake server children. Time is trio's virtual clock.

What is checked is the front's own part (streamable-http.mdx of 2026-07-28): the answer's
shape (JSON or an event stream), ids renamed per POST and restored, the headers checked
against the body, the statuses, a closed connection cancelling its request, keep-alive
comments, and the limits (Host, Origin, body, header, idle)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import structlog
import trio
import trio.testing
from structlog.testing import capture_logs

from bridge.core.codec import decode
from bridge.core.events import (
    Action,
    Event,
    MessageDecoded,
    MessageReceived,
    Send,
    ShutdownRequested,
    Stop,
    TimerFired,
)
from bridge.shell import logs
from bridge.shell.http.address import Address
from bridge.shell.http.front import Front
from bridge.shell.services.listeners import bind_tcp
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from tests.shell.fakes import WAIT, FakeChild, Spawner

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}


TOOLS: list[Any] = []


class ScriptedCore:
    """A core that answers by method: `tools/list` at once, `unknown/x` with -32601,
    `tools/call` of "slow" with a progress line and then nothing until the test releases
    it (`later`, on a TimerFired), `subscriptions/listen` with its acknowledgement."""

    handler = object()  # not mode B's: a pool of one
    legacy_server = False

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.later: list[Action] = []
        self.changed = trio.Event()

    def next_deadline(self) -> float | None:
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ShutdownRequested):  # what it owes answered, as the core does
            owed = [Send("client", {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32603, "message": "shutting down"}}, request=rid)
                for rid in self.ids_of("tools/call")]
            return [*owed, Stop(0)]
        if isinstance(event, TimerFired):
            actions, self.later = self.later, []
            return actions
        message = client_message(event)
        if message is None:
            return []
        self.received.append(message)
        self.changed.set()
        self.changed = trio.Event()
        method, rid = message.get("method"), message.get("id")
        if method == "tools/list":
            return [Send("client", {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}},
                         request=rid)]
        if method == "unknown/x":
            return [Send("client", {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32601, "message": "Method not found"}}, request=rid)]
        if method == "tools/call":
            token = message["params"]["_meta"].get("progressToken", "none")
            return [Send("client", {"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": token, "progress": 1}},
                         request=rid),
                    Send("client", {"jsonrpc": "2.0", "method": "notifications/tools/"
                                    "list_changed"})]  # names no request: dropped
        if method == "subscriptions/listen":
            return [Send("client", {"jsonrpc": "2.0", "method":
                                    "notifications/subscriptions/acknowledged",
                                    "params": {}}, request=rid)]
        return []

    def ids_of(self, method: str) -> list[Any]:
        return [m.get("id") for m in self.received if m.get("method") == method]

    async def wait_for(self, method: str, count: int = 1) -> None:
        with trio.fail_after(WAIT):
            while len([m for m in self.received if m.get("method") == method]) < count:
                await self.changed.wait()


def client_message(event: Event) -> Any:
    """The client's message an event brings the core, decoded (a modern POST's comes decoded
    by the front; a legacy one's as its line), or None."""
    if isinstance(event, MessageDecoded) and event.side == "client":
        return event.message
    if isinstance(event, MessageReceived) and event.side == "client":
        return decode(event.message)
    return None


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: list[Any] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    """One keep-alive HTTP/1.1 connection, h11's client side."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)

    async def send(self, method: str, body: bytes = b"", headers: dict[str, str] | None = None,
                   target: str = "/mcp") -> None:
        if self.h11.our_state is h11.DONE:
            self.h11.start_next_cycle()
        heads = {"host": HOST, "content-length": str(len(body)), **(headers or {})}
        data = self.h11.send(h11.Request(method=method, target=target,
                                         headers=list(heads.items())))
        data += self.h11.send(h11.Data(data=body)) if body else b""
        data += self.h11.send(h11.EndOfMessage())
        await self.stream.send_all(data)

    async def _event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
                continue
            return event

    async def head(self) -> Answer:
        with trio.fail_after(WAIT):
            event = await self._event()
        assert isinstance(event, h11.Response), event
        return Answer(event.status_code, {k.decode(): v.decode() for k, v in event.headers})

    async def sse_event(self, answer: Answer) -> Any:
        """The next SSE event of `answer` (a comment line is returned as ":")."""
        buffer = answer.body
        with trio.fail_after(WAIT):
            while b"\n\n" not in buffer:
                event = await self._event()
                if isinstance(event, h11.Data):
                    buffer += bytes(event.data)
                else:
                    raise AssertionError(f"stream ended: {event!r}")
        block, answer.body = buffer.split(b"\n\n", 1)
        if block.startswith(b":"):
            return ":"
        data = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
        return json.loads(b"".join(data))

    async def rest(self, answer: Answer) -> Answer:
        with trio.fail_after(WAIT):
            while True:
                event = await self._event()
                if isinstance(event, h11.Data):
                    answer.body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    return answer

    async def whole(self) -> Answer:
        return await self.rest(await self.head())

    async def post(self, message: dict[str, Any], **headers: str) -> Answer:
        await self.send("POST", json.dumps(message).encode(), {**rpc_headers(message),
                                                               **headers})
        return await self.whole()


HOST = "127.0.0.1:0"  # replaced by the bound port in `running`


def rpc_headers(message: dict[str, Any]) -> dict[str, str]:
    heads = {"content-type": "application/json",
             "accept": "application/json, text/event-stream",
             "mcp-protocol-version": MODERN, "mcp-method": str(message.get("method"))}
    params = message.get("params") or {}
    if "name" in params:
        heads["mcp-name"] = params["name"]
    return heads


def request(rid: Any, method: str, token: Any = None, **params: Any) -> dict[str, Any]:
    meta = META if token is None else {**META, "progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}


class Cores(list[ScriptedCore]):
    """Every tenant's core, as the front makes them (its `make_core`)."""

    def __call__(self, route: str = "", legacy: bool = False) -> ScriptedCore:
        self.append(ScriptedCore())
        return self[-1]

    async def made(self, count: int) -> None:
        """Wait until the front has made `count` cores (a request written is not yet read)."""
        with trio.fail_after(WAIT):
            while len(self) < count:
                await trio.sleep(0.001)


@dataclass
class Running:
    front: Front
    core: ScriptedCore
    port: int
    logs: list[dict[str, Any]]

    async def client(self) -> Client:
        return Client(await trio.open_tcp_stream("127.0.0.1", self.port))

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.logs if e["event"] == name]


@asynccontextmanager
async def running(**options: Any) -> AsyncIterator[Running]:
    global HOST
    core = ScriptedCore()
    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    listener = bind_tcp("127.0.0.1", 0)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured, listener:
        settings = SessionSettings(max_message_bytes=options.pop("body", 1 << 20))
        front = Front(core, Servers(settings, spawn=spawner), Address("127.0.0.1", 0, "/mcp"),
                      logs.logger(), settings=settings, **options)
        async with trio.open_nursery() as nursery:
            spawner.nursery = nursery
            nursery.start_soon(front.run, listener)
            with trio.fail_after(WAIT):
                await front.listening.wait()
            HOST = f"127.0.0.1:{front.port}"
            yield Running(front, core, front.port, captured)
            front.stop()
            nursery.cancel_scope.cancel()


async def test_an_answer_alone_is_one_json_answer_under_the_client_s_own_id(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        answer = await client.post(request(7, "tools/list"))
        assert answer.status == 200
        assert answer.headers["content-type"] == "application/json"
        assert answer.json == {"jsonrpc": "2.0", "id": 7, "result": {"tools": TOOLS}}
        assert r.core.ids_of("tools/list") != [7]  # the core saw a name of the front's
        again = await client.post(request("x", "tools/list"))  # the same connection
        assert again.json["id"] == "x"
        await trio.testing.wait_all_tasks_blocked()  # the log line follows the answer
        logged = r.events("http.request")
        assert [(e["method"], e["status"], e["rpc_method"]) for e in logged] == [
            ("POST", 200, "tools/list")] * 2
        assert all("duration_ms" in e for e in logged)


async def test_two_clients_with_the_same_id_at_once_each_get_their_own_answer(
        autojump_clock: Any) -> None:
    async with running() as r:
        one, two = await r.client(), await r.client()
        call = request(1, "tools/call", token="t", name="slow")
        await one.send("POST", json.dumps(call).encode(), rpc_headers(call))
        await two.send("POST", json.dumps(call).encode(), rpc_headers(call))
        await r.core.wait_for("tools/call", 2)
        first, second = r.core.ids_of("tools/call")
        assert first != second
        tokens = [m["params"]["_meta"]["progressToken"] for m in r.core.received]
        assert len(set(tokens)) == 2 and "t" not in tokens  # renamed like the ids
        r.core.later = [Send("client", {"jsonrpc": "2.0", "id": wire, "result": {"n": n}},
                             request=wire) for n, wire in ((2, second), (1, first))]
        r.front.driver.post(TimerFired())
        for client, n in ((one, 1), (two, 2)):
            answer = await client.head()
            assert answer.headers["content-type"] == "text/event-stream"
            assert answer.headers["x-accel-buffering"] == "no"
            progress = await client.sse_event(answer)
            assert progress["method"] == "notifications/progress"
            assert progress["params"]["progressToken"] == "t"  # the client's own again
            assert await client.sse_event(answer) == {"jsonrpc": "2.0", "id": 1,
                                                      "result": {"n": n}}
        dropped = r.events("http.dropped")
        assert dropped and all(e["request"] is None for e in dropped)


async def test_a_closed_connection_cancels_its_request_at_the_core(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        await client.send("POST", json.dumps(request(3, "tools/call", name="slow")).encode(),
                          rpc_headers(request(3, "tools/call", name="slow")))
        await r.core.wait_for("tools/call")
        [wire] = r.core.ids_of("tools/call")
        await client.stream.aclose()
        await r.core.wait_for("notifications/cancelled")
        [cancel] = [m for m in r.core.received if m["method"] == "notifications/cancelled"]
        assert cancel["params"]["requestId"] == wire
        # What the core still says about it reaches nobody, and the front goes on.
        r.core.later = [Send("client", {"jsonrpc": "2.0", "id": wire, "result": {}},
                             request=wire)]
        r.front.driver.post(TimerFired())
        assert (await (await r.client()).post(request(4, "tools/list"))).status == 200
        await trio.testing.wait_all_tasks_blocked()
        assert next(e.get("cancelled") for e in r.events("http.request")) is True


async def test_a_listen_stream_stays_open_with_keep_alive_comments(
        autojump_clock: Any) -> None:
    async with running(keep_alive=5.0) as r:
        client = await r.client()
        message = request(9, "subscriptions/listen")
        await client.send("POST", json.dumps(message).encode(), rpc_headers(message))
        answer = await client.head()
        assert answer.headers["content-type"] == "text/event-stream"
        ack = await client.sse_event(answer)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert await client.sse_event(answer) == ":"  # 5 s of virtual quiet
        [wire] = r.core.ids_of("subscriptions/listen")
        r.core.later = [Send("client", {"jsonrpc": "2.0", "method":
                                        "notifications/tools/list_changed"}, request=wire)]
        r.front.driver.post(TimerFired())
        assert (await client.sse_event(answer))["method"] == "notifications/tools/list_changed"


async def test_the_headers_are_checked_against_the_body(autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        call = request(1, "tools/call", name="echo")
        cases = [
            ({"mcp-name": "other"}, 400, -32020),
            ({"mcp-method": "TOOLS/CALL"}, 400, -32020),
            ({"mcp-protocol-version": "2025-01-01"}, 400, -32020),
            ({"mcp-name": "=?base64?ZWNobw==?="}, None, None),  # "echo", encoded: passes
        ]
        for headers, status, code in cases:
            await client.send("POST", json.dumps(call).encode(),
                              {**rpc_headers(call), **headers})
            if status is None:
                await r.core.wait_for("tools/call")
                break
            answer = await client.whole()
            assert (answer.status, answer.json["error"]["code"], answer.json["id"]) == (
                status, code, 1), headers
        other = await r.client()
        bare = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        answer = await other.post(bare)
        assert (answer.status, answer.json["error"]["code"]) == (400, -32602)
        v999 = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
        odd = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": v999}}
        answer = await other.post(odd, **{"mcp-protocol-version": "v999.0.0"})
        assert (answer.status, answer.json["error"]["code"]) == (400, -32022)
        assert answer.json["error"]["data"] == {"supported": [MODERN], "requested": "v999.0.0"}


async def test_removed_and_unknown_methods_are_404_and_a_notification_202(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        for method in ("initialize", "ping", "logging/setLevel", "unknown/x"):
            answer = await client.post(request(5, method))
            assert (answer.status, answer.json["error"]["code"], answer.json["id"]) == (
                404, -32601, 5), method
        assert "initialize" not in [m["method"] for m in r.core.received]
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
        assert (await client.post(note)).status == 202


async def test_the_transport_s_refusals(autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        await client.send("GET", headers={"accept": "text/event-stream"})
        answer = await client.whole()
        assert (answer.status, answer.headers.get("allow")) == (405, "POST")
        await client.send("DELETE")
        assert (await client.whole()).status == 405
        await client.send("POST", b"{}", {"content-type": "application/json"}, target="/x")
        assert (await client.whole()).status == 404
        await client.send("POST", b"{}", {"content-type": "text/plain"})
        assert (await client.whole()).status == 415
        await client.send("POST", b"{not json", {"content-type": "application/json"})
        answer = await client.whole()
        assert (answer.status, answer.json["error"]["code"]) == (400, -32700)
        ok = request(1, "tools/list")
        assert (await client.post(ok, origin=f"http://{HOST}")).status == 200
        assert (await client.post(ok, origin="http://localhost:" + HOST.split(":")[1])
                ).status == 200
        assert (await client.post(ok, origin="http://evil.example.com")).status == 403
        assert (await client.post(ok, host="evil.example.com")).status == 403
        assert (await client.post(ok, host="127.0.0.1:1")).status == 403  # another port


async def test_a_body_over_the_limit_is_413_and_a_head_over_it_431(
        autojump_clock: Any) -> None:
    async with running(body=1024, max_header=2048) as r:
        client = await r.client()
        await client.send("POST", b"x" * 2000, {"content-type": "application/json"})
        assert (await client.head()).status == 413
        raw = await trio.open_tcp_stream("127.0.0.1", r.port)
        await raw.send_all(b"POST /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\nX-Big: "
                           + b"a" * 4096 + b"\r\n\r\n")
        with trio.fail_after(WAIT):
            reply = await raw.receive_some(4096)
        assert reply.startswith(b"HTTP/1.1 431")
        garbage = await trio.open_tcp_stream("127.0.0.1", r.port)
        await garbage.send_all(b"NOT HTTP AT ALL\r\n\r\n")
        with trio.fail_after(WAIT):
            assert (await garbage.receive_some(4096)).startswith(b"HTTP/1.1 400")
        assert (await (await r.client()).post(request(1, "tools/list"))).status == 200


async def test_an_idle_connection_is_closed_and_a_slow_request_too(
        autojump_clock: Any) -> None:
    async with running(idle_timeout=30.0) as r:
        idle = await trio.open_tcp_stream("127.0.0.1", r.port)
        slow = await trio.open_tcp_stream("127.0.0.1", r.port)
        await slow.send_all(b"POST /mcp HTTP/1.1\r\n")  # and nothing more
        start = trio.current_time()
        with trio.fail_after(WAIT * 10):
            assert await idle.receive_some(100) == b""
            assert await slow.receive_some(100) == b""
        assert trio.current_time() - start >= 30.0
        assert len(r.events("http.idle_closed")) == 2


def test_the_bound_socket_is_loopback_tcp() -> None:
    with bind_tcp("127.0.0.1", 0) as sock:
        assert sock.family == socket.AF_INET and sock.getsockname()[0] == "127.0.0.1"


async def test_mcp_param_headers_are_checked_for_the_tools_listed(autojump_clock: Any) -> None:
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "opts": {"type": "object", "properties": {"dry": {"type": "boolean",
                                                          "x-mcp-header": "Dry"}}}}}
    TOOLS[:] = [{"name": "query", "inputSchema": schema}]
    try:
        async with running() as r:
            client = await r.client()
            call = request(1, "tools/call", name="query",
                           arguments={"region": "eu", "limit": 42, "opts": {"dry": True}})
            good = {"mcp-param-region": "=?base64?ZXU=?=", "mcp-param-limit": "42.0",
                    "mcp-param-dry": "true"}
            # Before the tool is listed, nothing is known of it: the call goes through.
            await client.send("POST", json.dumps(call).encode(),
                              {**rpc_headers(call), "mcp-param-region": "us"})
            await r.core.wait_for("tools/call")
            client = await r.client()
            assert (await client.post(request(2, "tools/list"))).status == 200
            for wrong in ({"mcp-param-region": "us"}, {"mcp-param-limit": "41"},
                          {"mcp-param-dry": "True"}, {"mcp-param-region": "=?base64?!!?="}):
                other = await r.client()
                answer = await other.post(call, **{**good, **wrong})
                assert (answer.status, answer.json["error"]["code"]) == (400, -32020), wrong
            missing = {k: v for k, v in good.items() if k != "mcp-param-limit"}
            answer = await (await r.client()).post(call, **missing)
            assert (answer.status, answer.json["error"]["code"]) == (400, -32020)
            await (await r.client()).send("POST", json.dumps(call).encode(),
                                          {**rpc_headers(call), **good})
            await r.core.wait_for("tools/call", 2)  # the first (unchecked) and this one
    finally:
        TOOLS.clear()


async def test_a_connection_over_the_limit_gets_503_and_the_others_go_on(
        autojump_clock: Any) -> None:
    async with running(max_connections=2) as r:
        first, second = await r.client(), await r.client()
        assert (await first.post(request(1, "tools/list"))).status == 200
        assert (await second.post(request(1, "tools/list"))).status == 200
        third = await r.client()
        await third.send("POST", json.dumps(request(1, "tools/list")).encode(),
                         rpc_headers(request(1, "tools/list")))
        assert (await third.head()).status == 503
        await first.stream.aclose()
        with trio.fail_after(WAIT):
            while r.front.connections != 1:
                await trio.testing.wait_all_tasks_blocked()
                await trio.sleep(0.1)  # virtual: the front's task sees the close
        assert (await (await r.client()).post(request(2, "tools/list"))).status == 200
        assert r.events("http.refused")


async def test_a_stop_still_delivers_what_the_core_answered_on_the_way_out(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        call = request(5, "tools/call", name="slow")
        await client.send("POST", json.dumps(call).encode(), rpc_headers(call))
        answer = await client.head()
        assert (await client.sse_event(answer))["method"] == "notifications/progress"
        r.front.stop()
        last = await client.sse_event(answer)
        assert last == {"jsonrpc": "2.0", "id": 5, "error": {"code": -32603,
                                                             "message": "shutting down"}}
