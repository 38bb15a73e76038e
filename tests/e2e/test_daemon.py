"""The daemon as systemd runs it: started by systemd's own socket-activation tool, reached by
real SDK clients through `mcp-rosetta connect`, telling a notify socket how it is doing.

Must not fake systemd's side: `systemd-socket-activate` listens, passes the socket on the
first connection (LISTEN_FDS, Accept=no) and execs the daemon in its own process; the notify
socket is a datagram socket of the test's, as systemd's is.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import checks
import pytest

WAIT = 60.0
LEGACY_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "holder", "version": "1"}}}


class NotifySocket:
    """A datagram socket standing in for systemd's NOTIFY_SOCKET; keeps every message."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.messages: list[str] = []
        self._changed = threading.Condition()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(path))
        threading.Thread(target=self._receive, daemon=True).start()

    def _receive(self) -> None:
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                return
            with self._changed:
                self.messages.append(data.decode())
                self._changed.notify_all()

    def wait_for(self, message: str, after: int = 0) -> int:
        """The index of the first `message` (a prefix) at or after `after`."""
        def found() -> int | None:
            return next((i for i, m in enumerate(self.messages)
                         if i >= after and m.startswith(message)), None)

        with self._changed:
            assert self._changed.wait_for(lambda: found() is not None, WAIT), (
                f"systemd never heard {message!r}: {self.messages}")
            index = found()
            assert index is not None
            return index

    def statuses(self) -> list[int]:
        return [int(m.removeprefix("STATUS=").split()[0]) for m in self.messages
                if m.startswith("STATUS=")]

    def close(self) -> None:
        self._sock.close()


class Holder:
    """A raw client connection held open across the reload: a session started before it."""

    def __init__(self, path: Path) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(str(path))
        except OSError:
            self._sock.close()
            raise
        self._sock.settimeout(WAIT)
        self._file = self._sock.makefile("rb")

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self._sock.sendall(json.dumps(message).encode() + b"\n")
        answer: dict[str, Any] = json.loads(self._file.readline())
        return answer

    def close(self) -> None:
        self._file.close()
        self._sock.close()


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except FileNotFoundError:
                continue
            pending += children - found
            found |= children
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def write_config(path: Path, command: list[str]) -> None:
    path.write_text(f"command = {json.dumps(command)}\nshutdown_grace = 1.0\nkill_grace = 1.0\n"
                    'log_format = "json"\n')


