"""Real server processes: pipes, the shutdown sequence, process groups, exec failures."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from bridge.errors import ServerUnavailable
from bridge.shell.child import check_command, kill_now, reap_group, spawn_process
from bridge.shell.settings import Timing
from tests.shell.fakes import WAIT, EchoCore, Interrupt, InterruptCore, LineReader, Spawner
from tests.shell.harness import FAST, Harness

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


def wait_until(done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)
    return done()


def wait_gone(pid: int) -> bool:
    return wait_until(lambda: gone(pid))


def bridge(script: str, timing: Timing = FAST, core: EchoCore | None = None) -> Harness:
    """A bridge in process whose server is `python -c script`."""
    spawner = Spawner(partial(spawn_process, [sys.executable, "-c", script]))
    return Harness(core or EchoCore(), spawner, timing=timing)


def test_real_pipes_carry_lines_both_ways_including_long_ones() -> None:
    big = b'{"id":2,"blob":"' + b"y" * (4 * 1024 * 1024) + b'"}'
    with bridge(ECHO) as h:
        h.start()
        h.send(b'{"id":1}', big)
        assert h.client.lines(2) == [b'{"id":1}', big]
        h.client_eof()
        assert h.join() == 0


def test_a_child_ignoring_eof_and_sigterm_dies_with_its_group() -> None:
    with bridge(STUBBORN) as h:
        h.start()
        pids = json.loads(h.client.line())
        h.client_eof()
        eof_at = time.monotonic()
        assert h.join() == 0
        assert h.ended_at is not None
        # Both grace periods were waited out, and not much more.
        grace = FAST.shutdown_grace + FAST.kill_grace
        assert grace <= h.ended_at - eof_at < grace + SLACK
    assert h.events("child.terminating") == ["child.terminating"]
    assert h.events("child.killing") == ["child.killing"]
    assert gone(pids["pid"])
    assert wait_gone(pids["helper"])


def test_interrupting_the_bridge_kills_the_child_and_its_group() -> None:
    # What was cancellation under trio: a BaseException escaping from serve's own thread.
    # Grace periods of a minute: the child must die at once, not after them.
    with bridge(STUBBORN, Timing(shutdown_grace=60, kill_grace=60), InterruptCore()) as h:
        h.start()
        pids = json.loads(h.client.line())
        h.send(b'{"id":"interrupt"}')
        started = time.monotonic()
        with pytest.raises(Interrupt):
            h.join()
        assert time.monotonic() - started < SLACK  # no minute of grace
    assert gone(pids["pid"])
    assert wait_gone(pids["helper"])


def test_child_exit_code_reaches_the_core() -> None:
    with bridge("import sys; print('{\"id\":1}'); sys.exit(3)") as h:
        h.start()
        assert h.client.line() == b'{"id":1}'
        assert h.join() == 3


def test_a_child_killed_by_a_signal_reports_it_as_a_negative_code() -> None:
    with bridge("import os, signal; os.kill(os.getpid(), signal.SIGKILL)") as h:
        h.start()
        assert h.join() == -9


def test_the_child_does_not_get_our_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", "/run/systemd/notify")
    script = "import json, os; print(json.dumps({'id': os.environ.get('NOTIFY_SOCKET')}))"
    with bridge(script) as h:
        h.start()
        assert h.client.line() == b'{"id":null}'
        assert h.join() == 0


def test_a_child_in_its_own_process_group() -> None:
    script = "import json, os; print(json.dumps({'id': [os.getpgid(0), os.getsid(0)]}))"
    with bridge(script) as h:
        child = h.start()
        assert json.loads(h.client.line())["id"] == [child.pid, child.pid]
        assert h.join() == 0


def test_exec_failure_is_server_unavailable(tmp_path: Path) -> None:
    script = tmp_path / "server"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    with pytest.raises(ServerUnavailable, match="cannot start server command"):
        spawn_process([str(script)])


def test_a_spawned_child_talks_over_plain_fds() -> None:
    child = spawn_process([sys.executable, "-c", ECHO])
    reader = LineReader(child.stdout)
    try:
        assert child.poll() is None and child.group_alive()
        assert child.wait(timeout=0.05) is None  # still running: the wait gives up
        os.write(child.stdin, b'{"id":1}\n')
        assert reader.line() == b'{"id":1}'
    finally:
        os.close(child.stdin)  # EOF: the echo server ends
    try:
        reader.expect_eof()
        assert child.wait(timeout=WAIT) == 0
        assert child.poll() == 0
        assert wait_until(lambda: not child.group_alive())
    finally:
        kill_now(child)
        os.close(child.stdout)


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
    print(helper.pid, flush=True)
""")


def test_reap_group_ends_what_the_leader_left_behind(tmp_path: Path) -> None:
    termed = tmp_path / "termed"
    child = spawn_process([sys.executable, "-c", ORPHANING, str(termed)])
    os.close(child.stdin)
    try:
        helper = int(LineReader(child.stdout).line())
        assert child.wait(timeout=WAIT) == 0
        assert child.group_alive() and not gone(helper)
        started = time.monotonic()
        reap_group(child, 0.3)
        # SIGTERM first; it does not end the helper, so the grace is waited out, then SIGKILL.
        assert 0.3 <= time.monotonic() - started < 0.3 + SLACK
        assert wait_gone(helper)  # (a zombie until init reaps it: the group may linger)
        assert termed.exists()
    finally:
        kill_now(child)
        os.close(child.stdout)


def test_check_command(tmp_path: Path) -> None:
    assert check_command(["sh", "-c", "true"]).endswith("/sh")
    with pytest.raises(ServerUnavailable, match="not found: no-such-command-xyz"):
        check_command(["no-such-command-xyz"])
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(ServerUnavailable, match="not executable"):
        check_command([str(plain)])
    with pytest.raises(ServerUnavailable):
        check_command([])
