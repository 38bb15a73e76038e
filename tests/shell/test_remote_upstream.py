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

from bridge.core.events import (
    SERVER,
    Action,
    ChildExited,
    ChildStarted,
    Event,
    MessageReceived,
    RestartChild,
    Side,
)
from bridge.shell import logs
from bridge.shell.fdio.lines import Line
from bridge.shell.servers.remote.conduit import client_timeout
from bridge.shell.servers.remote.endpoint import Endpoint, Network
from bridge.shell.servers.remote.reach import REACH_AT_MOST, REACH_BACKOFF
from bridge.shell.servers.remote.upstream import HttpUpstream
from bridge.shell.session.driver import Driver, Source

URL = "http://upstream.test/mcp"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
DEFAULTS = Network()


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
              then: list[dict[str, Any]] | None = None, network: Network = DEFAULTS,
              **options: Any) -> Recorder:
    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL, (("X-Key", "k"),), network), recorder, nursery,
                                logs.logger(), limit=1 << 20,
                                transport=httpx2.MockTransport(handler), **options)
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


def endless(closed: trio.Event) -> Any:
    """An SSE body that never ends: `closed` is set once the client lets go of it."""

    async def body() -> Any:
        try:
            yield b": keep-alive\n\n"
            await trio.sleep_forever()
        finally:
            closed.set()

    return body()


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

    def server(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if body["method"] == "tools/call":
            assert request.headers["mcp-method"] == "tools/call"
            assert request.headers["mcp-name"] == "slow"
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                                   content=endless(closed))
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
                               content=endless(closed))

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


async def test_reach_first_starts_once_the_endpoint_answers_and_waits_past_reach_at_most(
        autojump_clock: Any) -> None:
    # The front's shared session: its server is waited for at the start and after it went,
    # however long (its readiness stays red), instead of starting without it.
    up = False

    def server(request: httpx2.Request) -> httpx2.Response:
        if not up:
            raise httpx2.ConnectError("connection refused", request=request)
        if request.method == "GET":
            return httpx2.Response(405)
        return answer(request, {"tools": []})

    def started() -> int:
        return sum(isinstance(e, ChildStarted) for e in recorder.events)

    recorder = Recorder()
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    with capture_logs() as captured:
        async with trio.open_nursery() as nursery:
            upstream = HttpUpstream(Endpoint(URL), recorder, nursery, logs.logger(),
                                    limit=1 << 20, transport=httpx2.MockTransport(server),
                                    reach_first=True)
            upstream.serve()
            await trio.sleep(REACH_AT_MOST * 2)
            assert started() == 0
            up = True
            await trio.sleep(REACH_BACKOFF[1] + 1)
            assert started() == 1
            upstream.write(line(listing))  # answered: the server has served this session
            await trio.sleep(1)
            up = False
            upstream.write(line({**listing, "id": 2}))
            await trio.sleep(1)
            assert [type(e) for e in recorder.events] == [ChildStarted, ChildExited]
            upstream.restart()
            await trio.sleep(REACH_AT_MOST * 2)
            assert started() == 1
            up = True
            await trio.sleep(REACH_BACKOFF[1] + 1)
            assert started() == 2
            upstream.kill_all()
            nursery.cancel_scope.cancel()
    assert [m["id"] for m in recorder.fed] == [1]
    events = [e["event"] for e in captured]
    assert events.count("upstream.unreachable") == 2 and events.count("upstream.reachable") == 2


def call(request_id: int | str, name: str = "t") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "_meta": META}}


