"""One HTTP answer's bounded queue (`route.py`) and the front's limits as settings.

What is checked: `put` never waits, one message always passes however long, the route gives
up (and cancels the writer's scope) once its backlog would pass the bound, what the writer
takes frees room, and the settings' defaults are the front's own constants.
"""

from __future__ import annotations

import trio
from structlog.testing import capture_logs

from bridge.shell import logs
from bridge.shell.http import front, route, sse
from bridge.shell.http.route import Outgoing, Route, RouteState
from bridge.shell.settings import DaemonConfig

LOG = logs.logger()


def message(size: int, final: bool = False) -> Outgoing:
    return Outgoing(b"x" * (size - 1) + b"\n", final)


def test_one_message_passes_whatever_its_length() -> None:
    queue = Route(LOG, bound=10)
    assert queue.put(message(1000))
    assert (queue.queued, queue.queued_bytes, queue.state) == (1, 1000, RouteState.OPEN)


def test_past_the_bound_the_route_gives_up_cancels_its_writer_and_says_so_once() -> None:
    queue = Route(LOG, bound=100, client="127.0.0.1:9", request=7)
    with capture_logs() as logged:
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
    assert daemon.http_idle_timeout == front.IDLE_TIMEOUT
    assert daemon.http_max_connections == front.MAX_CONNECTIONS
    assert daemon.http_stream_backlog == route.STREAM_BACKLOG


def test_several_events_in_one_piece_are_the_events_one_by_one() -> None:
    lines = [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n']
    assert sse.events_of(lines) == b"".join(sse.event_of(line) for line in lines)
    assert sse.events_of(lines[:1]) == sse.event_of(lines[0])
