"""The driver and its pumps, in process: order, timers, slow peers, long lines, stop, restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.core.codec import decode
from bridge.core.events import (
    Action,
    ChildExited,
    ChildStarted,
    Event,
    Log,
    MessageReceived,
    NotifyReady,
    PeerClosed,
    RestartChild,
    Send,
    Stop,
    TimerFired,
)
from bridge.errors import ServerUnavailable
from bridge.shell.runner import serve
from bridge.shell.settings import Timing
from tests.shell.fakes import (
    WAIT,
    EchoCore,
    FakeChild,
    Interrupt,
    InterruptCore,
    LineReader,
    Spawner,
)
from tests.shell.harness import FAST, Harness

REPO = Path(__file__).resolve().parents[2]
# How late a thread may wake on a loaded two-core machine and still count as on time.
SLACK = 0.35
# Condition waits end at their deadline, never before; allow for clock granularity only.
EARLY = 0.01


def ids(lines: list[bytes]) -> list[Any]:
    return [decode(line)["id"] for line in lines]


def padded(prefix: str, count: int) -> list[bytes]:
    """`count` messages of 1 KB each: together far more than a pipe's 64 KiB."""
    return [b'{"id":"%s%d","pad":"%s"}' % (prefix.encode(), i, b"x" * 1000)
            for i in range(count)]


