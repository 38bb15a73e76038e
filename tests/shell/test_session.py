"""One session in process: order, timers, slow peers, long lines, stop, restart, shutdown.

Timeouts run on trio's virtual clock (autojump_clock): a grace period of seconds costs the test
nothing, and the time a thing happened is exact, not "within some slack".
"""

from __future__ import annotations

import os
import signal
import socket
from typing import Any

import pytest
import trio

from bridge.core.events import (
    Action,
    ChildExited,
    ChildStarted,
    Event,
    Log,
    MessageReceived,
    MessageTooLarge,
    NotifyReady,
    PeerClosed,
    RestartChild,
    Send,
    Status,
    Stop,
    TimerFired,
)
from bridge.errors import ServerUnavailable
from bridge.shell import logs
from bridge.shell.clients.fd_client import FdClient
from bridge.shell.fdio import fdio
from bridge.shell.fdio.outlet import HIGH_WATER
from bridge.shell.servers.start_failure import NotStarted
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import Session, SessionSettings
from tests.shell.fakes import EchoCore, FakeChild, LineStream, Spawner, ids
from tests.shell.harness import FAST, TIMING, bridged


def padded(prefix: str, count: int) -> list[bytes]:
    """`count` messages of 1 KB each: together far more than a pipe's 64 KiB."""
    return [b'{"id":"%s%d","pad":"%s"}' % (prefix.encode(), i, b"x" * 1000)
            for i in range(count)]


