"""The daemon's listening socket: systemd's (socket activation) or one bound here."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bridge.errors import ConfigError
from bridge.shell.services.listeners import bind_unix, from_systemd
from bridge.shell.settings import DaemonConfig


def test_a_bound_socket_gets_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    with bind_unix(DaemonConfig(listen=str(path), listen_mode=0o600)):
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_socket_left_by_a_dead_daemon_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    bind_unix(DaemonConfig(listen=str(path))).close()  # closed, file left behind
    with bind_unix(DaemonConfig(listen=str(path))) as sock, socket.socket(socket.AF_UNIX) as c:
        c.connect(str(path))
        assert sock.accept()[0].close() is None


def test_a_live_socket_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    with bind_unix(DaemonConfig(listen=str(path))), pytest.raises(
            ConfigError, match="another process is listening there"):
        bind_unix(DaemonConfig(listen=str(path)))


def test_a_file_in_the_way_is_not_removed(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    path.write_text("precious")
    with pytest.raises(ConfigError, match="exists and is not a socket"):
        bind_unix(DaemonConfig(listen=str(path)))
    assert path.read_text() == "precious"


def test_a_directory_that_does_not_exist_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot listen on .*No such file or directory"):
        bind_unix(DaemonConfig(listen=str(tmp_path / "nope" / "d.sock")))


def test_no_socket_from_systemd_without_its_variables() -> None:
    assert from_systemd({}) is None
    assert from_systemd({"LISTEN_PID": "1", "LISTEN_FDS": "1"}) is None  # not for us


# Run as its own process: the socket must be fd 3, as systemd passes it.
PASSED = textwrap.dedent("""
    import json, os, socket, sys
    from bridge.shell.services.listeners import from_systemd
    os.dup2(int(sys.argv[1]), 3)
    os.close(int(sys.argv[1]))
    os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="x")
    sock = from_systemd()
    print(json.dumps({"fd": sock.fileno(), "family": int(sock.family),
                      "left": sorted(k for k in os.environ if k.startswith("LISTEN_"))}))
""")


def test_the_socket_systemd_passes_is_fd_3_and_its_variables_are_cleared(
        tmp_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "d.sock"))
    listener.listen()
    fd = listener.fileno()
    done = subprocess.run([sys.executable, "-c", PASSED, str(fd)], capture_output=True,
                          text=True, timeout=30, pass_fds=(fd,))
    listener.close()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"fd": 3, "family": int(socket.AF_UNIX), "left": []}


@pytest.mark.parametrize("by", ["number", "name"])
def test_a_bound_socket_gets_its_owner_and_group(tmp_path: Path, by: str) -> None:
    import grp
    import os
    import pwd

    uid, gid = os.getuid(), os.getgid()
    owner = str(uid) if by == "number" else pwd.getpwuid(uid).pw_name
    group = str(gid) if by == "number" else grp.getgrgid(gid).gr_name
    path = tmp_path / "d.sock"
    with bind_unix(DaemonConfig(listen=str(path), listen_owner=owner, listen_group=group)):
        assert (path.stat().st_uid, path.stat().st_gid) == (uid, gid)


def test_an_unknown_owner_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no-such-user-xyz"):
        bind_unix(DaemonConfig(listen=str(tmp_path / "d.sock"), listen_owner="no-such-user-xyz"))
