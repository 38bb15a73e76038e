"""The daemon's limits with real processes: max_sessions under bursts, clients that leave
(closing, or resetting mid-call), and what `connect` exits with when the daemon hangs up.

Must not fake the daemon or its servers: `mcp-rosetta serve` runs as a process, its servers
are peers/plain_server.py (standard library, so dozens start at once), and the log read is
the daemon's own JSON on stderr.
"""

from __future__ import annotations

import json
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.session_log import most_at_once

WAIT = 60.0
MAX_SESSIONS = 4
KILL_GRACE = 2.0
PLAIN_SERVER = str(Path(__file__).resolve().parent / "peers" / "plain_server.py")
CONNECT = [sys.executable, "-m", "bridge", "connect"]


def ping(ident: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "ping"}).encode() + b"\n"


class Daemon:
    """`mcp-rosetta serve` on a socket of its own, its servers plain_server.py."""

    def __init__(self, tmp_path: Path, behaviour: str, *, probe_timeout: float = 5.0,
                 drain_timeout: float = 5.0, open_files: int | None = None) -> None:
        self.path = tmp_path / "d.sock"
        self.record = tmp_path / "servers.txt"
        self.record.touch()
        self.log_file = tmp_path / "daemon.log"
        config = tmp_path / "daemon.toml"
        config.write_text(f'shutdown_grace = 2.0\nkill_grace = {KILL_GRACE}\n'
                          f'drain_timeout = {drain_timeout}\nprobe_timeout = {probe_timeout}\n'
                          'log_format = "json"\n')
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--config", str(config),
                 "--listen", f"unix:{self.path}", "--max-sessions", str(MAX_SESSIONS), "--",
                 sys.executable, PLAIN_SERVER, behaviour, "--record", str(self.record)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=None if open_files is None else lambda: resource.setrlimit(
                    resource.RLIMIT_NOFILE, (open_files, open_files)))
        self.until(lambda: bool(self.events("daemon.listening")), "daemon.listening")

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        lines = self.log_file.read_bytes().splitlines(keepends=True)
        entries = [json.loads(line) for line in lines if line.endswith(b"\n")]
        return [e for e in entries if name is None or e["event"] == name]

    def servers(self, what: str = "start") -> list[int]:
        return [int(line.split()[1]) for line in self.record.read_text().splitlines()
                if line.split()[0] == what]

    def until(self, done: Any, what: str) -> None:
        deadline = time.monotonic() + WAIT
        while not done():
            assert self.process.poll() is None, f"the daemon exited: {self.log_file.read_text()}"
            assert time.monotonic() < deadline, f"never saw {what}: {self.log_file.read_text()}"
            time.sleep(0.01)

    def client(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.path))  # blocking: past a full backlog it waits its turn
        sock.settimeout(WAIT)
        return sock

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon whose servers never answer, not even the probe."""
    daemon = Daemon(tmp_path, "silent")
    yield daemon
    assert daemon.stop() == 0


@pytest.fixture
def stuck(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon whose servers are legacy and never answer a call."""
    daemon = Daemon(tmp_path, "stuck")
    yield daemon
    assert daemon.stop() == 0


