"""`mcp-rosetta connect`: a byte relay to a running daemon, as a client config launches it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bridge.errors import ServerUnavailable, UsageError
from bridge.shell.services.connect import connect, socket_path

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
    assert relay.stderr is not None
    # The client never closed its side: the daemon ended it (refused, stopped, crashed).
    assert relay.wait(timeout=10) == 69
    assert relay.stderr.read().decode() == (
        "mcp-rosetta: the daemon ended the connection while the client's input was still "
        "open (it refused the client, stopped, or the session ended); its log says which\n")
    relay.stdin.close()


def test_a_client_that_stops_reading_ends_the_relay_with_0(tmp_path: Path) -> None:
    daemon = EchoDaemon(tmp_path / "d.sock")
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads connect's stdout
    relay = subprocess.Popen([*CONNECT, str(tmp_path / "d.sock")], stdin=subprocess.PIPE,
                             stdout=writer, stderr=subprocess.PIPE)
    os.close(writer)
    assert relay.stdin is not None and relay.stderr is not None
    relay.stdin.write(b"ping\n")
    relay.stdin.flush()
    assert relay.wait(timeout=10) == 0
    assert relay.stderr.read() == b""
    assert daemon.got_eof.wait(5)  # the daemon hears the client is gone
    relay.stdin.close()


@pytest.mark.parametrize(("address", "path"), [
    ("unix:/run/mcp-rosetta/weather.sock", "/run/mcp-rosetta/weather.sock"),
    ("/run/mcp-rosetta/weather.sock", "/run/mcp-rosetta/weather.sock"),
    ("relative.sock", "relative.sock"),
    ("./odd:name.sock", "./odd:name.sock"),
])
def test_a_unix_socket_is_named_by_unix_path_or_a_path(address: str, path: str) -> None:
    assert socket_path(address) == path


@pytest.mark.parametrize("address", ["tcp:localhost:80", "http://localhost/mcp", "TCP:x:1"])
def test_an_address_connect_cannot_reach_is_a_usage_error_naming_the_forms(
        address: str) -> None:
    with pytest.raises(UsageError) as wrong:
        socket_path(address)
    assert str(wrong.value) == (
        "connect reaches a daemon's Unix socket only: give unix:PATH or a socket's path "
        f"(e.g. /run/mcp-rosetta/NAME.sock), not {address!r} (see mcp-rosetta connect --help)")


def test_a_wrong_address_form_exits_64_with_one_line_and_no_suggestion_to_listen_there(
        ) -> None:
    for address in ("tcp:localhost:80", "unix:"):
        done = subprocess.run([*CONNECT, address], capture_output=True, text=True, timeout=30)
        assert done.returncode == 64, done.stderr
        assert done.stdout == "" and done.stderr.count("\n") == 1
        assert "unix:PATH or a socket's path" in done.stderr
        assert "--listen" not in done.stderr


def test_connect_has_its_own_help() -> None:
    done = subprocess.run([*CONNECT, "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: mcp-rosetta connect unix:PATH\n")
    assert "Exit status: 0 when the client ended first" in done.stdout
