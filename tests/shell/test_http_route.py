"""One HTTP answer's bounded queue (`route.py`) and the front's limits as settings.

What is checked: `put` never waits, one message always passes however long, the route gives
up (and cancels the writer's scope) once its backlog would pass the bound, what the writer
takes frees room, and the settings' defaults are the front's own constants.
"""

from __future__ import annotations

import json
from typing import Any

import trio
from structlog.testing import capture_logs

from bridge.core.events import Action, Event, Send
from bridge.shell import logs
from bridge.shell.http import front, route
from bridge.shell.http.route import Outgoing, Route, RouteState
from bridge.shell.settings import DaemonConfig
from tests.shell import test_http_front as harness

LOG = logs.logger()


def message(size: int, final: bool = False) -> Outgoing:
    return Outgoing(b"x" * (size - 1) + b"\n", final)


def test_one_message_passes_whatever_its_length() -> None:
    queue = Route(LOG, bound=10)
    assert queue.put(message(1000))
    assert (queue.queued, queue.queued_bytes, queue.state) == (1, 1000, RouteState.OPEN)


def test_past_the_bound_the_route_gives_up_cancels_its_writer_and_says_so_once() -> None:
    with capture_logs() as logged:
        queue = Route(logs.logger(), bound=100, client="127.0.0.1:9", request=7)
        assert queue.put(message(60))
        assert not queue.put(message(60))
        assert queue.state is RouteState.GAVE_UP
        assert queue.scope.cancel_called
        assert not queue.put(message(1))  # nothing more once given up
        queue.give_up(stalled_s=5.0)
    assert queue.queued == 1
    assert logged == [{"event": "http.client_dropped", "log_level": "warning",
                       "client": "127.0.0.1:9", "request": 7, "bytes": 60, "messages": 1,
                       "bound": 100, "reason": "the client stopped reading"}]


async def test_what_the_writer_takes_frees_room() -> None:
    queue = Route(LOG, bound=100)
    assert queue.put(message(60))
    assert (await queue.get()).line.endswith(b"\n")
    assert queue.put(message(60)) and queue.put(message(40))
    assert queue.queued_bytes == 100 and queue.state is RouteState.OPEN


async def test_take_hands_over_everything_queued_and_frees_its_room() -> None:
    queue = Route(LOG, bound=100)
    for size in (10, 20, 30):
        queue.put(message(size))
    taken = await queue.take()
    assert [len(o.line) for o in taken] == [10, 20, 30]
    assert (queue.queued, queue.queued_bytes) == (0, 0)


async def test_a_closed_route_still_hands_over_what_it_holds() -> None:
    queue = Route(LOG)
    queue.put(message(5, final=True))
    queue.close()
    assert (await queue.get()).final
    assert queue.state is RouteState.CLOSED and not queue.scope.cancel_called
    try:
        await queue.get()
    except trio.EndOfChannel:
        pass
    else:
        raise AssertionError("a closed, empty route ended nothing")


def test_the_settings_defaults_are_the_fronts_own() -> None:
    daemon = DaemonConfig()
    assert daemon.connection_idle == front.IDLE_TIMEOUT
    assert daemon.max_connections == front.MAX_CONNECTIONS
    assert daemon.stream_backlog == route.STREAM_BACKLOG


# In process: a flood for one POST whose client reads nothing, and another client meanwhile.


class FloodCore(harness.ScriptedCore):
    """The scripted core, but `tools/call` of "flood" sends 200 progress lines of 1 KiB in
    one step (as the shared server's reader does in one turn), and no answer."""

    def handle(self, event: Event, now: float) -> list[Action]:
        message = harness.client_message(event)
        if message is not None and message.get("method") == "tools/call" and \
                message["params"]["name"] == "flood":
            self.received.append(message)
            rid = message["id"]
            return [Send("client", {"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": rid, "progress": n,
                                               "message": "x" * 1000}}, request=rid)
                    for n in range(200)]
        return super().handle(event, now)


async def test_a_flood_past_the_bound_cancels_its_request_at_the_core_and_closes_it(
        autojump_clock: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(harness, "ScriptedCore", FloodCore)
    async with harness.running(stream_backlog=16 * 1024) as r:
        flooded = await r.client()
        call = harness.request("mine", "tools/call", token="t", name="flood")
        await flooded.send("POST", json.dumps(call).encode(), harness.rpc_headers(call))
        await r.core.wait_for("notifications/cancelled")
        wire = r.core.ids_of("tools/call")[0]
        cancelled = [m for m in r.core.received if m.get("method") == "notifications/cancelled"]
        assert [m["params"]["requestId"] for m in cancelled] == [wire]
        # Another client is served meanwhile, and the flooded one's connection is closed.
        other = await r.client()
        assert (await other.post(harness.request(1, "tools/list"))).status == 200
        with trio.fail_after(harness.WAIT):  # given up in the burst: before a byte went out
            assert await flooded.stream.receive_some(65536) == b""
        dropped = r.events("http.client_dropped")
        assert len(dropped) == 1 and dropped[0]["request"] == "mine", dropped
        assert dropped[0]["bound"] == 16 * 1024
        assert r.front.mapping.in_flight == 0
