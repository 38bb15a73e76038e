"""The driver and its pumps, in process: order, timers, slow peers, long lines, stop, restart."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import trio
import trio.testing

from bridge.core.codec import decode
from bridge.core.events import (
    Action,
    ChildExited,
    ChildStarted,
    Event,
    MessageReceived,
    NotifyReady,
    PeerClosed,
    RestartChild,
    Send,
    Stop,
    TimerFired,
)
from bridge.errors import ServerUnavailable
from bridge.shell.supervisor import Timing
from tests.shell.fakes import EchoCore, FakeChild, LineReader, Spawner
from tests.shell.harness import TIMING, Harness


def ids(lines: list[bytes]) -> list[Any]:
    return [decode(line)["id"] for line in lines]


async def test_messages_flow_in_order_both_ways(autojump_clock: trio.abc.Clock) -> None:
    core = EchoCore()
    h = Harness(core)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        server = LineReader(child.stdin_rx)
        await h.send(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(await server.lines(200)) == list(range(200))
        await child.write(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(await h.client.lines(200)) == list(range(200))
        nursery.start_soon(child.serve)
        await h.client_eof()
    assert h.code == 0
    assert core.kinds()[0] == "ChildStarted"
    assert core.kinds()[-1] == "PeerClosed"


async def test_blank_lines_and_crlf_are_handled(autojump_clock: trio.abc.Clock) -> None:
    h = Harness(EchoCore())
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await h.to_bridge.send_all(b'\n\r\n  \n{"id":1}\r\n\n{"id":2}')
        await h.client_eof()  # the last line has no newline: it still counts
        server = LineReader(child.stdin_rx)
        assert ids(await server.lines(2)) == [1, 2]
        with pytest.raises(EOFError):
            await server.line()
        child.exit(0)


class TimerCore(EchoCore):
    """Asks for a timer at t=5; stops when it fires."""

    def __init__(self) -> None:
        super().__init__()
        self.deadline = 5.0

    def react(self, event: Event) -> list[Action]:
        if isinstance(event, TimerFired):
            self.deadline = None
            return [Stop(0)]
        return super().react(event)


async def test_timer_fires_at_the_core_deadline_not_before(
        autojump_clock: trio.abc.Clock) -> None:
    core = TimerCore()
    h = Harness(core)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        nursery.start_soon(child.serve)
        await trio.sleep(1)
        await h.send(b'{"id":1}')  # a message before the deadline does not fire the timer
    fired = [now for now, event in core.events if isinstance(event, TimerFired)]
    assert fired == [5.0]
    assert next(now for now, e in core.events if isinstance(e, MessageReceived)) == 1.0
    assert h.code == 0


async def test_a_client_that_never_reads_does_not_stall_the_server_direction(
        autojump_clock: trio.abc.Clock) -> None:
    # lockstep: every send_all waits for a receive that never comes.
    stuck_out, _never_read = trio.testing.lockstep_stream_one_way_pair()
    h = Harness(EchoCore(), client_out=stuck_out)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await child.write(*[b'{"id":"s%d","pad":"%s"}' % (i, b"x" * 1000) for i in range(500)])
        server = LineReader(child.stdin_rx)
        for i in range(50):
            await h.send(b'{"id":%d}' % i)
            assert ids([await server.line()]) == [i]
        nursery.start_soon(child.serve)
        await h.client_eof()
    assert h.code == 0
    # The stuck client writer cost at most the grace period at shutdown, not a hang.
    assert h.ended_at is not None and h.ended_at <= TIMING.shutdown_grace + 1


async def test_a_server_that_never_reads_does_not_stall_the_client_direction(
        autojump_clock: trio.abc.Clock) -> None:
    def stuck_child() -> FakeChild:
        child = FakeChild()
        child.stdin, child.stdin_rx = trio.testing.lockstep_stream_one_way_pair()
        return child

    h = Harness(EchoCore(), Spawner(stuck_child))
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await h.send(*[b'{"id":"c%d"}' % i for i in range(500)])
        for i in range(50):
            await child.write(b'{"id":%d}' % i)
            assert ids([await h.client.line()]) == [i]
        await h.client_eof()
    assert h.code == 0
    assert [sig for _, sig in child.signals] == [signal.SIGTERM]


async def test_lines_of_many_mebibytes_pass_whole(autojump_clock: trio.abc.Clock) -> None:
    big = b'{"id":1,"blob":"' + b"x" * (8 * 1024 * 1024) + b'"}'
    h = Harness(EchoCore())
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        server = LineReader(child.stdin_rx)
        for start in range(0, len(big), 100_000):  # arrives in many pieces
            await h.to_bridge.send_all(big[start:start + 100_000])
        await h.send(b"")
        assert await server.line() == big
        await child.write(big)
        assert await h.client.line() == big
        nursery.start_soon(child.serve)
        await h.client_eof()


class BurstCore(EchoCore):
    """Answers the first client message with three sends and a Stop, all in one batch."""

    def react(self, event: Event) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            return [*(Send("client", {"id": i}) for i in range(3)), Stop(3)]
        return super().react(event)


async def test_stop_flushes_what_was_queued_for_the_client(
        autojump_clock: trio.abc.Clock) -> None:
    h = Harness(BurstCore())
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        nursery.start_soon(child.serve)
        await h.send(b'{"id":"go"}')
        assert ids(await h.client.lines(3)) == [0, 1, 2]
        with pytest.raises(EOFError):
            await h.client.line()  # and then the client's stdout is closed
    assert h.code == 3


async def test_child_exit_comes_after_its_last_output(autojump_clock: trio.abc.Clock) -> None:
    core = EchoCore()
    h = Harness(core)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await child.write(b'{"id":1}', b'{"id":2}')
        child.exit(7)
    assert h.code == 7
    assert core.kinds() == ["ChildStarted", "MessageReceived", "MessageReceived",
                            "PeerClosed", "ChildExited"]


async def test_stubborn_child_gets_sigterm_then_sigkill_on_schedule(
        autojump_clock: trio.abc.Clock) -> None:
    h = Harness(EchoCore(), Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True)))
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        nursery.start_soon(child.serve)
        await trio.sleep(10)
        await h.client_eof()
    term, kill = TIMING.shutdown_grace, TIMING.shutdown_grace + TIMING.kill_grace
    assert child.signals == [(10 + term, signal.SIGTERM), (10 + kill, signal.SIGKILL)]
    assert child.code == -signal.SIGKILL
    assert h.code == 0


async def test_polite_child_exits_on_stdin_eof_without_signals(
        autojump_clock: trio.abc.Clock) -> None:
    h = Harness(EchoCore())
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        nursery.start_soon(child.serve)
        await h.client_eof()
    assert child.signals == []
    assert child.code == 0
    assert h.ended_at == 0


async def test_second_signal_skips_the_grace_periods(autojump_clock: trio.abc.Clock) -> None:
    slow = Timing(shutdown_grace=100.0, kill_grace=100.0)
    h = Harness(EchoCore(), Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True)),
                timing=slow, signals=True)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await trio.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)
        await trio.sleep(1)
        os.kill(os.getpid(), signal.SIGINT)
    assert h.code == 0
    assert h.ended_at is not None and h.ended_at < 10
    assert child.signals[-1][1] == signal.SIGKILL
    assert [log.fields["signal"] for log in h.logs if log.event == "signal.received"] == [
        "SIGTERM", "SIGINT"]


class RestartCore(EchoCore):
    """Restarts the child once, on the first ChildStarted."""

    def react(self, event: Event) -> list[Action]:
        if isinstance(event, ChildStarted) and self.kinds().count("ChildStarted") == 1:
            return [RestartChild()]
        return super().react(event)


async def test_restart_replaces_the_child_and_drops_the_old_ones_events(
        autojump_clock: trio.abc.Clock) -> None:
    core = RestartCore()
    spawner = Spawner()
    h = Harness(core, spawner)
    async with trio.open_nursery() as nursery:
        old = await h.start(nursery)
        # The old child's last words come after the restart began: stale, never delivered.
        nursery.start_soon(old.serve, b'{"id":"stale"}')
        # Queued before the new child exists: it must reach the new child, not the old one.
        await h.send(b'{"id":1}')
        while len(spawner.children) < 2:
            await trio.sleep(0.01)
        new = spawner.children[1]
        assert ids([await LineReader(new.stdin_rx).line()]) == [1]
        nursery.start_soon(new.serve)
        await h.client_eof()
    assert old.code == 0 and new.code == 0
    assert core.kinds().count("ChildStarted") == 2
    assert not any(isinstance(e, ChildExited) for _, e in core.events)
    assert not [e for _, e in core.events if isinstance(e, MessageReceived) and e.side == "server"]


async def test_restart_that_cannot_start_reports_exit_127(
        autojump_clock: trio.abc.Clock) -> None:
    spawner = Spawner()
    calls = 0

    async def flaky() -> FakeChild:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise ServerUnavailable("server command not found: gone")
        return await spawner()

    core = RestartCore()
    h = Harness(core, spawner)
    h.spawner = flaky  # type: ignore[assignment]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(h.run)
        await spawner.started.wait()
        nursery.start_soon(spawner.children[0].serve)
    assert h.code == 127
    assert h.events("child.start_failed") == ["child.start_failed"]


async def test_first_spawn_failure_raises_server_unavailable() -> None:
    async def missing() -> FakeChild:
        raise ServerUnavailable("server command not found: nope")

    h = Harness(EchoCore())
    h.spawner = missing  # type: ignore[assignment]
    with pytest.raises(ServerUnavailable):
        await h.run()


class ReadyCore(EchoCore):
    def react(self, event: Event) -> list[Action]:
        if isinstance(event, ChildStarted):
            return [NotifyReady()]
        return super().react(event)


async def test_notify_ready_and_stopping(autojump_clock: trio.abc.Clock) -> None:
    h = Harness(ReadyCore())
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        nursery.start_soon(child.serve)
        await trio.sleep(1)
        assert h.notified == ["READY=1"]
        await h.client_eof()
    assert h.notified == ["READY=1", "STOPPING=1"]


class NoStopCore(EchoCore):
    def react(self, event: Event) -> list[Action]:
        return [] if isinstance(event, PeerClosed) else super().react(event)


async def test_client_gone_is_reported_once(autojump_clock: trio.abc.Clock) -> None:
    core = NoStopCore()
    out, out_rx = trio.testing.memory_stream_one_way_pair()
    h = Harness(core, client_out=out)
    async with trio.open_nursery() as nursery:
        child = await h.start(nursery)
        await out_rx.aclose()  # the client stops reading: writes break
        await child.write(b'{"id":1}')
        await h.client_eof()  # and its stdin ends too
        await trio.sleep(1)
        assert [e for _, e in core.events if isinstance(e, PeerClosed)] == [PeerClosed("client")]
        nursery.cancel_scope.cancel()


class CrashingCore(EchoCore):
    def react(self, event: Event) -> list[Action]:
        if isinstance(event, MessageReceived):
            raise RuntimeError("core bug")
        return super().react(event)


async def test_a_crash_still_kills_the_child(autojump_clock: trio.abc.Clock) -> None:
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True))
    h = Harness(CrashingCore(), spawner)
    with pytest.RaisesGroup(RuntimeError, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            child = await h.start(nursery)
            await h.send(b'{"id":1}')
    assert child.code == -signal.SIGKILL


async def test_cancelling_the_bridge_kills_the_child(autojump_clock: trio.abc.Clock) -> None:
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True))
    h = Harness(EchoCore(), spawner)
    with trio.move_on_after(5):
        await h.run()
    assert spawner.children[0].code == -signal.SIGKILL