async def test_a_flood_of_requests_waits_its_turn_in_order_and_congests_the_upstream() -> None:
    """At most `connections` POSTs at once; the rest wait in order, none lost; past
    WAITING_HIGH per slot the upstream is congested (the client's reader stops), and it is
    relieved once they drain. A request cancelled while it waits is never POSTed."""
    gate = trio.Event()
    in_flight, peak, started = 0, 0, []

    async def server(request: httpx2.Request) -> httpx2.Response:
        nonlocal in_flight, peak
        body = json.loads(request.content)
        started.append(body["id"])
        if body["id"] == "listen":
            await trio.sleep_forever()
        in_flight += 1
        peak = max(peak, in_flight)
        await gate.wait()
        await trio.sleep(0.001)
        in_flight -= 1
        return answer(request, {"content": []})

    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL, (), Network(connections=2)), recorder, nursery,
                                logs.logger(), limit=1 << 20,
                                transport=httpx2.MockTransport(server))
        upstream.serve()
        upstream.write(b"".join(line(call(i)) for i in range(40)))
        await trio.sleep(0.05)
        assert upstream.congested and len(started) == 2  # 38 wait: more than 4 a slot
        upstream.write(line({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                             "params": {"_meta": META}}))
        await trio.sleep(0.05)
        assert started[2:] == ["listen"]  # a stream for the session takes no slot
        upstream.write(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": 39}}))
        relieved = trio.Event()

        async def wait_relief() -> None:
            await upstream.relieved()
            relieved.set()

        nursery.start_soon(wait_relief)
        await trio.sleep(0.05)
        assert not relieved.is_set()
        gate.set()
        with trio.fail_after(5):
            while len(recorder.fed) < 39:
                await trio.sleep(0.01)
            await relieved.wait()
        upstream.kill_all()
        nursery.cancel_scope.cancel()
    assert peak == 2
    assert sorted(started[:2]) == [0, 1]  # the first slots went to the first requests
    started.remove("listen")
    assert sorted(started) == list(range(39))  # 39 was cancelled before its turn
    assert sorted(m["id"] for m in recorder.fed) == list(range(39))
    assert not upstream.congested


class Outlet:
    """The client's outlet as a throttle the test opens."""

    def __init__(self) -> None:
        self.congested = True
        self._open = trio.Event()

    async def relieved(self) -> None:
        await self._open.wait()

    def relieve(self) -> None:
        self.congested = False
        self._open.set()


async def test_events_are_read_only_while_the_client_reads() -> None:
    outlet = Outlet()
    sent: list[int] = []

    async def events() -> Any:
        for n in range(3):
            sent.append(n)
            yield (b'data: {"jsonrpc": "2.0", "method": "notifications/message", '
                   b'"params": {"level": "info", "data": %d}}\n\n' % n)
        yield b'data: {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}\n\n'

    def server(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                               content=events())

    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL), recorder, nursery, logs.logger(), limit=1 << 20,
                                feeds=outlet, transport=httpx2.MockTransport(server))
        upstream.serve()
        upstream.write(line(call(1)))
        await trio.sleep(0.1)
        assert recorder.fed == [] and len(sent) == 1  # the first event waits for the client
        outlet.relieve()
        with trio.fail_after(5):
            while len(recorder.fed) < 4:
                await trio.sleep(0.01)
        upstream.kill_all()
        nursery.cancel_scope.cancel()
    assert [m.get("id") for m in recorder.fed] == [None, None, None, 1]


async def test_a_json_answer_that_stops_midway_fails_after_the_read_timeout() -> None:
    async def stalled() -> Any:
        yield b'{"jsonrpc": "2.0", "id": 1, '
        await trio.sleep_forever()

    def server(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"Content-Type": "application/json"},
                               content=stalled())

    with capture_logs() as captured:
        got = await run(server, [call(1)], until=lambda r: len(r.fed) == 1,
                        network=Network(read_timeout=0.2))
    message = got.fed[0]["error"]["message"]
    assert message == (f"{URL} stopped sending its answer midway: no byte in 0.2s "
                       "(read_timeout)")
    assert [e["event"] for e in captured if e["log_level"] == "warning"] == ["upstream.failed"]


class Signed(httpx2.Auth):
    """An auth provider of the test's: signs every request, names its own fix."""

    def __init__(self) -> None:
        self.signed: list[str] = []

    def auth(self) -> httpx2.Auth:
        return self

    def remedy(self, status: int) -> str:
        return "sign in again with the test's provider"

    def auth_flow(self, request: httpx2.Request) -> Any:
        request.headers["Authorization"] = "Signed t"
        self.signed.append(request.method)
        yield request