def test_messages_flow_in_order_both_ways() -> None:
    core = EchoCore()
    with Harness(core) as h:
        child = h.start()
        h.send(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(child.lines(200)) == list(range(200))
        child.write(*[b'{"id":%d}' % i for i in range(200)])
        assert ids(h.client.lines(200)) == list(range(200))
        child.serve()
        h.client_eof()
        assert h.join() == 0
    assert core.kinds()[0] == "ChildStarted"
    assert core.kinds()[-1] == "PeerClosed"
    assert child.signals == []


def test_blank_lines_and_crlf_are_handled() -> None:
    with Harness(EchoCore()) as h:
        child = h.start()
        h.send_raw(b'\n\r\n  \n{"id":1}\r\n\n{"id":2}')
        h.client_eof()  # the last line has no newline: it still counts
        assert ids(child.lines(2)) == [1, 2]
        child.expect_eof()
        child.exit(0)
        assert h.join() == 0


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


def test_timer_fires_at_the_core_deadline_not_before() -> None:
    deadline = time.monotonic() + 0.5
    core = TimerCore(deadline)
    with Harness(core) as h:
        h.start().serve()
        h.send(b'{"id":1}')  # a message before the deadline does not fire the timer
        assert h.join() == 0
    fired = [now for now, _ in core.of(TimerFired)]
    assert len(fired) == 1
    assert deadline <= fired[0] < deadline + SLACK
    received = [now for now, e in core.of(MessageReceived) if e.side == "client"]
    assert len(received) == 1 and received[0] < deadline
    assert core.kinds().index("MessageReceived") < core.kinds().index("TimerFired")


class ArmingCore(TimerCore):
    """Moves its deadline to 0.3 s after the first client message."""

    def __init__(self, deadline: float | None) -> None:
        super().__init__(deadline)
        self.clock_asked = threading.Event()

    def next_deadline(self) -> float | None:
        # Asked by the clock (Driver.deadline), not by the driver after an event: the clock
        # goes to sleep on the answer.
        if sys._getframe(1).f_code.co_name == "deadline":
            self.clock_asked.set()
        return super().next_deadline()

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            self.deadline = now + 0.3
            return []
        return super().react(event, now)


@pytest.mark.parametrize("initial", [None, 60.0], ids=["no-deadline", "a-later-deadline"])
def test_an_earlier_deadline_wakes_the_clock(initial: float | None) -> None:
    # The clock sleeps until the deadline it last saw (or forever): an event that moves the
    # deadline earlier must wake it, or the timer fires a minute late (or never).
    core = ArmingCore(None if initial is None else time.monotonic() + initial)
    with Harness(core) as h:
        h.start().serve()
        assert core.clock_asked.wait(WAIT)  # the clock is asleep on the old deadline
        h.send(b'{"id":1}')
        assert h.join() == 0
    ((armed, _),) = [(now, e) for now, e in core.of(MessageReceived) if e.side == "client"]
    ((fired, _),) = core.of(TimerFired)
    assert armed + 0.3 <= fired < armed + 0.3 + SLACK


def test_a_client_that_never_reads_does_not_stall_the_server_direction() -> None:
    timing = Timing(shutdown_grace=0.3, kill_grace=0.3)
    with Harness(EchoCore(), timing=timing) as h:
        child = h.start()
        child.write(*padded("s", 500))  # ~500 KB for a client that reads nothing
        for i in range(50):
            h.send(b'{"id":%d}' % i)
            assert ids(child.lines(1)) == [i]
        child.serve()
        h.client_eof()
        eof_at = time.monotonic()
        assert h.join() == 0
        # The stuck client writer cost at most the grace period at shutdown, not a hang.
        assert h.ended_at is not None and h.ended_at - eof_at < timing.shutdown_grace + 1
        assert child.signals == []


def test_what_a_slow_client_could_not_take_arrives_whole_and_in_order() -> None:
    with Harness(EchoCore()) as h:
        child = h.start()
        sent = padded("s", 500)  # ~500 KB: most of it waits in the client's outlet
        child.write(*sent[:250])
        time.sleep(0.2)  # let the pipe fill and the outlet queue the rest, unread
        child.write(*sent[250:])
        assert h.client.lines(500) == sent
        child.serve()
        h.client_eof()
        assert h.join() == 0


def test_a_server_that_never_reads_does_not_stall_the_client_direction() -> None:
    spawner = Spawner(lambda: FakeChild(reads_stdin=False))
    with Harness(EchoCore(), spawner, timing=FAST) as h:
        child = h.start()
        h.send(*padded("c", 500))  # ~500 KB for a server that reads nothing
        for i in range(50):
            child.write(b'{"id":%d}' % i)
            assert ids([h.client.line()]) == [i]
        h.client_eof()
        assert h.join() == 0
    assert [sig for _, sig in child.signals] == [signal.SIGTERM]
    assert child.code == -signal.SIGTERM


def test_lines_of_many_mebibytes_pass_whole() -> None:
    big = b'{"id":1,"blob":"' + b"x" * (8 * 1024 * 1024) + b'"}'
    with Harness(EchoCore()) as h:
        child = h.start()
        for start in range(0, len(big), 100_000):  # arrives in many pieces
            h.send_raw(big[start:start + 100_000])
        h.send(b"")
        assert child.lines(1) == [big]
        child.write(big)
        assert h.client.line() == big
        child.serve()
        h.client_eof()
        assert h.join() == 0


class BurstCore(EchoCore):
    """Answers the first client message with three big sends, a Stop and a log, in one batch."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.side == "client":
            # 300 KB: more than the pipe holds, so most of it is still queued at the Stop.
            sends = [Send("client", {"id": i, "pad": "x" * 100_000}) for i in range(3)]
            return [*sends, Stop(3), Log("info", "burst.stopped")]
        return super().react(event, now)


def test_stop_flushes_what_was_queued_for_the_client() -> None:
    # The real core stops the same way: an answer to every pending request, then Stop.
    with Harness(BurstCore()) as h:
        # The log comes after the Stop, within the same batch: dawdle there. A shutdown that
        # began on the Stop alone (before the batch's sends were written) shows now, and then
        # closes the client's stdout under them; a correct one waits, and this times out.
        def dawdle(log: Log) -> None:
            if log.event == "burst.stopped":
                h.stopping.wait(0.5)

        h.log_hook = dawdle
        h.start().serve()
        h.send(b'{"id":"go"}')
        assert ids(h.client.lines(3)) == [0, 1, 2]
        h.client.expect_eof()  # and then the client's stdout is closed
        assert h.join() == 3


def test_child_exit_comes_after_its_last_output() -> None:
    core = EchoCore()
    with Harness(core) as h:
        child = h.start()
        child.write(b'{"id":1}', b'{"id":2}')
        child.exit(7)
        assert h.join() == 7
        assert ids(h.client.lines(2)) == [1, 2]
    assert core.kinds() == ["ChildStarted", "MessageReceived", "MessageReceived",
                            "PeerClosed", "ChildExited"]


def test_stubborn_child_gets_sigterm_then_sigkill_on_schedule() -> None:
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True, serving=True))
    with Harness(EchoCore(), spawner, timing=FAST) as h:
        child = h.start()
        h.client_eof()
        eof_at = time.monotonic()
        assert h.join() == 0
    (term_at, term), (kill_at, kill) = child.signals
    assert (term, kill) == (signal.SIGTERM, signal.SIGKILL)
    # SIGTERM a shutdown grace after stdin closed, SIGKILL a kill grace after that.
    assert FAST.shutdown_grace - EARLY <= term_at - eof_at < FAST.shutdown_grace + SLACK
    assert FAST.kill_grace - EARLY <= kill_at - term_at < FAST.kill_grace + SLACK
    assert child.code == -signal.SIGKILL
    assert h.events("child.terminating") == ["child.terminating"]
    assert h.events("child.killing") == ["child.killing"]


def test_polite_child_exits_on_stdin_eof_without_signals() -> None:
    # It takes a moment to exit after its stdin ends, as a real server does: no signal for it.
    with Harness(EchoCore(), Spawner(lambda: FakeChild(linger=0.1))) as h:
        child = h.start()
        child.serve()
        h.client_eof()
        eof_at = time.monotonic()
        assert h.join() == 0
        assert h.ended_at is not None
        # No grace period was waited out (TIMING's are 2 s each).
        assert h.ended_at - eof_at < 1.0
    assert child.signals == []
    assert child.code == 0


SECOND_SIGNAL = textwrap.dedent("""
    import json, os, sys, threading
    from bridge.shell.runner import serve
    from bridge.shell.settings import Timing
    from tests.shell.fakes import EchoCore, FakeChild, Spawner

    def say(**fields):
        print(json.dumps(fields), flush=True)

    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True, serving=True))
    threading.Thread(target=lambda: say(ready=spawner.nth(0).pid), daemon=True).start()
    client_in, to_bridge = os.pipe()
    from_bridge, client_out = os.pipe()
    logs = []
    code = serve(EchoCore(), client_in, client_out, spawner,
                 timing=Timing(shutdown_grace=100.0, kill_grace=100.0), log=logs.append,
                 notify=lambda state: say(notify=state), signals=True)
    child = spawner.children[0]
    say(code=code, child_code=child.code, child_signals=[s.name for _, s in child.signals],
        received=[log.fields["signal"] for log in logs if log.event == "signal.received"])
