"""Legacy HTTP sessions on the front, in process: real HTTP/1.1 over loopback (an h11
client), scripted cores (the shared modern one and one per legacy session), fake server
children. Time is trio's virtual clock.

What is checked is the front's own part of 2025-11-25 transports.mdx: the era of each request,
a session per `initialize` (its id, 400 without it, 404 once ended, DELETE, the idle end,
max_sessions), the messages' streams (a POST's own, the session's GET stream, 202 for what is
not a request), resumption by Last-Event-ID, and both eras on one front at once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import h11
import structlog
import trio
import trio.testing
from structlog.testing import capture_logs

import tests.shell.test_http_front as modern
from bridge.core.events import (
    Action,
    Event,
    Send,
    ShutdownRequested,
    Stop,
    TimerFired,
)
from bridge.shell import logs
from bridge.shell.http.address import Address
from bridge.shell.http.auth import Tokens
from bridge.shell.http.front import Access, Front
from bridge.shell.http.legacy import EVICTABLE_AFTER
from bridge.shell.services.listeners import bind_tcp
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from tests.shell.fakes import WAIT, FakeChild, Spawner
from tests.shell.test_http_front import Answer, Client, ScriptedCore, client_message

LEGACY = "2025-11-25"
SESSION = "mcp-session-id"


class LegacyCore:
    """One legacy session's core: answers `initialize` and `tools/list` at once; a
    `tools/call` of "ask" asks the client a question on the call's behalf and answers the
    call with the client's answer; of "change" says `list_changed` (naming no request) and
    answers; of "slow" sends progress and waits."""

    handler = object()  # not mode B's: a pool of one
    legacy_server = False

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.asked: dict[str, Any] = {}
        self.stopped = False
        self.later: list[Action] = []
        """What a TimerFired releases (a slow call's answer)."""

    def next_deadline(self) -> float | None:
        return None

    def handle(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ShutdownRequested):
            self.stopped = True
            return [Stop(0)]
        if isinstance(event, TimerFired):
            actions, self.later = self.later, []
            return actions
        message = client_message(event)
        if message is None:
            return []
        self.received.append(message)
        method, rid = message.get("method"), message.get("id")
        if method is None:  # the client's answer to a question
            call = self.asked.pop(rid)
            return [answer(call, {"answered": message["result"]})]
        if method == "initialize":
            return [answer(rid, {"protocolVersion": LEGACY, "capabilities": {},
                                 "serverInfo": {"name": "scripted", "version": "1"}})]
        if method == "tools/list":
            return [answer(rid, {"tools": []})]
        name = (message.get("params") or {}).get("name")
        if method == "tools/call" and name == "ask":
            question = f"q-{rid}"
            self.asked[question] = rid
            return [Send("client", {"jsonrpc": "2.0", "id": question,
                                    "method": "elicitation/create", "params": {}},
                         request=rid)]
        if method == "tools/call" and name == "change":
            return [Send("client", {"jsonrpc": "2.0",
                                    "method": "notifications/tools/list_changed"}),
                    answer(rid, {"content": []})]
        if method == "tools/call" and name == "slow":
            return [Send("client", {"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": rid, "progress": 1}},
                         request=rid)]
        return []


def answer(rid: Any, result: Any) -> Send:
    return Send("client", {"jsonrpc": "2.0", "id": rid, "result": result}, request=rid)


@dataclass
class Running:
    front: Front
    cores: list[LegacyCore]
    spawner: Spawner
    port: int
    logs: list[Any]

    async def client(self) -> Client:
        return Client(await trio.open_tcp_stream("127.0.0.1", self.port))

    def events(self, name: str) -> list[Any]:
        return [e for e in self.logs if e["event"] == name]

    async def settled(self) -> None:
        await trio.testing.wait_all_tasks_blocked()