def read_line(sock: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        assert chunk, f"EOF after {data!r}"
        data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


@pytest.mark.parametrize("bursts", [(30, 40, 35)])
def test_bursts_never_pass_max_sessions_and_each_refusal_names_its_own_request(
        silent: Daemon, bursts: tuple[int, ...]) -> None:
    ended = 0
    for round_, count in enumerate(bursts):
        clients = [silent.client() for _ in range(count)]  # all waiting before any speaks
        for n, client in enumerate(clients):
            client.sendall(ping(f"r{round_}-c{n}"))
        answers = [read_line(client) for client in clients]
        for n, answer in enumerate(answers):
            assert answer["id"] == f"r{round_}-c{n}"  # its own id, served or refused
        served = [a for a in answers if "result" in a]
        refused = [a for a in answers if "error" in a]
        assert [a["result"] for a in served] == [{}] * MAX_SESSIONS
        assert {json.dumps(a["error"], sort_keys=True) for a in refused} == {json.dumps({
            "code": -32000, "data": {"max_sessions": MAX_SESSIONS},
            "message": f"mcp-rosetta: too many sessions (max_sessions = {MAX_SESSIONS}); "
                       "try again later"}, sort_keys=True)}
        assert len(refused) == count - MAX_SESSIONS
        for client in clients:
            client.close()
        ended += MAX_SESSIONS
        silent.until(lambda n=ended: len(silent.events("session.ended")) == n,  # type: ignore[misc]
                     "the sessions ending")
    assert most_at_once(silent.events()) == MAX_SESSIONS
    assert len(silent.servers()) == MAX_SESSIONS * len(bursts)
    assert len(silent.events("connection.refused")) == sum(bursts) - ended


def test_a_burst_past_the_open_file_limit_waits_for_room_and_answers_every_client(
        tmp_path: Path) -> None:
    # About 11 fds at rest and 6 a session (the client's two, the server's three pipe ends, a
    # pidfd): 44 leaves room for a few refusals at a time, and the refusals hold
    # theirs until the clients speak, which they do only once all are in.
    daemon = Daemon(tmp_path, "silent", open_files=44)
    count = 60  # fewer than what is accepted plus the listening backlog (64): all connect
    answers: list[dict[str, Any] | None] = [None] * count
    clients: list[socket.socket] = []
    everyone_in = threading.Event()

    def one(n: int) -> None:
        client = daemon.client()
        clients.append(client)
        everyone_in.wait(WAIT)
        client.sendall(ping(f"c{n}"))
        answers[n] = read_line(client)

    try:
        threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        daemon.until(lambda: len(clients) == count, "every client connected")
        daemon.until(lambda: bool(daemon.events("daemon.accept_waiting")), "no fd left")
        everyone_in.set()
        for thread in threads:
            thread.join(WAIT)
        assert [a and a["id"] for a in answers] == [f"c{n}" for n in range(count)]
        served = [a for a in answers if a and "result" in a]
        assert len(served) == MAX_SESSIONS  # held open until every client has its answer
        assert all(a and a["error"]["data"] == {"max_sessions": MAX_SESSIONS}
                   for a in answers if a and "error" in a)
        waits = daemon.events("daemon.accept_waiting")  # once per shortage, not per retry
        assert {w["reason"] for w in waits} == {"Too many open files"}
        assert "LimitNOFILE=" in waits[0]["fix"]
    finally:
        everyone_in.set()
        for client in clients:
            client.close()
        assert daemon.stop() == 0
    assert most_at_once(daemon.events()) == MAX_SESSIONS


@pytest.mark.parametrize("ending", ["close", "shut down writing"])
def test_clients_that_ping_and_close_free_their_place_though_the_probe_is_unanswered(
        tmp_path: Path, ending: str) -> None:
    # The probe and a drain would wait far longer than WAIT: each session must end on its
    # client's close, owing it nothing.
    silent = Daemon(tmp_path, "silent", probe_timeout=3600, drain_timeout=3600)
    try:
        for n in range(20):
            with silent.client() as client:
                client.sendall(ping(f"c{n}"))
                assert read_line(client) == {"jsonrpc": "2.0", "id": f"c{n}", "result": {}}
                if ending != "close":  # as `connect` does at its stdin's EOF
                    client.shutdown(socket.SHUT_WR)
                    assert client.recv(1) == b""  # the session ended
            silent.until(lambda n=n: len(silent.events("session.ended")) == n + 1,  # type: ignore[misc]
                         "the session ending")
        assert silent.events("connection.refused") == []
        assert len(silent.servers()) == 20
        assert silent.events("era.detected") == []  # the probe never answered, nor timed out
    finally:
        assert silent.stop() == 0


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it is read
        return False


def legacy_session(daemon: Daemon) -> socket.socket:
    """A client connection in mode P with a call in flight at its (stuck) server."""
    client = daemon.client()
    client.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n")
    assert read_line(client)["result"]["serverInfo"]["name"] == "plain"
    client.sendall(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                   b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}\n')
    daemon.until(lambda: bool(daemon.servers("call")), "the call reaching the server")
    return client


def test_a_reset_client_s_server_is_gone_within_kill_grace(stuck: Daemon) -> None:
    client = legacy_session(stuck)
    (pid,) = stuck.servers("call")
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    reset = time.monotonic()
    stuck.until(lambda: not alive(pid), "the server gone")
    assert time.monotonic() - reset <= KILL_GRACE + 1
    stuck.until(lambda: bool(stuck.events("session.ended")), "session.ended")
    assert [e["event"] for e in stuck.events() if e["event"].startswith("client.")] == [
        "client.gone"]


def relay(daemon: Daemon) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*CONNECT, f"unix:{daemon.path}"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def ended_by_the_daemon(client: subprocess.Popen[bytes]) -> dict[str, Any]:
    """With its input still open, `connect` relays the daemon's last answer, then exits 69
    with one line on stderr; that answer."""
    assert client.stdout is not None and client.stderr is not None and client.stdin is not None
    last = client.stdout.read()  # until connect exits
    assert client.wait(WAIT) == 69
    err = client.stderr.read().decode()
    assert err.count("\n") == 1 and "ended the connection" in err, err
    client.stdin.close()
    answer: dict[str, Any] = json.loads(last)
    return answer


def test_connect_exits_69_when_refused_and_0_when_the_client_ends(silent: Daemon) -> None:
    holders = [relay(silent) for _ in range(MAX_SESSIONS)]
    for n, holder in enumerate(holders):
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write(ping(f"h{n}"))
        holder.stdin.flush()
        assert json.loads(holder.stdout.readline())["result"] == {}
    refused = relay(silent)
    assert refused.stdin is not None
    refused.stdin.write(ping("late"))
    refused.stdin.flush()  # its input stays open: the daemon hangs up first
    assert ended_by_the_daemon(refused)["error"]["data"] == {"max_sessions": MAX_SESSIONS}
    for holder in holders:
        out, err = holder.communicate(timeout=WAIT)  # closes its input first
        assert (holder.returncode, out, err) == (0, b"", b"")


def test_connect_exits_69_when_the_daemon_stops_mid_call(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path, "stuck")
    try:
        client = relay(daemon)
        assert client.stdin is not None and client.stdout is not None
        client.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": {"protocolVersion": "2025-06-18",
                                                  "capabilities": {}, "clientInfo": {
                                                      "name": "t", "version": "1"}}}
                                      ).encode() + b"\n")
        client.stdin.flush()
        assert json.loads(client.stdout.readline())["id"] == 1
        client.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}\n')
        client.stdin.flush()
        daemon.until(lambda: bool(daemon.servers("call")), "the call reaching the server")
        assert daemon.stop() == 0
        assert ended_by_the_daemon(client)["id"] == 2  # answered (an error) before the end
    finally:
        daemon.stop()



