"""The bridge as a process (real core, real pipes): the demo, SIGTERM, no child left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("bridge.core.bridge")

SERVER = [sys.executable, "-m", "bridge.demo.modern_server"]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}


def children(pid: int) -> list[int]:
    # Any thread may have forked (trio spawns from a worker thread): look at every task.
    return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()]


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
