"""Real server processes: pipes, the shutdown sequence, process groups, exec failures.

These run on the real clock: the operating system's own timing is what is tested.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from bridge.shell.servers.child import spawn_process
from bridge.shell.settings import Timing
from tests.shell.fakes import WAIT, EchoCore, LineStream, Spawner
from tests.shell.harness import FAST, bridged

# How much later than its grace periods a shutdown may end on a loaded two-core machine.
SLACK = 1.5

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line); sys.stdout.flush()\n"

# Ignores stdin EOF and SIGTERM, starts a helper in its process group, reports both pids.
STUBBORN = textwrap.dedent("""
    import json, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helper = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print(json.dumps({"id": 1, "pid": __import__("os").getpid(), "helper": helper.pid}),
          flush=True)
    sys.stdin.read()
    while True:
        time.sleep(1)
""")


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting for a parent that is not us."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_until(done: Callable[[], bool]) -> bool:
    with trio.move_on_after(WAIT):
        while not done():
            await trio.sleep(0.02)
    return done()


async def wait_gone(pid: int) -> bool:
    return await wait_until(lambda: gone(pid))


def real(script: str, *args: str) -> Spawner:
    """A spawner of real processes running `python -c script args...`."""
    return Spawner(lambda _: spawn_process([sys.executable, "-c", script, *args]))


async def test_real_pipes_carry_lines_both_ways_including_long_ones() -> None:
    big = b'{"id":2,"blob":"' + b"y" * (4 * 1024 * 1024) + b'"}'
    async with bridged(EchoCore(), real(ECHO), timing=FAST) as h:
        await h.client.send(b'{"id":1}', big)
        assert await h.client.lines(2) == [b'{"id":1}', big]
        await h.client.close_writing()
        assert await h.join() == 0


async def test_a_child_ignoring_eof_and_sigterm_dies_with_its_group() -> None:
    async with bridged(EchoCore(), real(STUBBORN), timing=FAST) as h:
        pids = json.loads(await h.client.line())
        await h.client.close_writing()
        eof_at = trio.current_time()
        assert await h.join() == 0
        assert h.ended_at is not None
        # Both grace periods were waited out, and not much more.
        grace = FAST.shutdown_grace + FAST.kill_grace
        assert grace <= h.ended_at - eof_at < grace + SLACK
    assert len(h.events("child.terminating")) == 1
    assert len(h.events("child.killing")) == 1
    assert gone(pids["pid"])
    assert await wait_gone(pids["helper"])


async def test_cancelling_the_session_kills_the_child_and_its_group() -> None:
    # Grace periods of a minute: the child must die at once, not after them.
    slow = Timing(shutdown_grace=60, kill_grace=60)
    async with bridged(EchoCore(), real(STUBBORN), timing=slow) as h:
        pids = json.loads(await h.client.line())
        started = trio.current_time()
        h.cancel()
        with trio.fail_after(SLACK):
            await h.done.wait()
        assert trio.current_time() - started < SLACK  # no minute of grace
    assert gone(pids["pid"])
    assert await wait_gone(pids["helper"])


async def test_child_exit_code_reaches_the_core() -> None:
    async with bridged(EchoCore(), real("import sys; print('{\"id\":1}'); sys.exit(3)")) as h:
        assert await h.client.line() == b'{"id":1}'
        assert await h.join() == 3


async def test_a_child_killed_by_a_signal_reports_it_as_a_negative_code() -> None:
    async with bridged(EchoCore(), real("import os, signal; os.kill(os.getpid(), 9)")) as h:
        assert await h.join() == -9


async def test_the_child_does_not_get_our_systemd_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", "/run/systemd/notify")
    monkeypatch.setenv("LISTEN_FDS", "1")
    monkeypatch.setenv("LISTEN_PID", str(os.getpid()))
    script = ("import json, os; print(json.dumps({'id': [os.environ.get(k) for k in "
              "('NOTIFY_SOCKET', 'LISTEN_FDS', 'LISTEN_PID')]}))")
    async with bridged(EchoCore(), real(script)) as h:
        assert await h.client.line() == b'{"id":[null,null,null]}'
        assert await h.join() == 0


async def test_a_child_in_its_own_process_group() -> None:
    script = "import json, os; print(json.dumps({'id': [os.getpgid(0), os.getsid(0)]}))"
    async with bridged(EchoCore(), real(script)) as h:
        child = await h.spawner.nth(0)
        assert json.loads(await h.client.line())["id"] == [child.pid, child.pid]
        assert await h.join() == 0


async def test_a_child_gets_the_parent_death_signal() -> None:
    # /proc/PID/status has no field for it; the child asks the kernel itself.
    script = textwrap.dedent("""
        import ctypes, json
        value = ctypes.c_int()
        ctypes.CDLL(None).prctl(2, ctypes.byref(value))  # PR_GET_PDEATHSIG
        print(json.dumps({"id": value.value}))
    """)
    async with bridged(EchoCore(), real(script)) as h:
        assert json.loads(await h.client.line())["id"] == signal.SIGKILL
        assert await h.join() == 0


async def test_a_spawned_child_talks_over_plain_fds() -> None:
    child = spawn_process([sys.executable, "-c", ECHO])
    peer = LineStream(child.stdout, child.stdin)
    try:
        assert child.poll() is None and child.group_alive()
        with trio.move_on_after(0.05) as waited:
            await child.wait()
        assert waited.cancelled_caught  # still running
        await peer.send(b'{"id":1}')
        assert await peer.line() == b'{"id":1}'
        await peer.close_writing()  # EOF: the echo server ends
        await peer.expect_eof()
        with trio.fail_after(WAIT):
            assert await child.wait() == 0
        assert child.poll() == 0
        assert await wait_until(lambda: not child.group_alive())
    finally:
        child.kill()
        await peer.aclose()


# The leader leaves a helper behind in its group and exits; the helper notes SIGTERM in a file
# but stays (only SIGKILL ends it).
ORPHANING = textwrap.dedent("""
    import subprocess, sys
    helper = subprocess.Popen([sys.executable, "-c",
        "import pathlib, signal, sys, time\\n"
        "signal.signal(signal.SIGTERM, lambda *_: pathlib.Path(sys.argv[1]).touch())\\n"
        "print('ready', flush=True)\\n"
        "while True: time.sleep(1)", sys.argv[1]],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    helper.stdout.readline()
    print('{"id":%d}' % helper.pid, flush=True)
    sys.stdin.read()
""")


async def test_what_the_leader_left_in_its_group_is_ended_too(tmp_path: Path) -> None:
    termed = tmp_path / "termed"
    async with bridged(EchoCore(), real(ORPHANING, str(termed)), timing=FAST) as h:
        helper = json.loads(await h.client.line())["id"]
        await h.client.close_writing()
        stopping_at = trio.current_time()
        assert await h.join() == 0
        assert h.ended_at is not None
        # The leader exits on EOF; its helper gets SIGTERM, ignores it, SIGKILL after a grace.
        assert FAST.kill_grace <= h.ended_at - stopping_at < FAST.kill_grace + SLACK
    assert await wait_gone(helper)
    assert termed.exists()
