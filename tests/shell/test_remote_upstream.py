"""The HTTP upstream's course without sockets: httpx2's MockTransport plays the server, a
recording feed plays the driver. What the e2e tests cannot pin down: the order of POSTs, a
cancelled request's silence, a legacy session's headers and its 404."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import trio
from structlog.testing import capture_logs

from bridge.core.events import SERVER, ChildExited, ChildStarted, Event, Side
from bridge.shell import logs
from bridge.shell.driver import Source
from bridge.shell.lines import Line
from bridge.shell.remote.endpoint import Endpoint
from bridge.shell.remote.upstream import HttpUpstream

URL = "http://upstream.test/mcp"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


class Recorder:
    """The driver's part: the lines fed and the events posted, in order."""

    def __init__(self) -> None:
        self.fed: list[dict[str, Any]] = []
        self.events: list[Event] = []

    def lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None:
        assert side == SERVER
        self.fed += [json.loads(line) for line in lines if isinstance(line, bytes)]

    def post(self, event: Event) -> None:
        self.events.append(event)


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def run(handler: Callable[[httpx2.Request], Any], messages: list[dict[str, Any]],
              until: Callable[[Recorder], bool], *, cancel_after: float | None = None,
              then: list[dict[str, Any]] | None = None) -> Recorder:
    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL, (("X-Key", "k"),)), recorder, nursery,
                                logs.logger(), limit=1 << 20,
                                transport=httpx2.MockTransport(handler))
        upstream.serve()
        upstream.write(b"".join(line(m) for m in messages))
        if then is not None:
            await trio.sleep(cancel_after or 0.1)
            upstream.write(b"".join(line(m) for m in then))
        with trio.fail_after(5):
            while not until(recorder):
                await trio.sleep(0.01)
        upstream.kill_all()
        nursery.cancel_scope.cancel()
    return recorder


def answer(request: httpx2.Request, result: dict[str, Any],
           headers: dict[str, str] | None = None) -> httpx2.Response:
    body = json.loads(request.content)
    return httpx2.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result},
                           headers=headers)


async def test_a_legacy_session_carries_its_id_and_version_after_initialize() -> None:
    seen: list[httpx2.Request] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.method == "GET":
            return httpx2.Response(405)
        body = json.loads(request.content)
        if body.get("method") == "initialize":
            return answer(request, {"protocolVersion": "2025-06-18"}, {"Mcp-Session-Id": "s-1"})
        if "id" not in body:
            return httpx2.Response(202)
        return answer(request, {"tools": []})

    got = await run(server, [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ], until=lambda r: len(r.fed) == 2)
    posts = [r for r in seen if r.method == "POST"]
    assert [json.loads(r.content).get("method") for r in posts] == [
        "initialize", "notifications/initialized", "tools/list"]  # in order, as on a pipe
    assert "mcp-session-id" not in posts[0].headers
    for later in posts[1:]:
        assert later.headers["mcp-session-id"] == "s-1"
        assert later.headers["mcp-protocol-version"] == "2025-06-18"
    assert all(r.headers["x-key"] == "k" for r in seen)  # the user's header, everywhere
    assert [m["id"] for m in got.fed] == [1, 2]
    assert isinstance(got.events[0], ChildStarted)


async def test_a_cancelled_modern_request_closes_its_stream_and_gets_no_line() -> None:
    closed = trio.Event()

    async def endless() -> Any:
        try:
            yield b": keep-alive\n\n"
            await trio.sleep_forever()
        finally:
            closed.set()

    def server(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if body["method"] == "tools/call":
            assert request.headers["mcp-method"] == "tools/call"
            assert request.headers["mcp-name"] == "slow"
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                                   content=endless())
        return answer(request, {"ok": True})

    got = await run(server, [
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
         "params": {"name": "slow", "_meta": META}},
    ], then=[
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list", "params": {"_meta": META}},
    ], until=lambda r: closed.is_set() and len(r.fed) == 1)
    assert [m["id"] for m in got.fed] == ["b"]  # "a" was cancelled: nothing for it


async def test_a_cancelled_legacy_request_is_posted_then_its_stream_closed() -> None:
    closed = trio.Event()
    posted: list[str] = []

    async def endless() -> Any:
        try:
            yield b": keep-alive\n\n"
            await trio.sleep_forever()
        finally:
            closed.set()

    def server(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            return httpx2.Response(405)
        body = json.loads(request.content)
        posted.append(body.get("method", "a response"))
        if body.get("method") == "initialize":
            return answer(request, {"protocolVersion": "2025-11-25"}, {"Mcp-Session-Id": "s"})
        if "id" not in body:
            return httpx2.Response(202)
        return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                               content=endless())

    got = await run(server, [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}},
    ], then=[
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
    ], until=lambda r: closed.is_set())
    assert posted == ["initialize", "notifications/initialized", "tools/call",
                      "notifications/cancelled"]  # the cancel is said, not only meant
    assert [m["id"] for m in got.fed] == [1]


async def test_a_legacy_get_streams_404_is_the_session_ending() -> None:
    def server(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            return httpx2.Response(404, text="Session not found")
        body = json.loads(request.content)
        if body.get("method") == "initialize":
            return answer(request, {"protocolVersion": "2025-11-25"}, {"Mcp-Session-Id": "s"})
        return httpx2.Response(202)

    got = await run(server, [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ], until=lambda r: any(isinstance(e, ChildExited) for e in r.events))
    exited = [e for e in got.events if isinstance(e, ChildExited)]
    assert len(exited) == 1 and "ended the session (HTTP 404" in exited[0].went


async def test_a_legacy_sessions_404_is_the_servers_exit_not_an_error_line() -> None:
    def server(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            return httpx2.Response(405)
        body = json.loads(request.content)
        if body.get("method") == "initialize":
            return answer(request, {"protocolVersion": "2025-11-25"}, {"Mcp-Session-Id": "s"})
        if "id" not in body:
            return httpx2.Response(202)
        return httpx2.Response(404, text="Session not found")

    with capture_logs() as captured:
        got = await run(server, [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ], until=lambda r: any(isinstance(e, ChildExited) for e in r.events))
    exited = [e for e in got.events if isinstance(e, ChildExited)]
    assert len(exited) == 1 and exited[0].code is None
    assert exited[0].went == (f"at {URL} ended the session (HTTP 404: it restarted, or the "
                              "session expired)")
    assert [m["id"] for m in got.fed] == [1]  # the core answers request 2 on the exit
    assert [e["event"] for e in captured if e["log_level"] == "warning"] == ["upstream.lost"]


async def test_a_server_never_reached_gets_an_error_line_per_request() -> None:
    def server(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    got = await run(server, [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}},
    ], until=lambda r: len(r.fed) == 2)
    assert sorted(m["id"] for m in got.fed) == [1, 2]
    assert all("cannot connect to " + URL in m["error"]["message"] for m in got.fed)
    assert not any(isinstance(e, ChildExited) for e in got.events)
