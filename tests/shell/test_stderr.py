"""A server's stderr: each line a `server.stderr` event with its generation, cut when too long,
counted when too many, its last lines in ChildExited, and its console view the line itself."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio

from bridge.core.events import Action, ChildExited, Event, MessageReceived, RestartChild, Stop
from bridge.core.probe import PROBE_COMPLAINT
from bridge.shell import logs
from bridge.shell.servers.stderr import BURST, LINE_MAX, QUIET, TAIL_LINES
from bridge.shell.servers.supervisor import EOF_WAIT
from tests.shell.fakes import EchoCore, FakeChild, Spawner
from tests.shell.harness import bridged


def stderr_lines(h: Any) -> list[tuple[int, str]]:
    return [(e["gen"], e["line"]) for e in h.events("server.stderr")]


async def test_each_stderr_line_is_an_event_with_its_generation(autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        child.complain(b"starting\nlistening on stdio\r\n\npart")
        child.complain(b"ial line\n")
        await trio.sleep(1)
        assert stderr_lines(h) == [(1, "starting"), (1, "listening on stdio"),
                                   (1, "partial line")]
        await h.client.close_writing()
        await h.join()


async def test_non_utf8_bytes_are_escaped_not_lost(autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        (await h.spawner.nth(0)).complain(b"caf\xc3\xa9 \xff\xfe end\n")
        await trio.sleep(1)
        assert stderr_lines(h) == [(1, "café \\xff\\xfe end")]
        await h.client.close_writing()
        await h.join()


async def test_a_long_line_is_cut_and_says_how_much_was_left_out(autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        for _ in range(4):  # one line, in pieces, 4 * 5000 bytes
            child.complain(b"x" * 5000)
            await trio.sleep(0.1)
        child.complain(b"\nnext\n")
        await trio.sleep(1)
        (long, following) = h.events("server.stderr")
        assert long["line"] == "x" * LINE_MAX and long["cut"] == 20000 - LINE_MAX
        assert following["line"] == "next" and "cut" not in following
        await h.client.close_writing()
        await h.join()


async def test_a_flood_is_counted_not_logged_and_the_server_never_waits(
        autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        child.complain(b"".join(b"line %d\n" % i for i in range(BURST + 500)))
        await trio.sleep(0.001)  # refills one line's worth: not what 500 lines take
        child.complain(b"after the flood\n")
        await trio.sleep(10)
        events = [e["event"] for e in h.logs if e["event"].startswith("server.stderr")]
        assert events[:BURST] == ["server.stderr"] * BURST
        dropped = h.events("server.stderr_dropped")
        assert [e["lines"] for e in dropped] == [500]  # told before the next line logged
        assert h.events("server.stderr")[-1]["line"] == "after the flood"
        assert len(h.events("server.stderr")) == BURST + 1
        await h.client.close_writing()
        await h.join()


# What an `mcp` 1.x server writes when it cannot read the probe, shortened.
COMPLAINT = (b"Failed to validate request: 31 validation errors for ClientRequest\n"
             b"PingRequest.method\n"
             b"  Input should be 'ping' [type=literal_error, input_value='server/discover']\n"
             + b"".join(b"  Field required [type=missing] %d\n" % n for n in range(60)))


def info_lines(h: Any) -> list[dict[str, Any]]:
    return [e for e in h.events("server.stderr") if e["log_level"] == "info"]


async def test_a_burst_about_the_probe_is_one_event_its_lines_at_debug(
        autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        child.complain(b"starting\n")
        await trio.sleep(1)
        cut = COMPLAINT.index(b"server/discover") + 100
        child.complain(COMPLAINT[:cut])  # the burst in two writes close together
        await trio.sleep(QUIET / 2)
        child.complain(COMPLAINT[cut:])
        await trio.sleep(1)
        child.complain(b"Processing request of type ListToolsRequest\n")
        await trio.sleep(1)
        shown = [(e["line"], e.get("lines"), e.get("about")) for e in info_lines(h)]
        assert shown == [
            ("starting", None, None),
            ("Failed to validate request: 31 validation errors for ClientRequest", 63,
             PROBE_COMPLAINT),
            ("Processing request of type ListToolsRequest", None, None)]
        debug = [e["line"] for e in h.events("server.stderr") if e["log_level"] == "debug"]
        assert debug == COMPLAINT.decode().splitlines()
        await h.client.close_writing()
        await h.join()


async def test_a_burst_about_the_probe_cut_short_by_the_exit_is_summarised_and_in_the_tail(
        autojump_clock: Any) -> None:
    core = ExitCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        child.complain(COMPLAINT + b"Traceback: the last words")  # no newline
        child.exit(1)
        assert await h.join() == 0
        (event,) = info_lines(h)
        assert event["lines"] == 64
    (_, exited), = core.of(ChildExited)
    assert exited.stderr_tail[-1] == "Traceback: the last words"


class ExitCore(EchoCore):
    """Stops with the child's status, after the test has read the event."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildExited):
            return [Stop(0)]
        return super().react(event, now)


