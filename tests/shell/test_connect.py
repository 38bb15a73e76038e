"""`mcp-rosetta connect`: a byte relay to a running daemon, as a client config launches it."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bridge.errors import ServerUnavailable
from bridge.shell.connect import connect

CONNECT = [sys.executable, "-m", "bridge", "connect"]


def test_a_missing_daemon_names_the_unit_to_start() -> None:
    with pytest.raises(ServerUnavailable) as missing:
        connect("/run/mcp-rosetta/weather.sock")
    assert str(missing.value) == (
        "cannot connect to /run/mcp-rosetta/weather.sock: No such file or directory; "
        "start it with: systemctl enable --now mcp-rosetta@weather.socket")


def test_a_daemon_that_is_not_listening_is_one_line_and_exit_69(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    socket.socket(socket.AF_UNIX).bind(str(path))  # a socket file nobody listens on
    done = subprocess.run([*CONNECT, f"unix:{path}"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 69
    assert done.stdout == ""
    assert done.stderr == (f"mcp-rosetta: cannot connect to {path}: Connection refused; start "
                           f"the daemon with: mcp-rosetta serve --listen unix:{path}\n")


class EchoDaemon:
    """A stand-in for the daemon: echoes one connection, upper-cased; can hang up first."""

    def __init__(self, path: Path, hang_up_after: int | None = None) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.hang_up_after = hang_up_after
        self.got_eof = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            seen = 0
            while chunk := connection.recv(65536):
                connection.sendall(chunk.upper())
                seen += len(chunk)
                if self.hang_up_after is not None and seen >= self.hang_up_after:
                    return
            self.got_eof.set()


def test_bytes_cross_both_ways_and_the_clients_eof_reaches_the_daemon(tmp_path: Path) -> None:
    daemon = EchoDaemon(tmp_path / "d.sock")
    payload = b"".join(b'{"id":%d,"pad":"%s"}\n' % (i, b"x" * 1000) for i in range(300))
    done = subprocess.run([*CONNECT, str(tmp_path / "d.sock")], input=payload,
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == payload.upper()
    assert daemon.got_eof.wait(5)


def test_the_relay_ends_when_the_daemon_hangs_up(tmp_path: Path) -> None:
    EchoDaemon(tmp_path / "d.sock", hang_up_after=4)
    relay = subprocess.Popen([*CONNECT, str(tmp_path / "d.sock")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert relay.stdin is not None and relay.stdout is not None
    relay.stdin.write(b"ping\n")
    relay.stdin.flush()
    assert relay.stdout.read() == b"PING\n"  # then EOF: the daemon is gone
    assert relay.wait(timeout=10) == 0  # though the client never closed its side
    relay.stdin.close()