""")


def test_second_signal_skips_the_grace_periods() -> None:
    # Signals need serve on a main thread: this bridge runs in a process of its own.
    bridge = subprocess.Popen([sys.executable, "-c", SECOND_SIGNAL], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert bridge.stdout is not None
    said = LineReader(bridge.stdout.fileno())
    try:
        assert "ready" in json.loads(said.line())
        bridge.send_signal(signal.SIGTERM)
        # The first signal started the shutdown; its grace periods are 100 s each.
        assert json.loads(said.line()) == {"notify": "STOPPING=1"}
        bridge.send_signal(signal.SIGINT)
        hurried_at = time.monotonic()
        try:
            bridge.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("the second signal did not cut the grace periods short")
        result = json.loads(said.line())
    finally:
        if bridge.poll() is None:
            bridge.kill()
        _, err = bridge.communicate(timeout=WAIT)
    assert bridge.returncode == 0, err.decode()
    assert time.monotonic() - hurried_at < 5
    assert result["code"] == 0
    assert result["child_code"] == -signal.SIGKILL
    assert result["child_signals"][-1] == "SIGKILL"
    assert result["received"] == ["SIGTERM", "SIGINT"]


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
def test_restart_replaces_the_child_and_drops_the_old_ones_events(trigger: str) -> None:
    core = RestartCore(trigger)
    spawner = Spawner()
    # The old child's last words come after the restart began: stale, never delivered.
    spawner.factory = lambda: (
        FakeChild() if spawner.children else FakeChild(serving=True, farewell=b'{"id":"stale"}'))
    with Harness(core, spawner) as h:
        old = h.start()
        asks = [b'{"id":"restart"}'] if trigger == "on-request" else []
        # Sent while the old child is being replaced: it must reach the new child only.
        h.send(*asks, b'{"id":1}')
        new = spawner.nth(1)
        assert ids(new.lines(1)) == [1]
        core.wait_for(lambda: core.kinds().count("ChildStarted") == 2, "the new ChildStarted")
        new.serve()
        h.client_eof()
        assert h.join() == 0
    assert old.code == 0 and new.code == 0
    assert old.signals == [] and new.signals == []
    assert old.seen == []
    assert core.kinds().count("ChildStarted") == 2
    assert not core.of(ChildExited)
    assert not [e for _, e in core.of(MessageReceived) if e.side == "server"]


@TRIGGERS
def test_restart_that_cannot_start_reports_exit_127(trigger: str) -> None:
    spawner = Spawner(lambda: FakeChild(serving=True))

    def flaky() -> FakeChild:
        if spawner.children:
            raise ServerUnavailable("server command not found: gone")
        return spawner()  # type: ignore[return-value]

    core = RestartCore(trigger)
    with Harness(core, spawner, spawn=flaky) as h:
        h.start()
        h.send(b'{"id":"restart"}')
        assert h.join() == 127
    assert h.events("child.start_failed") == ["child.start_failed"]
    assert [e for _, e in core.of(ChildExited)] == [ChildExited(127)]
    assert spawner.children[0].code == 0


def test_first_spawn_failure_raises_server_unavailable() -> None:
    def missing() -> FakeChild:
        raise ServerUnavailable("server command not found: nope")

    with Harness(EchoCore(), spawn=missing) as h:
        h.run_in_background()
        with pytest.raises(ServerUnavailable, match="nope"):
            h.join()
        # serve owned the client's fds and closed them: the client sees both ends go.
        h.client.expect_eof()
        with pytest.raises(BrokenPipeError):
            h.send(b'{"id":1}')


class ReadyCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildStarted):
            return [NotifyReady()]
        return super().react(event, now)


def test_notify_ready_and_stopping() -> None:
    core = ReadyCore()
    with Harness(core) as h:
        h.start().serve()
        h.send(b'{"id":1}')
        assert h.client.line() == b'{"id":1}'  # serving, so ChildStarted was handled
        assert h.notified == ["READY=1"]
        h.client_eof()
        assert h.join() == 0
    assert h.notified == ["READY=1", "STOPPING=1"]


class NoStopCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        return [] if isinstance(event, PeerClosed) else super().react(event, now)


def test_client_gone_is_reported_once() -> None:
    core = NoStopCore()
    with Harness(core) as h:
        child = h.start()
        h.stop_reading()  # the client stops reading: writes break
        child.write(b'{"id":1}')
        # A broken stdout alone means the client is gone, though its stdin is still open.
        core.wait_for(lambda: bool(core.of(PeerClosed)), "PeerClosed")
        # And then its stdin ends too; the unterminated last line comes with that EOF, in the
        # same batch, so once the core has it, the EOF has been dealt with as well.
        h.send_raw(b'{"id":"last"}')
        h.client_eof()
        core.wait_for(lambda: any(e.message == b'{"id":"last"}'
                                  for _, e in core.of(MessageReceived)), "the last line")
        child.exit(0)
        assert h.join() == 0
    assert [e for _, e in core.of(PeerClosed)] == [PeerClosed("client"), PeerClosed("server")]
    assert core.kinds()[-1] == "ChildExited"


class CrashingCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived):
            raise RuntimeError("core bug")
        return super().react(event, now)


def test_a_crash_still_kills_the_child() -> None:
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True))
    with Harness(CrashingCore(), spawner) as h:
        child = h.start()
        h.send(b'{"id":1}')
        with pytest.raises(RuntimeError, match="core bug"):
            h.join()
        h.client.expect_eof()
    assert child.code == -signal.SIGKILL
    assert [sig for _, sig in child.signals] == [signal.SIGKILL]  # no grace for a crash


def test_interrupting_the_bridge_kills_the_child() -> None:
    # What was cancellation under trio: a BaseException escaping from serve's own thread.
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True))
    with Harness(InterruptCore(), spawner) as h:
        child = h.start()
        h.send(b'{"id":"interrupt"}')
        with pytest.raises(Interrupt):
            h.join()
        assert child.code == -signal.SIGKILL  # already when serve is gone
        h.client.expect_eof()
    assert [sig for _, sig in child.signals] == [signal.SIGKILL]


class LateCore(InterruptCore):
    """Answers the child's exit only once serve has returned (a slow thread, made certain)."""

    serve_done = threading.Event()

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildExited):
            self.serve_done.wait(WAIT)
        return super().react(event, now)