class ConfiguredDaemon(Daemon):
    """`mcp-rosetta serve` whose server command is in its config file (a reload reads it
    again; one given on the command line would stay)."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "d.sock"
        self.record = tmp_path / "servers.txt"
        self.record.touch()
        self.log_file = tmp_path / "daemon.log"
        self.config = tmp_path / "daemon.toml"
        self.write([sys.executable, PLAIN_SERVER, "stuck", "--record", str(self.record)])
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--config", str(self.config),
                 "--listen", f"unix:{self.path}"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.until(lambda: bool(self.events("daemon.listening")), "daemon.listening")

    def write(self, command: list[str]) -> None:
        self.config.write_text(f"command = {json.dumps(command)}\nshutdown_grace = 1.0\n"
                               'kill_grace = 1.0\nlog_format = "json"\n')


def test_a_reload_naming_a_command_that_is_not_there_is_refused_and_sessions_go_on(
        tmp_path: Path) -> None:
    daemon = ConfiguredDaemon(tmp_path)
    try:
        daemon.write(["no-such-server-for-mcp-rosetta"])
        daemon.process.send_signal(signal.SIGHUP)
        daemon.until(lambda: bool(daemon.events("daemon.reload_failed")), "the refusal")
        (failed,) = daemon.events("daemon.reload_failed")
        assert failed["reason"].startswith(
            "server command not found: 'no-such-server-for-mcp-rosetta' is in none of PATH=")
        with daemon.client() as client:  # a new session: the command in force starts
            client.sendall(ping("after"))
            assert read_line(client) == {"jsonrpc": "2.0", "id": "after", "result": {}}
        daemon.until(lambda: len(daemon.servers()) == 1, "the server in force started")
        assert daemon.events("daemon.reloaded") == []
    finally:
        assert daemon.stop() == 0
