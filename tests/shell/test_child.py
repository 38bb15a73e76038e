"""Real server processes: pipes, the shutdown sequence, process groups, exec failures."""

from __future__ import annotations

import json
import sys
import textwrap
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from bridge.errors import ServerUnavailable
from bridge.shell.child import check_command, spawn_process
from bridge.shell.runner import serve
from bridge.shell.supervisor import Timing
from tests.shell.fakes import EchoCore, LineReader

FAST = Timing(shutdown_grace=0.5, kill_grace=0.5)

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line); sys.stdout.flush()\n"

# Ignores stdin EOF and SIGTERM, starts a helper in its own process group, reports both pids.
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


class Bridge:
    def __init__(self, script: str, timing: Timing = FAST) -> None:
        self.to_bridge, self.client_in = trio.testing.memory_stream_one_way_pair()
        self.client_out, from_bridge = trio.testing.memory_stream_one_way_pair()
        self.client = LineReader(from_bridge)
        self.spawn = partial(spawn_process, [sys.executable, "-c", script])
        self.timing = timing
        self.code: int | None = None

    async def run(self) -> None:
        self.code = await serve(EchoCore(), self.client_in, self.client_out, self.spawn,
                                timing=self.timing)


async def wait_gone(pid: int) -> bool:
    with trio.move_on_after(5):
        while not gone(pid):
            await trio.sleep(0.02)
    return gone(pid)


async def test_real_pipes_carry_lines_both_ways_including_long_ones() -> None:
    bridge = Bridge(ECHO)
    big = b'{"id":2,"blob":"' + b"y" * (4 * 1024 * 1024) + b'"}'
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bridge.run)
        await bridge.to_bridge.send_all(b'{"id":1}\n' + big + b"\n")
        assert await bridge.client.lines(2) == [b'{"id":1}', big]
        await bridge.to_bridge.aclose()
    assert bridge.code == 0


async def test_a_child_ignoring_eof_and_sigterm_dies_with_its_group() -> None:
    bridge = Bridge(STUBBORN)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bridge.run)
        pids = json.loads(await bridge.client.line())
        await bridge.to_bridge.aclose()
    assert bridge.code == 0
    assert gone(pids["pid"])
    assert await wait_gone(pids["helper"])


async def test_cancellation_kills_the_child_and_its_group() -> None:
    bridge = Bridge(STUBBORN, Timing(shutdown_grace=60, kill_grace=60))
    with trio.move_on_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(bridge.run)
            pids = json.loads(await bridge.client.line())
            nursery.cancel_scope.cancel()
    assert gone(pids["pid"])
    assert await wait_gone(pids["helper"])


async def test_child_exit_code_reaches_the_core() -> None:
    bridge = Bridge("import sys; print('{\"id\":1}'); sys.exit(3)")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bridge.run)
        assert await bridge.client.line() == b'{"id":1}'
    assert bridge.code == 3


async def test_the_child_does_not_get_our_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", "/run/systemd/notify")
    script = "import json, os; print(json.dumps({'id': os.environ.get('NOTIFY_SOCKET')}))"
    bridge = Bridge(script)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(bridge.run)
        assert await bridge.client.line() == b'{"id":null}'


async def test_exec_failure_is_server_unavailable(tmp_path: Path) -> None:
    script = tmp_path / "server"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    with pytest.raises(ServerUnavailable, match="cannot start server command"):
        await spawn_process([str(script)])


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