def test_events_after_an_interrupted_bridge_go_nowhere() -> None:
    # After serve is gone, its threads may still report (here: the killed child's exit, which
    # makes the core Stop). Nothing they do may touch the fds serve closed (they may already
    # belong to someone else) or die with an exception.
    core = LateCore()
    spawner = Spawner(lambda: FakeChild(ignore_eof=True, ignore_term=True))
    with Harness(core, spawner) as h:
        core.serve_done = h.done
        h.start()
        h.send(b'{"id":"interrupt"}')
        with pytest.raises(Interrupt):
            h.join()
        # The killed child's waiter reports its exit (and the core answers with a Stop).
        for thread in h.threads("wait-server-1"):
            thread.join(WAIT)
            assert not thread.is_alive()
        assert not h.thread_errors, [str(args.exc_value) for args in h.thread_errors]



def test_stdin_and_stdout_as_one_socket_still_read_and_write() -> None:
    # systemd's StandardInput=socket (and a terminal) give the bridge one file description
    # for both: the client's outlet makes it non-blocking, and reading must still wait.
    ours, theirs = socket.socketpair()
    spawner = Spawner()
    result: list[int] = []
    client_in, client_out = os.dup(ours.fileno()), os.dup(ours.fileno())
    ours.close()
    bridge = threading.Thread(target=lambda: result.append(serve(
        EchoCore(), client_in, client_out, spawner)), daemon=True)
    bridge.start()
    try:
        child = spawner.nth(0)
        time.sleep(0.2)  # an idle client: a reader that gave up on EAGAIN would end it now
        assert bridge.is_alive()
        theirs.sendall(b'{"id":1}\n{"id":2}\n')
        assert ids(child.lines(2)) == [1, 2]
        child.write(b'{"id":3}')
        client = LineReader(theirs.fileno())
        assert ids(client.lines(1)) == [3]
        child.serve()
        theirs.shutdown(socket.SHUT_WR)
        bridge.join(WAIT)
        assert not bridge.is_alive() and result == [0]
    finally:
        theirs.close()
        spawner.close()