async def test_messages_flow_in_order_both_ways(autojump_clock: Any) -> None:
    core = EchoCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        await h.client.send(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(await child.lines(200)) == list(range(200))
        await child.write(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(await h.client.lines(200)) == list(range(200))
        child.serve()
        await h.client.close_writing()
        assert await h.join() == 0
    assert core.kinds()[0] == "ChildStarted"
    assert core.kinds()[-1] == "PeerClosed"
    assert child.signals == []


async def test_the_first_write_to_the_client_is_told_then_the_outlet_takes_over(
        autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        assert h.session is not None and h.fd_client is not None
        written = h.fd_client.written
        await h.client.send(b'{"id":1}')
        await child.lines(1)
        assert not written.is_set()  # the server has it; the client has nothing yet
        await child.write(b'{"id":1}', b'{"id":2}')
        assert ids(await h.client.lines(2)) == [1, 2]
        assert written.is_set()
        assert h.fd_client.batch is not None
        assert h.fd_client.batch.peer is h.fd_client.outlet  # no wrapper per write any more
        child.serve()
        await h.client.close_writing()
        assert await h.join() == 0


async def test_blank_lines_and_crlf_are_handled(autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        await h.client.send_raw(b'\n\r\n  \n{"id":1}\r\n\n{"id":2}')
        await h.client.close_writing()  # the last line has no newline: it still counts
        assert ids(await child.lines(2)) == [1, 2]
        await child.expect_eof()
        child.exit(0)
        assert await h.join() == 0


class TimerCore(EchoCore):
    """Asks for a timer at `deadline`; stops when it fires."""

    def __init__(self, deadline: float | None) -> None:
        super().__init__()
        self.deadline = deadline

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, TimerFired):
            self.deadline = None
            return [Stop(0)]
        return super().react(event, now)


async def test_timer_fires_at_the_core_deadline_not_before(autojump_clock: Any) -> None:
    deadline = trio.current_time() + 0.5
    core = TimerCore(deadline)
    async with bridged(core) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(b'{"id":1}')  # a message before the deadline does not fire it
        assert await h.join() == 0
    fired = [now for now, _ in core.of(TimerFired)]
    assert fired == [deadline]
    received = [now for now, e in core.of(MessageReceived) if e.side == "client"]
    assert len(received) == 1 and received[0] < deadline


class ArmingCore(TimerCore):
    """Moves its deadline to 0.3 s after the first client message."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            self.deadline = now + 0.3
            return []
        return super().react(event, now)


@pytest.mark.parametrize("initial", [None, 60.0], ids=["no-deadline", "a-later-deadline"])
async def test_an_earlier_deadline_wakes_the_clock(autojump_clock: Any,
                                                   initial: float | None) -> None:
    # The clock sleeps until the deadline it last saw (or forever): an event that moves the
    # deadline earlier must wake it, or the timer fires a minute late (or never).
    core = ArmingCore(None if initial is None else trio.current_time() + initial)
    async with bridged(core) as h:
        (await h.spawner.nth(0)).serve()
        await trio.sleep(1)  # the clock is asleep on the old deadline
        await h.client.send(b'{"id":1}')
        assert await h.join() == 0
    ((armed, _),) = [(now, e) for now, e in core.of(MessageReceived) if e.side == "client"]
    ((fired, _),) = core.of(TimerFired)
    assert fired == pytest.approx(armed + 0.3)


async def test_a_client_that_never_reads_does_not_stall_the_server_direction(
        autojump_clock: Any) -> None:
    async with bridged(EchoCore(), timing=FAST) as h:
        child = await h.spawner.nth(0)
        await child.write(*padded("s", 500))  # ~500 KB for a client that reads nothing
        for i in range(50):
            await h.client.send(b'{"id":%d}' % i)
            assert ids(await child.lines(1)) == [i]
        child.serve()
        await h.client.close_writing()
        eof_at = trio.current_time()
        assert await h.join() == 0
        # The stuck client cost the drain timeout at shutdown, not a hang.
        assert h.ended_at == pytest.approx(eof_at + FAST.drain_timeout)
        assert child.signals == []
        (dropped,) = h.events("client.dropped")
        assert dropped["messages"] > 0 and dropped["bytes"] > 0


async def test_what_a_slow_client_could_not_take_arrives_whole_and_in_order(
        autojump_clock: Any) -> None:
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        sent = padded("s", 500)  # ~500 KB: most of it waits in the client's outlet
        await child.write(*sent[:250])
        await trio.sleep(1)  # the pipe fills and the outlet queues the rest, unread
        await child.write(*sent[250:])
        assert await h.client.lines(500) == sent
        child.serve()
        await h.client.close_writing()
        assert await h.join() == 0


async def test_a_server_that_never_reads_does_not_stall_the_client_direction(
        autojump_clock: Any) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, reads_stdin=False))
    async with bridged(EchoCore(), spawner, timing=FAST) as h:
        child = await spawner.nth(0)
        await h.client.send(*padded("c", 500))  # ~500 KB for a server that reads nothing
        for i in range(50):
            await child.write(b'{"id":%d}' % i)
            assert ids([await h.client.line()]) == [i]
        await h.client.close_writing()
        assert await h.join() == 0
    assert [sig for _, sig in child.signals] == [signal.SIGTERM]
    assert child.code == -signal.SIGTERM


async def test_a_client_that_stops_reading_stops_the_server_being_read(
        autojump_clock: Any) -> None:
    # Back-pressure: past the high-water mark the bridge reads no more of the server, so the
    # server's own writes block (the pipe fills) and the bridge's memory stays flat.
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        flood = padded("n", 4 * HIGH_WATER // 1000)  # four high-water marks of notifications
        written = trio.Event()

        async def write_flood() -> None:
            await child.write(*flood)
            written.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_flood)
            await trio.sleep(5)
            assert not written.is_set(), "the server wrote everything: no back-pressure"
            assert h.fd_client is not None and h.fd_client.outlet is not None
            queued = h.fd_client.outlet.queued
            assert HIGH_WATER < queued < HIGH_WATER + 70_000  # one more read, no more
            assert await h.client.lines(len(flood)) == flood  # reading again: all of it
        child.serve()
        await h.client.close_writing()
        assert await h.join() == 0


async def test_lines_of_many_mebibytes_pass_whole(autojump_clock: Any) -> None:
    big = b'{"id":1,"blob":"' + b"x" * (8 * 1024 * 1024) + b'"}'
    async with bridged(EchoCore()) as h:
        child = await h.spawner.nth(0)
        for start in range(0, len(big), 100_000):  # arrives in many pieces
            await h.client.send_raw(big[start:start + 100_000])
        await h.client.send(b"")
        assert await child.lines(1) == [big]
        await child.write(big)
        assert await h.client.line() == big
        child.serve()
        await h.client.close_writing()
        assert await h.join() == 0


async def test_a_line_over_the_limit_reaches_the_core_as_its_two_ends_only(
        autojump_clock: Any) -> None:
    core = EchoCore()
    long = b'{"id":7,"pad":"' + b"x" * 9000 + b'","last":"end"}'
    async with bridged(core, limit=1000) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(long, b'{"id":8}')
        assert ids([await h.client.line()]) == [8]
        await h.client.close_writing()
        assert await h.join() == 0
    ((_, too_large),) = core.of(MessageTooLarge)
    assert too_large.side == "client" and too_large.limit == 1000
    assert too_large.head == long[:4096] and too_large.tail == long[-4096:]


class BurstCore(EchoCore):
    """Answers the first client message with three big sends, a Stop and a log, in one batch."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            # 3 MB: more than the pipe holds even widened, so much is still queued at the Stop.
            sends = [Send("client", {"id": i, "pad": "x" * 1_000_000}) for i in range(3)]
            return [*sends, Stop(3), Log("info", "burst.stopped")]
        return super().react(event, now)


async def test_stop_flushes_what_was_queued_for_the_client(autojump_clock: Any) -> None:
    # The real core stops the same way: an answer to every pending request, then Stop.
    async with bridged(BurstCore()) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(b'{"id":"go"}')
        await h.stopping.wait()
        await trio.sleep(3)  # a client slower than the grace periods: still gets everything
        assert ids(await h.client.lines(3)) == [0, 1, 2]
        await h.client.expect_eof()  # and then the client's stdout is closed
        assert await h.join() == 3
        assert h.events("client.dropped") == []


async def test_a_client_that_stops_reading_at_shutdown_is_given_up_after_drain_timeout(
        autojump_clock: Any) -> None:
    async with bridged(BurstCore(), timing=FAST) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(b'{"id":"go"}')
        await h.stopping.wait()
        stopping_at = trio.current_time()
        assert await h.join() == 3
        assert h.ended_at == pytest.approx(stopping_at + FAST.drain_timeout)
        (dropped,) = h.events("client.dropped")
        # The pipe, widened for messages longer than it, took 1 MiB: the first message and
        # part of the second; the rest was cut or never sent.
        assert dropped["messages"] == 2
        assert dropped["bytes"] == 3 * len(b'{"id":0,"pad":""}\n') + 3_000_000 - fdio.PIPE_SIZE


async def test_child_exit_comes_after_its_last_output(autojump_clock: Any) -> None:
    core = EchoCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        await child.write(b'{"id":1}', b'{"id":2}')
        child.exit(7)
        assert await h.join() == 7
        assert ids(await h.client.lines(2)) == [1, 2]
    assert core.kinds() == ["ChildStarted", "MessageReceived", "MessageReceived",
                            "PeerClosed", "ChildExited"]


async def test_stubborn_child_gets_sigterm_then_sigkill_on_schedule(autojump_clock: Any) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, ignore_eof=True, ignore_term=True,
                                                serving=True))
    async with bridged(EchoCore(), spawner, timing=FAST) as h:
        child = await spawner.nth(0)
        await h.client.close_writing()
        eof_at = trio.current_time()
        assert await h.join() == 0
    (term_at, term), (kill_at, kill) = child.signals
    assert (term, kill) == (signal.SIGTERM, signal.SIGKILL)
    # SIGTERM a shutdown grace after stdin closed, SIGKILL a kill grace after that.
    assert term_at == pytest.approx(eof_at + FAST.shutdown_grace)
    assert kill_at == pytest.approx(term_at + FAST.kill_grace)
    assert child.code == -signal.SIGKILL
    assert len(h.events("child.terminating")) == 1
    assert len(h.events("child.killing")) == 1


async def test_polite_child_exits_on_stdin_eof_without_signals(autojump_clock: Any) -> None:
    # It takes a moment to exit after its stdin ends, as a real server does: no signal for it.
    spawner = Spawner(lambda nursery: FakeChild(nursery, linger=0.1))
    async with bridged(EchoCore(), spawner) as h:
        child = await spawner.nth(0)
        child.serve()
        await h.client.close_writing()
        eof_at = trio.current_time()
        assert await h.join() == 0
        assert h.ended_at == pytest.approx(eof_at + 0.1)  # no grace period was waited out
    assert child.signals == []
    assert child.code == 0


async def test_second_shutdown_request_skips_the_grace_periods(autojump_clock: Any) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, ignore_eof=True, ignore_term=True,
                                                serving=True))
    slow = TIMING.__class__(shutdown_grace=100.0, kill_grace=100.0, drain_timeout=100.0)
    async with bridged(EchoCore(), spawner, timing=slow) as h:
        child = await spawner.nth(0)
        assert h.session is not None
        h.session.shut_down()
        await h.stopping.wait()
        await trio.sleep(5)  # into the first grace period of 100 s
        hurried_at = trio.current_time()
        h.session.shut_down()
        assert await h.join() == 0
        assert h.ended_at == pytest.approx(hurried_at)
    assert [sig for _, sig in child.signals] == [signal.SIGTERM, signal.SIGKILL]
    assert child.code == -signal.SIGKILL