@asynccontextmanager
async def running(**options: Any) -> AsyncIterator[Running]:
    cores: list[LegacyCore] = []

    def make_core(route: str = "", legacy: bool = False) -> LegacyCore:
        cores.append(LegacyCore())
        return cores[-1]

    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    listener = bind_tcp("127.0.0.1", 0)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured, listener:
        front = Front(ScriptedCore(), Servers(SessionSettings(), spawn=spawner),
                      Address("127.0.0.1", 0, "/mcp"), logs.logger(),
                      settings=SessionSettings(), make_core=make_core, **options)
        async with trio.open_nursery() as nursery:
            spawner.nursery = nursery
            nursery.start_soon(front.run, listener)
            with trio.fail_after(WAIT):
                await front.listening.wait()
            modern.HOST = f"127.0.0.1:{front.port}"
            yield Running(front, cores, spawner, front.port, captured)
            front.stop()
            nursery.cancel_scope.cancel()


def rpc(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def headers(session: str | None = None, version: str | None = LEGACY) -> dict[str, str]:
    heads = {"content-type": "application/json",
             "accept": "application/json, text/event-stream"}
    if version is not None:
        heads["mcp-protocol-version"] = version
    if session is not None:
        heads[SESSION] = session
    return heads


async def post(client: Client, message: dict[str, Any], session: str | None = None,
               **extra: str) -> Answer:
    await client.send("POST", json.dumps(message).encode(), {**headers(session), **extra})
    return await client.whole()


def messages(answer: Answer) -> list[Any]:
    """The messages of a whole event-stream answer (the priming event's empty data left out)."""
    assert answer.headers["content-type"] == "text/event-stream", answer
    return [json.loads(line[6:]) for line in answer.body.split(b"\n")
            if line.startswith(b"data: ") and line[6:].strip()]


def last(answer: Answer) -> Any:
    return messages(answer)[-1]


async def initialized(client: Client) -> str:
    """A new session's id (initialize without a protocol version header: 2025-03-26)."""
    init = rpc(0, "initialize", protocolVersion=LEGACY, capabilities={},
               clientInfo={"name": "t", "version": "1"})
    await client.send("POST", json.dumps(init).encode(), headers(version=None))
    answer = await client.whole()
    assert answer.status == 200, answer
    assert last(answer)["result"]["protocolVersion"] == LEGACY
    return answer.headers[SESSION]


async def test_initialize_opens_a_session_of_its_own_that_later_requests_must_name(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        session = await initialized(client)
        assert len(session) >= 32 and all("!" <= c <= "~" for c in session)
        assert len(r.spawner.children) == 2  # the shared server's and the session's own
        assert [m["method"] for m in r.cores[0].received] == ["initialize"]
        listed = await post(client, rpc(1, "tools/list"), session)
        assert (listed.status, messages(listed)) == (200, [{"jsonrpc": "2.0", "id": 1,
                                                            "result": {"tools": []}}])
        assert listed.body.startswith(b"id: p2-1\nretry: 1000\ndata: \n\n")  # priming
        assert listed.headers[SESSION] == session
        missing = await post(client, rpc(2, "tools/list"))
        assert (missing.status, missing.json["error"]["code"]) == (400, -32600)
        assert "Mcp-Session-Id" in missing.json["error"]["message"]
        stale = await post(client, rpc(3, "tools/list"), "not-a-session")
        assert stale.status == 404
        assert "initialize" in stale.json["error"]["message"]
        odd = await post(client, rpc(4, "tools/list"), session,
                         **{"mcp-protocol-version": "1999-01-01"})
        assert (odd.status, odd.json["error"]["data"]["requested"]) == (400, "1999-01-01")
        second = await initialized(await r.client())
        assert second != session and len(r.cores) == 2
        assert [m["method"] for m in r.cores[0].received] == ["initialize", "tools/list"]
        await r.settled()
        logged = [e for e in r.events("http.request") if e.get("rpc_method") == "tools/list"]
        assert [(e["status"], e.get("session")) for e in logged] == [
            (200, 1), (400, None), (404, None), (400, None)]


async def test_a_notification_or_a_response_is_202_and_reaches_the_session_s_core(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        session = await initialized(client)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        accepted = await post(client, note, session)
        assert (accepted.status, accepted.body) == (202, b"")
        assert r.cores[0].received[-1] == note


async def test_a_question_goes_on_its_call_s_stream_and_its_answer_comes_back_by_post(
        autojump_clock: Any) -> None:
    async with running() as r:
        caller, answerer = await r.client(), await r.client()
        session = await initialized(caller)
        call = rpc(7, "tools/call", name="ask", arguments={})
        await caller.send("POST", json.dumps(call).encode(), headers(session))
        stream = await caller.head()
        assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream")
        assert stream.headers[SESSION] == session
        assert await event_of(caller, stream) == ("p2-1", None)  # priming (p1 was initialize)
        event_id, question = await event_of(caller, stream)
        assert event_id == "p2-2"
        assert (question["id"], question["method"]) == ("q-7", "elicitation/create")
        reply = {"jsonrpc": "2.0", "id": "q-7", "result": {"action": "accept"}}
        assert (await post(answerer, reply, session)).status == 202
        assert await event_of(caller, stream) == ("p2-3", {
            "jsonrpc": "2.0", "id": 7, "result": {"answered": {"action": "accept"}}})


async def event_of(client: Client, answer: Answer) -> tuple[str, Any]:
    """The next SSE event of `answer`: its id and its data (decoded)."""
    with trio.fail_after(WAIT):
        while b"\n\n" not in answer.body:
            event = await client._event()
            assert isinstance(event, h11.Data), event
            answer.body += bytes(event.data)
    block, answer.body = answer.body.split(b"\n\n", 1)
    fields = dict(line.split(b": ", 1) for line in block.split(b"\n"))
    data = fields[b"data"]
    return fields[b"id"].decode(), json.loads(data) if data.strip() else None


async def test_the_get_stream_gets_what_names_no_request_and_resumes_by_last_event_id(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        session = await initialized(client)
        change = rpc(1, "tools/call", name="change", arguments={})
        assert (await post(client, change, session)).status == 200  # before any GET: held
        listener = await r.client()
        get = {"accept": "text/event-stream", SESSION: session}
        await listener.send("GET", headers=get)
        stream = await listener.head()
        assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream")
        event_id, held = await event_of(listener, stream)
        assert (event_id, held["method"]) == ("g-1", "notifications/tools/list_changed")
        assert (await post(client, {**change, "id": 2}, session)).status == 200
        assert (await event_of(listener, stream))[0] == "g-2"
        other = await r.client()
        await other.send("GET", headers=get)
        assert (await other.whole()).status == 409  # one GET stream per session
        await other.send("GET", headers={SESSION: session})
        assert (await other.whole()).status == 406  # not Accept: text/event-stream
        await listener.stream.aclose()
        await r.settled()
        assert (await post(client, {**change, "id": 3}, session)).status == 200
        again = await r.client()
        await again.send("GET", headers={**get, "last-event-id": "g-1"})
        resumed = await again.head()
        assert resumed.status == 200
        assert [(await event_of(again, resumed))[0] for _ in range(2)] == ["g-2", "g-3"]
        await again.stream.aclose()
        await r.settled()
        fresh = await r.client()  # no Last-Event-ID: nothing already sent comes again
        await fresh.send("GET", headers=get)
        opened = await fresh.head()
        assert (await post(client, {**change, "id": 4}, session)).status == 200
        assert (await event_of(fresh, opened))[0] == "g-4"


async def test_a_post_stream_lost_mid_call_is_resumed_by_get_with_last_event_id(
        autojump_clock: Any) -> None:
    async with running() as r:
        caller = await r.client()
        session = await initialized(caller)
        slow = rpc(5, "tools/call", name="slow", arguments={})
        await caller.send("POST", json.dumps(slow).encode(), headers(session))
        stream = await caller.head()
        primed, _ = await event_of(caller, stream)
        assert (await event_of(caller, stream))[0] == "p2-2"  # its progress
        await caller.stream.aclose()  # lost: not a cancellation (§Sending Messages 6)
        await r.settled()
        assert "notifications/cancelled" not in [m.get("method") for m in r.cores[0].received]
        r.cores[0].later = [answer(5, {"content": [], "done": True})]
        live = r.front.sessions.get(session)
        assert live is not None and live.driver is not None
        live.driver.post(TimerFired())  # the answer comes while nobody reads the stream
        again = await r.client()
        get = {"accept": "text/event-stream", SESSION: session, "last-event-id": primed}
        await again.send("GET", headers=get)
        resumed = await again.head()
        assert resumed.status == 200
        replayed = [await event_of(again, resumed) for _ in range(2)]
        assert [event_id for event_id, _ in replayed] == ["p2-2", "p2-3"]
        assert replayed[1][1] == {"jsonrpc": "2.0", "id": 5,
                                  "result": {"content": [], "done": True}}
        await again.rest(resumed)  # the stream ended with its answer
        assert not live.listening  # that was the POST's stream, not the session's GET one


async def test_delete_ends_the_session_and_stops_its_server(autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        session = await initialized(client)
        child = r.spawner.children[1]
        await client.send("DELETE", headers={SESSION: session})
        assert (await client.whole()).status == 204
        with trio.fail_after(WAIT):
            await child.wait()
        await r.settled()
        assert r.cores[0].stopped and len(r.front.sessions) == 0
        assert (await post(client, rpc(1, "tools/list"), session)).status == 404
        await client.send("DELETE", headers={SESSION: session})
        assert (await client.whole()).status == 404
        await client.send("GET", headers={"accept": "text/event-stream"})
        assert (await client.whole()).status == 405  # no session named: as before


async def test_an_idle_session_ends_but_not_while_a_stream_is_open(
        autojump_clock: Any) -> None:
    async with running(session_idle=60.0, keep_alive=1000.0) as r:
        client = await r.client()
        kept, idle = await initialized(client), await initialized(client)
        listener = await r.client()
        await listener.send("GET", headers={"accept": "text/event-stream", SESSION: kept})
        assert (await listener.head()).status == 200
        await trio.sleep(61.0)
        client = await r.client()  # the front closed the idle connection meanwhile
        assert (await post(client, rpc(1, "tools/list"), idle)).status == 404
        assert (await post(client, rpc(2, "tools/list"), kept)).status == 200
        ending = r.events("http.session_ending")
        assert [e["session"] for e in ending] == [2]
        assert "session_idle" in ending[0]["reason"]
        await listener.stream.aclose()
        await trio.sleep(61.0)
        client = await r.client()
        assert (await post(client, rpc(3, "tools/list"), kept)).status == 404
        await r.settled()
        assert len(r.front.sessions) == 0
        assert all(child.poll() is not None for child in r.spawner.children[1:])


async def test_one_session_more_than_max_sessions_is_503_naming_the_setting(
        autojump_clock: Any) -> None:
    async with running(max_sessions=1) as r:
        client = await r.client()
        await initialized(client)
        init = rpc(9, "initialize", protocolVersion=LEGACY, capabilities={})
        refused = await post(client, init)
        assert refused.status == 503
        assert refused.json["id"] == 9
        assert refused.json["error"]["data"] == {"max_sessions": 1}
        assert "max_sessions" in refused.json["error"]["message"]
        assert len(r.cores) == 1 and len(r.spawner.children) == 2


async def test_both_eras_at_once_on_one_front(autojump_clock: Any) -> None:
    async with running() as r:
        legacy_client, modern_client = await r.client(), await r.client()
        session = await initialized(legacy_client)
        slow = rpc(5, "tools/call", name="slow", arguments={})
        await legacy_client.send("POST", json.dumps(slow).encode(), headers(session))
        stream = await legacy_client.head()
        await event_of(legacy_client, stream)  # priming
        progress = (await event_of(legacy_client, stream))[1]
        assert progress["params"]["progressToken"] == 5  # no renaming in a session
        listed = await modern_client.post(modern.request(5, "tools/list"))
        assert (listed.status, listed.json["id"]) == (200, 5)
        assert "initialize" not in [m["method"] for m in r.front._core.received]  # type: ignore[attr-defined]
        assert [m["method"] for m in r.cores[0].received] == ["initialize", "tools/call"]


async def test_the_front_s_stop_ends_every_session_and_stops_their_servers(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        await initialized(client)
        await initialized(await r.client())
        assert len(r.front.sessions) == 2
        r.front.stop()
        with trio.fail_after(WAIT):
            while not r.events("http.stopped"):
                await trio.sleep(0.1)
        assert len(r.front.sessions) == 0
        assert all(core.stopped for core in r.cores)
        assert len(r.spawner.children) == 3
        assert all(child.poll() is not None for child in r.spawner.children)
        assert len(r.events("http.session_ended")) == 2


async def test_a_session_that_cannot_start_is_503_and_the_front_goes_on(
        autojump_clock: Any) -> None:
    async with running() as r:
        made = r.front._make_core  # type: ignore[attr-defined]

        def broken(route: str = "", legacy: bool = False) -> LegacyCore:
            raise OSError("no core today")

        r.front._make_core = broken  # type: ignore[attr-defined]
        client = await r.client()
        init = rpc(1, "initialize", protocolVersion=LEGACY, capabilities={})
        refused = await post(client, init)
        assert (refused.status, refused.json["id"]) == (503, 1)
        assert "could not be started" in refused.json["error"]["message"]
        assert len(r.front.sessions) == 0
        assert "no core today" in r.events("http.session_crashed")[0]["error"]
        r.front._make_core = made  # type: ignore[attr-defined]
        assert await initialized(client)


async def test_a_session_is_only_its_opener_s_token_s(autojump_clock: Any) -> None:
    """§Session Management's id is a secret, and with tokens a second one binds it: another
    token's bearer who learns the id gets 404, as for an id that never was."""
    tokens = Tokens((b"alice-token", b"bob-token"))
    async with running(access=Access(tokens=tokens)) as r:
        alice, bob = await r.client(), await r.client()
        init = rpc(0, "initialize", protocolVersion=LEGACY, capabilities={},
                   clientInfo={"name": "t", "version": "1"})
        opened = await post(alice, init, authorization="Bearer alice-token")
        assert opened.status == 200, opened
        session = opened.headers[SESSION]
        foreign = await post(bob, rpc(1, "tools/list"), session,
                             authorization="Bearer bob-token")
        assert foreign.status == 404
        await bob.send("DELETE", b"", {**headers(session), "authorization": "Bearer bob-token"})
        assert (await bob.whole()).status == 404
        own = await post(alice, rpc(2, "tools/list"), session,
                         authorization="Bearer alice-token")
        assert (own.status, last(own)["result"]) == (200, {"tools": []})
        assert [m["method"] for m in r.cores[0].received] == ["initialize", "tools/list"]


async def test_a_full_front_ends_the_session_idle_longest_without_a_stream_to_make_room(
        autojump_clock: Any) -> None:
    """Many clients never DELETE (the inspector CLI opens a session per call): at
    max_sessions, the one idle longest with no open stream goes, not the newcomer."""
    async with running(max_sessions=2) as r:
        first = await initialized(await r.client())
        await trio.sleep(EVICTABLE_AFTER + 1)
        second_client = await r.client()
        second = await initialized(second_client)
        await trio.sleep(EVICTABLE_AFTER + 1)
        await post(second_client, rpc(1, "tools/list"), second)  # the second is in use
        third = await initialized(await r.client())
        await r.settled()
        assert (await post(await r.client(), rpc(2, "tools/list"), first)).status == 404
        for session in (second, third):
            listed = await post(await r.client(), rpc(3, "tools/list"), session)
            assert (listed.status, last(listed)["result"]) == (200, {"tools": []})
        assert [e["session"] for e in r.events("http.session_ending")] == [1]
        assert r.spawner.children[1].poll() is not None  # the first session's server
        refused = await post(await r.client(),
                             rpc(4, "initialize", protocolVersion=LEGACY, capabilities={}))
        assert refused.status == 503  # both in use within EVICTABLE_AFTER: none may go