async def test_an_auth_provider_signs_every_request_and_names_the_fix_of_a_401() -> None:
    provider = Signed()

    def server(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == "Signed t"
        return httpx2.Response(401, headers={"WWW-Authenticate": 'Bearer realm="x"'})

    with capture_logs() as captured:
        got = await run(server, [call(1)], until=lambda r: len(r.fed) == 1, auth=provider)
    message = got.fed[0]["error"]["message"]
    assert message == (f'{URL} refused the request with HTTP 401 (WWW-Authenticate: Bearer '
                       'realm="x"): sign in again with the test\'s provider')
    assert provider.signed == ["POST"]
    refused = [e for e in captured if e["log_level"] == "warning"]
    assert [e["event"] for e in refused] == ["upstream.refused"]
    assert 'Bearer realm="x"' in refused[0]["error"] and URL in refused[0]["error"]


async def test_a_connect_timeout_names_the_url_and_the_setting() -> None:
    def server(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectTimeout("timed out", request=request)

    got = await run(server, [call(1)], until=lambda r: len(r.fed) == 1,
                    network=Network(connect_timeout=3.0))
    assert got.fed[0]["error"]["message"] == (
        f"no connection to {URL} within 3s (connect_timeout): check that the server runs "
        "and can be reached")


def test_the_client_bounds_connections_and_connecting_but_not_waiting() -> None:
    timeout = client_timeout(Network(connect_timeout=3.0, read_timeout=0))
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (3.0, None, None,
                                                                           None)


class RestartingCore:
    """The core's part behind a real driver: records what the server says, and restarts the
    server on its first message, as the core does when it gives up on a server."""

    def __init__(self) -> None:
        self.heard: list[dict[str, Any]] = []
        self.events: list[Event] = []

    def next_deadline(self) -> float | None:
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        self.events.append(event)
        if isinstance(event, MessageReceived) and event.side == SERVER:
            assert isinstance(event.message, bytes)
            self.heard.append(json.loads(event.message))
            if len(self.heard) == 1:
                return [RestartChild()]
        return []


async def test_no_line_of_a_retired_link_reaches_the_core_after_a_restart() -> None:
    # The stream's two events arrive in one read: the first makes the core restart the
    # server, and the task reading the stream goes on to the second before it meets a
    # checkpoint, so its cancellation comes too late to hold it back. The driver drops it:
    # its source, the old link, is retired. The new link serves as the first did.
    both = (b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'
            b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n')

    def server(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if body["method"] == "tools/call":
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                                   content=both)
        return answer(request, {"tools": []})

    core = RestartingCore()
    driver = Driver(core, logs.logger(), limit=1 << 20, notify=lambda _: None)
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL), driver, nursery, logs.logger(), limit=1 << 20,
                                transport=httpx2.MockTransport(server))
        driver.server = upstream
        upstream.serve()
        upstream.write(line(call(1)))
        with trio.fail_after(5):
            while sum(isinstance(e, ChildStarted) for e in core.events) < 2:
                await trio.sleep(0.01)
        upstream.write(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                             "params": {"_meta": META}}))
        with trio.fail_after(5):
            while len(core.heard) < 2:
                await trio.sleep(0.01)
        await trio.sleep(0.1)
        upstream.kill_all()
        nursery.cancel_scope.cancel()
    assert [m.get("method", m.get("id")) for m in core.heard] == ["notifications/message", 2]


async def test_a_restart_ends_every_task_of_the_old_link() -> None:
    # A legacy session: its GET stream and a request's stream stay open until the core
    # restarts the server; both close then, and the old session is ended (DELETE).
    listened, answering = trio.Event(), trio.Event()
    deleted: list[str] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        if request.method == "DELETE":
            deleted.append(request.headers["mcp-session-id"])
            return httpx2.Response(200)
        if request.method == "GET":
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                                   content=endless(listened))
        body = json.loads(request.content)
        if body.get("method") == "initialize":
            return answer(request, {"protocolVersion": "2025-06-18"}, {"Mcp-Session-Id": "s-1"})
        if "id" not in body:
            return httpx2.Response(202)
        return httpx2.Response(200, headers={"Content-Type": "text/event-stream"},
                               content=endless(answering))

    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        upstream = HttpUpstream(Endpoint(URL), recorder, nursery, logs.logger(), limit=1 << 20,
                                transport=httpx2.MockTransport(server))
        upstream.serve()
        upstream.write(b"".join(line(m) for m in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}},
        ]))
        await trio.sleep(0.2)
        assert not listened.is_set() and not answering.is_set()
        upstream.restart()
        with trio.fail_after(5):
            await listened.wait()
            await answering.wait()
            while sum(isinstance(e, ChildStarted) for e in recorder.events) < 2:
                await trio.sleep(0.01)
        upstream.kill_all()
        nursery.cancel_scope.cancel()
    assert deleted == ["s-1"]
    assert [m["id"] for m in recorder.fed] == [1]