class RestartCore(EchoCore):
    """Restarts the child once: on the first ChildStarted, or when the client asks."""

    def __init__(self, trigger: str) -> None:
        super().__init__()
        self.trigger = trigger

    def react(self, event: Event, now: float) -> list[Action]:
        match event:
            case ChildStarted() if self.trigger == "on-start":
                if self.kinds().count("ChildStarted") == 1:
                    return [RestartChild()]
            case MessageReceived(message=b'{"id":"restart"}') if self.trigger == "on-request":
                return [RestartChild()]
        return super().react(event, now)


# The core may ask for a restart as soon as it hears of the first child, or any time later.
TRIGGERS = pytest.mark.parametrize("trigger", ["on-start", "on-request"])


@TRIGGERS
async def test_restart_replaces_the_child_and_drops_the_old_ones_events(
        autojump_clock: Any, trigger: str) -> None:
    core = RestartCore(trigger)
    spawner = Spawner()
    # The old child's last words come after the restart began: stale, never delivered.
    spawner.factory = lambda nursery: (
        FakeChild(nursery) if spawner.children
        else FakeChild(nursery, serving=True, farewell=b'{"id":"stale"}'))
    async with bridged(core, spawner) as h:
        old = await spawner.nth(0)
        asks = [b'{"id":"restart"}'] if trigger == "on-request" else []
        # Sent while the old child is being replaced: it must reach the new child only.
        await h.client.send(*asks, b'{"id":1}')
        new = await spawner.nth(1)
        assert ids(await new.lines(1)) == [1]
        await core.wait_for(lambda: core.kinds().count("ChildStarted") == 2, "ChildStarted")
        new.serve()
        await h.client.close_writing()
        assert await h.join() == 0
    assert old.code == 0 and new.code == 0
    assert old.signals == [] and new.signals == []
    assert old.seen == []
    assert core.kinds().count("ChildStarted") == 2
    assert not core.of(ChildExited)
    assert not [e for _, e in core.of(MessageReceived) if e.side == "server"]