async def test_childexited_carries_the_last_lines_flushed_first(autojump_clock: Any) -> None:
    core = ExitCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        child.complain(b"".join(b"noise %d\n" % i for i in range(30)))
        child.complain(b"Traceback: ModuleNotFoundError: no module named 'x'")  # no newline
        await trio.sleep(1)
        child.exit(1)
        assert await h.join() == 0
    (_, exited), = core.of(ChildExited)
    assert exited.code == 1 and len(exited.stderr_tail) == TAIL_LINES
    assert exited.stderr_tail[-1] == "Traceback: ModuleNotFoundError: no module named 'x'"
    assert exited.stderr_tail[0] == "noise 11"
    # The unfinished last line was logged before the core heard of the exit.
    assert h.events("server.stderr")[-1]["line"].startswith("Traceback")


async def test_a_helper_holding_stderr_open_delays_the_exit_one_bounded_wait(
        autojump_clock: Any) -> None:
    core = ExitCore()

    class Held(FakeChild):
        def close_stderr(self) -> None:  # a helper of the server keeps the pipe open
            pass

    async with bridged(core, Spawner(Held)) as h:
        child = await h.spawner.nth(0)
        child.complain(b"half a line")
        child.exit(3)
        assert await h.join() == 0
        held = child._stderr_tx
    os.close(held)
    (at, exited), = core.of(ChildExited)
    assert exited.stderr_tail == ("half a line",)
    assert EOF_WAIT <= at < EOF_WAIT + 0.1  # one bounded wait, then ChildExited all the same


def test_the_console_shows_the_line_itself(tmp_path: Path) -> None:
    with open(tmp_path / "stderr", "w+") as stream:
        log = logs.configure("info", "console", stream)
        log.bind(session=2, gen=1).info("server.stderr", line="listening on stdio")
        stream.seek(0)
        text = stream.read()
    assert "server: listening on stdio" in text and "line=" not in text
    assert "gen=1" in text and "session=2" in text


def test_json_keeps_the_line_as_a_field(tmp_path: Path) -> None:
    with open(tmp_path / "stderr", "w+") as stream:
        log = logs.configure("info", "json", stream)
        log.bind(gen=1).info("server.stderr", line="caf\\xff")
        stream.seek(0)
        record = json.loads(stream.read())
    assert record["event"] == "server.stderr" and record["line"] == "caf\\xff"
    assert record["gen"] == 1


class RestartOnAnyLine(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            return [RestartChild()]
        return super().react(event, now)


async def test_a_restarted_servers_lines_carry_the_next_generation(autojump_clock: Any) -> None:
    async with bridged(RestartOnAnyLine()) as h:
        first = await h.spawner.nth(0)
        first.complain(b"first\n")
        await trio.sleep(1)
        await h.client.send(b'{"id":1}')
        (await h.spawner.nth(1)).complain(b"second\n")
        await trio.sleep(1)
        assert stderr_lines(h) == [(1, "first"), (2, "second")]
        await h.client.close_writing()
        await h.join()


async def test_what_a_replaced_server_says_while_it_stops_is_logged(autojump_clock: Any) -> None:
    # Retiring a child cancels its reader and its waiter, not its stderr: its last words,
    # said after stdin's EOF asked it to stop, are the user's clue to how it ended.
    spawner = Spawner(lambda nursery: FakeChild(nursery, ignore_eof=bool(not spawner.children)))
    async with bridged(RestartOnAnyLine(), spawner) as h:
        first = await h.spawner.nth(0)
        await h.client.send(b'{"id":1}')
        await first.expect_eof()  # asked to stop
        first.complain(b"stopping: 3 jobs dropped\n")
        first.exit(0)
        await h.spawner.nth(1)
        await trio.sleep(1)
        assert stderr_lines(h) == [(1, "stopping: 3 jobs dropped")]
        assert [(e["gen"], e["code"]) for e in h.events("child.stopped")] == [(1, 0)]
        await h.client.close_writing()
        await h.join()
