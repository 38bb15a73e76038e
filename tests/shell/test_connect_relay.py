"""`mcp-rosetta connect`'s relay with real processes: bytes intact both ways at volume, the
half-close, either side ending first, signals, and the modules its start-up loads.

The client's ends are pipes (as Python's subprocess gives them, which the relay splices from)
or Unix socket pairs (as libuv, Node's, gives them, which it reads and writes).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CONNECT = [sys.executable, "-m", "bridge", "connect"]
ROOT = Path(__file__).resolve().parents[2]
WAIT = 60
BIG = 8 * 1024 * 1024


@dataclass
class Client:
    """A relay process and the test's ends of its stdin and stdout."""

    relay: subprocess.Popen[bytes]
    to_relay: int
    from_relay: int

    def write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.to_relay, view[:65536]):]

    def close_input(self) -> None:
        os.close(self.to_relay)
        self.to_relay = -1

    def stop_reading(self) -> None:
        os.close(self.from_relay)
        self.from_relay = -1

    def send_then_close(self, data: bytes) -> None:
        self.write_all(data)
        self.close_input()

    def read_all(self) -> bytes:
        chunks = []
        while chunk := os.read(self.from_relay, 65536):
            chunks.append(chunk)
        return b"".join(chunks)

    def read_exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(self.from_relay, size - len(data))
            assert chunk, "the relay's stdout ended early"
            data += chunk
        return data

    def stderr(self) -> str:
        assert self.relay.stderr is not None
        return self.relay.stderr.read().decode()


Start = Callable[[Path], Client]


def pair(kind: str) -> tuple[int, int]:
    """(read end, write end) of what the client gives the relay."""
    if kind == "pipes":
        return os.pipe()
    reader, writer = socket.socketpair()
    reader.shutdown(socket.SHUT_WR)
    writer.shutdown(socket.SHUT_RD)
    return reader.detach(), writer.detach()


@pytest.fixture(params=["pipes", "sockets"])
def start(request: pytest.FixtureRequest) -> Iterator[Start]:
    started: list[Client] = []

    def run(path: Path) -> Client:
        stdin_r, stdin_w = pair(request.param)
        stdout_r, stdout_w = pair(request.param)
        relay = subprocess.Popen([*CONNECT, str(path)], stdin=stdin_r, stdout=stdout_w,
                                 stderr=subprocess.PIPE)
        os.close(stdin_r)
        os.close(stdout_w)
        client = Client(relay, stdin_w, stdout_r)
        started.append(client)
        return client

    yield run
    for client in started:
        if client.relay.poll() is None:
            client.relay.kill()
        client.relay.wait()
        for fd in (client.to_relay, client.from_relay):
            if fd >= 0:
                os.close(fd)


class Daemon:
    """A stand-in daemon for one connection: receives everything (until the relay's EOF) on
    one thread while `serve` does what the test needs with the connection on another."""

    def __init__(self, path: Path) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.received = hashlib.sha256()
        self.received_bytes = 0
        self.got_eof = threading.Event()
        self.ended = threading.Event()  # the relay's EOF, or its reset (it left bytes unread)
        self.accepted = threading.Event()
        self.connection: socket.socket | None = None

    def start(self, serve: Callable[[socket.socket], object]) -> None:
        threading.Thread(target=self._run, args=(serve,), daemon=True).start()

    def _run(self, serve: Callable[[socket.socket], object]) -> None:
        connection, _ = self.listener.accept()
        self.connection = connection
        self.accepted.set()
        receiver = threading.Thread(target=self._receive, args=(connection,), daemon=True)
        receiver.start()
        with connection:
            serve(connection)
            # Closing alone would wait for the receiving thread's recv: the relay must see EOF.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def _receive(self, connection: socket.socket) -> None:
        try:
            while chunk := connection.recv(65536):
                self.received.update(chunk)
                self.received_bytes += len(chunk)
            self.got_eof.set()
        except OSError:  # reset by the relay, or closed here once the daemon's side is served
            pass
        self.ended.set()


def test_8_mib_each_way_at_once_arrive_intact(tmp_path: Path, start: Start) -> None:
    to_daemon = os.urandom(BIG).replace(b"\n", b"")  # no line to split on, one way
    to_client = os.urandom(BIG)
    daemon = Daemon(tmp_path / "d.sock")

    def serve(connection: socket.socket) -> None:
        connection.sendall(to_client)
        daemon.got_eof.wait(WAIT)  # then hang up: the client ended first

    daemon.start(serve)
    client: Client = start(tmp_path / "d.sock")
    writer = threading.Thread(target=client.send_then_close, args=(to_daemon,))
    writer.start()
    got = client.read_all()
    writer.join(WAIT)
    assert client.relay.wait(WAIT) == 0
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(to_client).hexdigest()
    assert len(got) == BIG
    assert daemon.received_bytes == len(to_daemon)
    assert daemon.received.hexdigest() == hashlib.sha256(to_daemon).hexdigest()
    assert client.stderr() == ""


