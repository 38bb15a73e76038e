"""The front's answers to clients that step outside what 2026-07-28 expects of them: a token
in the query string (kept out of the log), and an Accept header that takes no event stream
(the answer alone as JSON, or 406 where only a stream will do)."""

from __future__ import annotations

import json
from typing import Any

import trio.testing

from bridge.core.events import Send, TimerFired
from tests.shell.test_http_front import request, rpc_headers, running

SECRET = "s3cr3t-t0ken"


async def test_a_token_in_the_query_string_never_reaches_the_request_log(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        call = request(1, "tools/list")
        for target in (f"/mcp?access_token={SECRET}", f"/elsewhere?{SECRET}&a=b"):
            await client.send("POST", json.dumps(call).encode(), rpc_headers(call),
                              target=target)
            await client.whole()
        await trio.testing.wait_all_tasks_blocked()
        logged = r.events("http.request")
        assert [(e["path"], e["status"]) for e in logged] == [
            ("/mcp?access_token=…", 200), ("/elsewhere?…&a=…", 404)]
        assert SECRET not in repr(r.logs)


async def test_a_client_that_takes_only_json_gets_the_answer_alone_as_json(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        call = request(1, "tools/call", token="t", name="slow")
        await client.send("POST", json.dumps(call).encode(),
                          {**rpc_headers(call), "accept": "application/json"})
        await r.core.wait_for("tools/call")
        [wire] = r.core.ids_of("tools/call")
        r.core.later = [Send("client", {"jsonrpc": "2.0", "id": wire, "result": {"n": 1}},
                             request=wire)]
        await trio.testing.wait_all_tasks_blocked()  # the progress line is taken first
        r.front.driver.post(TimerFired())
        answer = await client.whole()
        assert (answer.status, answer.headers["content-type"]) == (200, "application/json")
        assert answer.json == {"jsonrpc": "2.0", "id": 1, "result": {"n": 1}}


async def test_a_listen_from_a_client_that_takes_no_event_stream_is_406(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        listen = request(2, "subscriptions/listen", notifications={"toolsListChanged": True})
        answer = await client.post(listen, accept="application/json")
        assert answer.status == 406
        assert answer.json["id"] == 2
        assert "Accept: application/json, text/event-stream" in answer.json["error"]["message"]
        assert r.core.ids_of("subscriptions/listen") == []  # the core never saw it