async def test_a_replaced_child_that_writes_on_while_it_stops_still_exits_on_its_own(
        autojump_clock: Any) -> None:
    # Its reader was cancelled with it, but its stdout is still read, to no one: a farewell
    # larger than a pipe holds would otherwise block the child (or, the pipe closed, kill it)
    # until SIGTERM. None of it reaches the core.
    core = RestartCore("on-request")
    spawner = Spawner()
    farewell = b'{"id":"stale","pad":"' + b"x" * (1 << 20) + b'"}'
    spawner.factory = lambda nursery: (
        FakeChild(nursery) if spawner.children
        else FakeChild(nursery, serving=True, farewell=farewell))
    async with bridged(core, spawner) as h:
        old = await spawner.nth(0)
        await h.client.send(b'{"id":"restart"}', b'{"id":1}')
        new = await spawner.nth(1)
        assert ids(await new.lines(1)) == [1]
        new.serve()
        await h.client.close_writing()
        assert await h.join() == 0
    assert old.code == 0 and old.signals == []
    assert not [e for _, e in core.of(MessageReceived) if e.side == "server"]


class RestartOnEofCore(EchoCore):
    """Restarts the child when its output ends, once; then echoes."""

    def react(self, event: Event, now: float) -> list[Action]:
        match event:
            case PeerClosed(side="server") if self.kinds().count("ChildStarted") == 1:
                return [RestartChild()]
            case ChildExited():
                return []  # recorded: the test asserts none comes from the replaced child
        return super().react(event, now)