def test_the_clients_eof_is_the_daemons_and_its_answers_still_arrive(
        tmp_path: Path, start: Start) -> None:
    daemon = Daemon(tmp_path / "d.sock")

    def serve(connection: socket.socket) -> None:
        assert daemon.got_eof.wait(WAIT)  # answer only once the client's input has ended
        connection.sendall(b"answered after your EOF" * 50_000)

    daemon.start(serve)
    client: Client = start(tmp_path / "d.sock")
    client.write_all(b"a request without newline")
    client.close_input()
    assert client.read_all() == b"answered after your EOF" * 50_000
    assert client.relay.wait(WAIT) == 0
    assert daemon.received_bytes == len(b"a request without newline")
    assert client.stderr() == ""


def test_a_client_that_stops_reading_ends_the_relay_with_0_and_the_daemon_hears_it(
        tmp_path: Path, start: Start) -> None:
    daemon = Daemon(tmp_path / "d.sock")
    flooding = threading.Event()

    def serve(connection: socket.socket) -> None:
        flooding.set()
        try:
            while True:
                connection.sendall(b"x" * 65536)
        except OSError:
            pass  # the relay is gone

    daemon.start(serve)
    client: Client = start(tmp_path / "d.sock")
    assert client.read_exactly(10) == b"x" * 10
    client.stop_reading()  # its input still open
    assert client.relay.wait(WAIT) == 0
    assert client.stderr() == ""
    assert daemon.ended.wait(WAIT)


def test_the_daemon_ending_first_mid_transfer_is_69_with_one_line(
        tmp_path: Path, start: Start) -> None:
    daemon = Daemon(tmp_path / "d.sock")

    def serve(connection: socket.socket) -> None:
        connection.sendall(b"y" * (1024 * 1024))  # then hang up, the client's input open

    daemon.start(serve)
    client: Client = start(tmp_path / "d.sock")
    client.write_all(b"z" * 100_000)
    assert client.read_all() == b"y" * (1024 * 1024)  # all relayed, then EOF
    assert client.relay.wait(WAIT) == 69
    assert client.stderr() == (
        "mcp-rosetta: the daemon ended the connection while the client's input was still "
        "open (it refused the client, stopped, or the session ended); its log says which\n")


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, -15)])
def test_a_signal_ends_a_relay_blocked_both_ways_at_once(
        tmp_path: Path, start: Start, sent: signal.Signals, status: int) -> None:
    daemon = Daemon(tmp_path / "d.sock")

    def serve(connection: socket.socket) -> None:
        connection.sendall(b"ready")
        daemon.got_eof.wait(WAIT)

    daemon.start(serve)
    client: Client = start(tmp_path / "d.sock")
    assert client.read_exactly(5) == b"ready"  # relaying: both directions wait for bytes
    client.relay.send_signal(sent)
    assert client.relay.wait(WAIT) == status
    assert client.stderr() == ""  # no traceback
    assert daemon.got_eof.wait(WAIT)


MODULES = """\
import sys
from bridge.launch import main
status = main(sys.argv[1:])
sys.stderr.write(" ".join(sorted(sys.modules)))
sys.exit(status)
"""
HEAVY = {"trio", "structlog", "orjson", "argparse", "socket", "threading", "selectors",
         "asyncio", "logging", "re", "enum", "typing", "dataclasses", "bridge.cli",
         "bridge.config"}


def test_connect_starts_without_trio_structlog_the_core_or_heavy_stdlib(tmp_path: Path) -> None:
    """With -S the interpreter loads only its own few modules: every other one loaded is the
    relay's (site, and an editable install's import hook, would load re and more first)."""
    daemon = Daemon(tmp_path / "d.sock")

    def serve(connection: socket.socket) -> None:
        daemon.got_eof.wait(WAIT)
        connection.sendall(b"bye")

    daemon.start(serve)
    command = [sys.executable, "-S", "-c", MODULES, "connect", str(tmp_path / "d.sock")]
    done = subprocess.run(command, input=b"hello", capture_output=True, timeout=WAIT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, b"bye"), done.stderr
    loaded = set(done.stderr.decode().split())
    assert "bridge.shell.services.connect" in loaded and "bridge.shell.fdio.bytecopy" in loaded
    assert loaded & HEAVY == set()
    assert [m for m in loaded if m.startswith("bridge.core")] == []