def test_the_daemon_serves_several_clients_reloads_and_stops_clean(
        tmp_path: Path, legacy_python: Any, modern_python: Any, run_client: Any) -> None:
    activate = shutil.which("systemd-socket-activate")
    assert activate is not None, "systemd-socket-activate is needed (Debian: package systemd)"
    config = tmp_path / "weather.toml"
    write_config(config, modern_python.peer("modern_server"))  # a modern-only server
    sock = tmp_path / "weather.sock"
    notify = NotifySocket(tmp_path / "notify")
    log = tmp_path / "daemon.log"  # a file, not a pipe: a pipe nobody reads would stop the daemon
    with log.open("wb") as stderr_file:  # the daemon keeps its own copy of the descriptor
        daemon = subprocess.Popen(
            [activate, "-l", str(sock), "-E", f"NOTIFY_SOCKET={notify.path}",
             sys.executable, "-m", "bridge", "serve", "--config", str(config)],
            stdout=subprocess.DEVNULL, stderr=stderr_file)
    connect = [sys.executable, "-m", "bridge", "connect", str(sock)]
    holder = None
    try:
        deadline = time.monotonic() + WAIT
        # The first connection makes systemd-socket-activate exec the daemon. Its socket file
        # exists from bind(2), a moment before listen(2): until then a connection is refused.
        while holder is None:
            assert time.monotonic() < deadline and daemon.poll() is None
            try:
                holder = Holder(sock)
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.02)
        before = holder.ask(LEGACY_INIT)["result"]
        assert before["serverInfo"]["name"] == "rosetta-modern-server"
        notify.wait_for("READY=1")
        tools_before = holder.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "squares" in [t["name"] for t in tools_before["result"]["tools"]]

        # Three real clients at once: two legacy (mode A), one modern (pass-through).
        with ThreadPoolExecutor(3) as pool:
            runs = [pool.submit(run_client, legacy_python, "basic", connect),
                    pool.submit(run_client, legacy_python, "basic", connect),
                    pool.submit(run_client, modern_python, "basic", connect)]
            first, second, modern = (run.result() for run in runs)
        checks.check_legacy_basic(first)
        checks.check_legacy_basic(second)
        checks.check_modern_basic(modern)
        assert first["initialize"]["serverInfo"]["name"] == "rosetta-modern-server"
        assert max(notify.statuses()) >= 3  # the holder and at least two clients at once

        # SIGHUP: new sessions get the legacy server; the holder's session keeps its own.
        write_config(config, legacy_python.peer("legacy_server"))
        mark = len(notify.messages)
        daemon.send_signal(signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1", after=mark)
        assert "\nMONOTONIC_USEC=" in notify.messages[reloading]
        notify.wait_for("READY=1", after=reloading)
        after_reload = run_client(modern_python, "basic", connect)  # mode B now
        checks.check_modern_basic(after_reload)
        server_info = after_reload["discover"]["_meta"]["io.modelcontextprotocol/serverInfo"]
        assert server_info["name"] == "rosetta-legacy-server"
        assert holder.ask({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}) == {
            **tools_before, "id": 3}

        # SIGTERM: sessions end, the daemon exits 0, and nothing it started is left.
        running = descendants(daemon.pid)
        assert running, "the holder's server should be running"
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=WAIT)
        stderr = log.read_text()
        assert daemon.returncode == 0, stderr[-3000:]
        notify.wait_for("STOPPING=1")
        assert [pid for pid in running if alive(pid)] == []
        events = [json.loads(line)["event"] for line in stderr.splitlines()
                  if line.startswith("{")]  # systemd-socket-activate says a few words too
        assert events.count("session.started") == 5 and events.count("session.ended") == 5
        assert "daemon.reloaded" in events and "session.crashed" not in events
    finally:
        if holder is not None:
            holder.close()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        notify.close()


@pytest.fixture
def units(tmp_path: Path) -> Path:
    """The shipped units, with an instance name, where systemd-analyze can read them."""
    repo = Path(__file__).resolve().parents[2] / "systemd"
    for unit in repo.iterdir():
        shutil.copy(unit, tmp_path / unit.name)
        stem, kind = unit.name.split("@")
        (tmp_path / f"{stem}@weather{kind}").symlink_to(tmp_path / unit.name)
    return tmp_path


UNITS = ("mcp-rosetta", "mcp-rosetta-http")
"""The daemon's unit pair (a Unix socket) and the HTTP front's (a TCP port)."""


@pytest.mark.parametrize("stem", UNITS)
def test_the_units_verify(units: Path, stem: str) -> None:
    done = subprocess.run(["systemd-analyze", "verify", f"{stem}@weather.socket",
                           f"{stem}@weather.service"], cwd=units, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("stem", UNITS)
def test_the_service_is_sandboxed(units: Path, stem: str) -> None:
    done = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager",
                           str(units / f"{stem}@weather.service")],
                          capture_output=True, text=True, timeout=120)
    overall = [line for line in done.stdout.splitlines() if "Overall exposure level" in line]
    assert overall, done.stdout + done.stderr
    exposure = float(overall[0].split(":")[1].split()[0])
    assert exposure <= 5.0


def test_connect_without_a_daemon_names_the_unit(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bridge", "connect",
                           "/run/mcp-rosetta/no-such-instance.sock"],
                          capture_output=True, text=True, timeout=30, env=os.environ)
    assert done.returncode == 69
    assert "systemctl enable --now mcp-rosetta@no-such-instance.socket" in done.stderr