@pytest.mark.parametrize("attempt", range(12))
async def test_the_exit_of_a_child_being_replaced_never_reaches_the_core(
        autojump_clock: Any, attempt: int) -> None:
    # A child that dies reports its end of file, then its exit; the core restarts it on the
    # first. trio runs ready tasks in a shuffled order, so the waiter that would report the
    # exit may run before the restart's task begins: the old child must be retired already.
    core = RestartOnEofCore()
    async with bridged(core) as h:
        (await h.spawner.nth(0)).exit(1)
        await h.spawner.nth(1)
        await core.wait_for(lambda: core.kinds().count("ChildStarted") == 2, "ChildStarted")
        await trio.sleep(2 * TIMING.kill_grace)  # every wait of the old child has ended
        (await h.spawner.nth(1)).serve()
        await h.client.close_writing()
        assert await h.join() == 0
    assert core.of(ChildExited) == []


@TRIGGERS
async def test_restart_that_cannot_start_reports_exit_127(autojump_clock: Any,
                                                         trigger: str) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))

    def flaky() -> FakeChild:
        if spawner.children:
            raise NotStarted(127, "server command not found: 'gone' is in none of PATH=/x")
        return spawner()  # type: ignore[no-any-return]

    core = RestartCore(trigger)
    async with bridged(core, spawner, spawn=flaky) as h:
        await spawner.nth(0)
        await h.client.send(b'{"id":"restart"}')
        assert await h.join() == 127
    assert len(h.events("child.start_failed")) == 1
    assert [e for _, e in core.of(ChildExited)] == [
        ChildExited(127, cause="server command not found: 'gone' is in none of PATH=/x")]
    assert spawner.children[0].code == 0


async def test_a_first_start_that_fails_reaches_the_core_as_an_exit_with_its_cause(
        autojump_clock: Any) -> None:
    def missing() -> FakeChild:
        raise NotStarted(126, "server command not executable: /srv/x; make it executable")

    core = EchoCore()
    async with bridged(core, spawn=missing) as h:
        assert await h.join() == 126  # EchoCore stops with the exit's status
        # The session owned the client's fds and closed them: the client sees its input end.
        await h.client.expect_eof()
    assert core.kinds()[0] == "ChildExited"
    assert [e for _, e in core.of(ChildExited)] == [
        ChildExited(126, cause="server command not executable: /srv/x; make it executable")]
    assert [(e["code"], e["reason"]) for e in h.events("child.start_failed")] == [
        (126, "server command not executable: /srv/x; make it executable")]


async def test_a_start_failure_without_a_cause_of_its_own_is_127(autojump_clock: Any) -> None:
    def missing() -> FakeChild:
        raise ServerUnavailable("cannot start it")

    core = EchoCore()
    async with bridged(core, spawn=missing) as h:
        assert await h.join() == 127
    assert [e for _, e in core.of(ChildExited)] == [ChildExited(127, cause="cannot start it")]


class ReadyCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildStarted):
            return [NotifyReady()]
        return super().react(event, now)


async def test_notify_ready_and_stopping(autojump_clock: Any) -> None:
    async with bridged(ReadyCore()) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(b'{"id":1}')
        assert await h.client.line() == b'{"id":1}'  # serving, so ChildStarted was handled
        assert h.notified == ["READY=1"]
        await h.client.close_writing()
        assert await h.join() == 0
    assert h.notified == ["READY=1", "STOPPING=1"]


class NoStopCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        return [] if isinstance(event, PeerClosed) else super().react(event, now)


async def test_client_gone_is_reported_once(autojump_clock: Any) -> None:
    core = NoStopCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        await h.client.close_reading()  # the client stops reading: writes break
        await child.write(b'{"id":1}')
        # A broken stdout alone means the client is gone, though its stdin is still open.
        await core.wait_for(lambda: bool(core.of(PeerClosed)), "PeerClosed")
        # And then its stdin ends too, the unterminated last line with it.
        await h.client.send_raw(b'{"id":"last"}')
        await h.client.close_writing()
        await core.wait_for(lambda: any(e.message == b'{"id":"last"}'
                                        for _, e in core.of(MessageReceived)), "the last line")
        child.exit(0)
        assert await h.join() == 0
    assert [e for _, e in core.of(PeerClosed)] == [PeerClosed("client", gone=True),
                                                PeerClosed("server")]
    assert core.kinds()[-1] == "ChildExited"


