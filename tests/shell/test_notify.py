"""sd_notify over a real unix datagram socket, path and abstract forms."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bridge.shell.services.notify import sd_notify


def test_without_notify_socket_nothing_happens() -> None:
    assert sd_notify("READY=1", {}) is False


def test_ready_reaches_a_path_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        assert sd_notify("READY=1", {"NOTIFY_SOCKET": path}) is True
        assert sock.recv(100) == b"READY=1"


def test_ready_reaches_an_abstract_socket() -> None:
    name = f"mcp-rosetta-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        assert sd_notify("STOPPING=1", {"NOTIFY_SOCKET": "@" + name}) is True
        assert sock.recv(100) == b"STOPPING=1"


def test_an_unusable_socket_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        sd_notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "missing")})
    with pytest.raises(OSError):
        sd_notify("READY=1", {"NOTIFY_SOCKET": "vsock:2:1234"})
