"""The bridge as a process (real core, real pipes): the demo, SIGTERM, no child left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SERVER = [sys.executable, "-m", "bridge.demo.modern_server"]
# Grace periods short enough for a test, long enough for a loaded machine.
FAST_CONFIG = Path(__file__).with_name("fast.toml")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}


def children(pid: int) -> list[int]:
    return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()]


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting for a parent that is not us."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still running after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(gone(pid) for pid in pids):
        time.sleep(0.02)
    return [pid for pid in pids if not gone(pid)]


# A legacy server that outlives politeness: it ignores stdin EOF and SIGTERM, and starts a
# helper that leaves its process group with setsid() and ignores SIGTERM too. Both write
# their pids to the file named by argv[1].
STUBBORN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helper = subprocess.Popen([sys.executable, "-c",
        "import os, signal, time; os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
    helper.stdout.readline()
    with open(sys.argv[1] + ".tmp", "w") as out:
        out.write(f"{os.getpid()} {helper.pid}")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    for line in sys.stdin:
        pass  # never answers: the bridge takes it as legacy after the probe timeout
    while True:
        time.sleep(1)
""")


class Stubborn:
    """The bridge in front of STUBBORN, once its session runs (so its signals are handled)."""

    def __init__(self, tmp_path: Path, *flags: str) -> None:
        pids = tmp_path / "pids"
        self.bridge = subprocess.Popen(
            [sys.executable, "-m", "bridge", "--probe-timeout", "0.2", "--log-format", "json",
             *flags, "--", sys.executable, "-c", STUBBORN, str(pids)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.bridge.stderr is not None
        self.early: list[str] = []  # what it logged until then
        while not any('"child.started"' in line for line in self.early):
            line = self.bridge.stderr.readline().decode()
            assert line, "the bridge ended before its session started"
            self.early.append(line)
        deadline = time.monotonic() + 30
        while not pids.exists():
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.02)
        self.server, self.helper = (int(pid) for pid in pids.read_text().split())

    def finish(self, stdin: bytes | None = None) -> list[dict[str, object]]:
        """Wait for the bridge to exit; every event it logged."""
        _, stderr = self.bridge.communicate(stdin, timeout=30)
        lines = self.early + stderr.decode().splitlines()
        assert self.bridge.returncode == 0, "".join(lines)[-3000:]
        return [json.loads(line) for line in lines]

    def clean_up(self) -> None:
        for pid in (self.server, self.helper):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_the_demo_runs_and_shows_both_sides() -> None:
    done = subprocess.run([sys.executable, "-m", "bridge", "demo"], capture_output=True,
                          timeout=120, text=True)
    assert done.returncode == 0, done.stderr
    for arrow in ("client → bridge", "bridge → server", "server → bridge", "bridge → client"):
        assert arrow in done.stdout
    assert "server/discover" in done.stdout


def test_sigterm_stops_the_bridge_and_its_server() -> None:
    bridge = subprocess.Popen([sys.executable, "-m", "bridge", "--", *SERVER],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    bridge.stdin.flush()
    answer = json.loads(bridge.stdout.readline())
    assert answer["result"]["serverInfo"]["name"] == "demo-modern-server"
    (server,) = children(bridge.pid)
    bridge.send_signal(signal.SIGTERM)
    _, stderr = bridge.communicate(timeout=30)
    assert bridge.returncode == 0, stderr
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{server}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{server}") or "Z" in Path(
        f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0]
    # stderr carries JSON log lines only; stdout carried nothing but the protocol.
    for line in stderr.decode().splitlines():
        assert "event" in json.loads(line)


def test_the_demo_fails_loudly_when_a_step_goes_wrong(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bridge.demo import run

    wrong = run.Step("expect what cannot be", run.request(2, "tools/list"), lambda _: False)
    monkeypatch.setattr(run, "STEPS", [run.STEPS[0], wrong])
    assert run.main([]) == 1
    err = capsys.readouterr().err
    assert "mcp-rosetta demo failed: unexpected tools/list result" in err


def test_a_sigkilled_bridge_takes_its_server_along(tmp_path: Path) -> None:
    stubborn = Stubborn(tmp_path)
    try:
        stubborn.bridge.kill()
        stubborn.bridge.wait(timeout=30)
        assert wait_gone([stubborn.server], 1.0) == []  # the parent-death signal, at once
    finally:
        stubborn.clean_up()


def test_shutdown_ends_a_helper_that_left_the_servers_group(tmp_path: Path) -> None:
    stubborn = Stubborn(tmp_path, "--config", str(FAST_CONFIG))
    try:
        assert os.getsid(stubborn.helper) == stubborn.helper != os.getsid(stubborn.server)
        events = stubborn.finish(b"")  # the client leaves
        assert wait_gone([stubborn.server, stubborn.helper], 1.0) == []
        assert "orphans.ended" in [event["event"] for event in events]
    finally:
        stubborn.clean_up()


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGINT])
def test_ending_signals_stop_the_session_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    stubborn = Stubborn(tmp_path, "--config", str(FAST_CONFIG))
    try:
        stubborn.bridge.send_signal(sig)
        events = stubborn.finish()
        assert wait_gone([stubborn.server, stubborn.helper], 1.0) == []
        received = [event["signal"] for event in events if event["event"] == "signal.received"]
        assert received == [sig.name]
    finally:
        stubborn.clean_up()