async def test_a_closed_client_that_then_stops_reading_is_told_gone_too(
        autojump_clock: Any) -> None:
    core = NoStopCore()
    async with bridged(core) as h:
        child = await h.spawner.nth(0)
        await h.client.close_writing()  # its stdin ends; its stdout is still read
        await core.wait_for(lambda: bool(core.of(PeerClosed)), "PeerClosed")
        await h.client.close_reading()
        await child.write(b'{"id":1}')  # an answer nobody can read any more
        await core.wait_for(lambda: len(core.of(PeerClosed)) == 2, "the second PeerClosed")
        child.exit(0)
        assert await h.join() == 0
    assert [e for _, e in core.of(PeerClosed)] == [
        PeerClosed("client"), PeerClosed("client", gone=True), PeerClosed("server")]


class CrashingCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived):
            raise RuntimeError("core bug")
        return super().react(event, now)


async def test_a_crash_still_kills_the_child(autojump_clock: Any) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, ignore_eof=True, ignore_term=True))
    async with bridged(CrashingCore(), spawner) as h:
        child = await spawner.nth(0)
        await h.client.send(b'{"id":1}')
        with pytest.raises(BaseExceptionGroup) as crashed:
            await h.join()
        assert crashed.group_contains(RuntimeError, match="core bug")
        assert child.code == -signal.SIGKILL  # already when the session is gone
        await h.client.expect_eof()
    assert [sig for _, sig in child.signals] == [signal.SIGKILL]  # no grace for a crash


async def test_cancelling_the_session_kills_the_child(autojump_clock: Any) -> None:
    spawner = Spawner(lambda nursery: FakeChild(nursery, ignore_eof=True, ignore_term=True))
    async with bridged(EchoCore(), spawner) as h:
        child = await spawner.nth(0)
        h.cancel()
        with trio.fail_after(1):
            await h.done.wait()
        assert child.code == -signal.SIGKILL  # already when the session is gone
        await h.client.expect_eof()
    assert [sig for _, sig in child.signals] == [signal.SIGKILL]


async def test_stdin_and_stdout_as_one_socket_still_read_and_write(autojump_clock: Any) -> None:
    # systemd's StandardInput=socket, a daemon's connection (and a terminal) give the bridge
    # one file description for both directions: the outlet makes it non-blocking, and
    # reading must still wait rather than take EAGAIN for EOF.
    ours, theirs = socket.socketpair()
    spawner = Spawner()
    async with trio.open_nursery() as nursery:
        spawner.nursery = nursery
        session = Session(EchoCore(), logs.logger())
        result: list[int] = []
        fds = os.dup(ours.fileno()), os.dup(ours.fileno())
        ours.close()

        async def run() -> None:
            client = FdClient(*fds, logs.logger())
            servers = Servers(SessionSettings(), spawn=spawner)
            result.append(await session.run(client, servers.opener(logs.logger())))

        nursery.start_soon(run)
        child = await spawner.nth(0)
        await trio.sleep(1)  # an idle client: a reader that gave up on EAGAIN would end it now
        assert not result
        client = LineStream(os.dup(theirs.fileno()), os.dup(theirs.fileno()))
        await client.send(b'{"id":1}', b'{"id":2}')
        assert ids(await child.lines(2)) == [1, 2]
        await child.write(b'{"id":3}')
        assert ids(await client.lines(1)) == [3]
        child.serve()
        theirs.shutdown(socket.SHUT_WR)
        with trio.fail_after(5):
            await client.expect_eof()
        await client.aclose()
        theirs.close()
    assert result == [0]


async def test_debug_logs_name_each_message_and_its_size(autojump_clock: Any) -> None:
    async with bridged(EchoCore(), debug=True) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.send(b'{"id":1}')
        assert await h.client.line() == b'{"id":1}'
        await h.client.close_writing()
        assert await h.join() == 0
    hops = [(e["event"], e["side"], e["bytes"]) for e in h.logs
            if e["event"] in ("message.received", "message.sent")]
    assert hops == [("message.received", "client", 8), ("message.sent", "server", 9),
                    ("message.received", "server", 8), ("message.sent", "client", 9)]


class StatusCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildStarted):
            return [Status("serving; the server restarted 1 time")]
        return super().react(event, now)


async def test_status_lines_reach_the_service_manager(autojump_clock: Any) -> None:
    async with bridged(StatusCore()) as h:
        (await h.spawner.nth(0)).serve()
        await h.client.close_writing()
        assert await h.join() == 0
    assert h.notified == ["STATUS=serving; the server restarted 1 time", "STOPPING=1"]
