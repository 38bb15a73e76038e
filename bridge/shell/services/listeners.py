"""A service's listening socket, Unix or TCP: handed over by systemd (socket activation), or
bound here.

Must not accept or serve connections (service.py's accept loop does). A Unix socket bound
here is removed again when the daemon stops; one systemd passed belongs to systemd.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from collections.abc import Callable, Iterator, MutableMapping

from bridge.errors import ConfigError
from bridge.shell.settings import DaemonConfig

# sd_listen_fds(3): passed sockets start at fd 3.
LISTEN_FDS_START = 3
BACKLOG = 64
TCP_BACKLOG = 128


def from_systemd(environ: MutableMapping[str, str] = os.environ) -> socket.socket | None:
    """The socket systemd passed (a .socket unit with Accept=no), or None if it passed none.

    The variables are removed once read, as sd_listen_fds(unset_environment=1) does: they are
    this process's, not its children's.
    """
    if environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    count = environ.get("LISTEN_FDS", "0")
    for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        environ.pop(key, None)
    if count != "1":
        raise ConfigError(f"systemd passed {count} sockets; the mcp-rosetta service takes one "
                          "(a .socket unit with one ListenStream= and Accept=no)")
    os.set_inheritable(LISTEN_FDS_START, False)
    sock = socket.socket(fileno=LISTEN_FDS_START)
    if sock.type != socket.SOCK_STREAM:
        raise ConfigError("systemd passed a socket that is not a stream socket (ListenStream=)")
    return sock


@contextlib.contextmanager
def listening(config: DaemonConfig) -> Iterator[socket.socket]:
    """The listening socket for the daemon's lifetime: systemd's, or `listen` bound here."""
    passed = from_systemd()
    if passed is not None:
        with passed:
            yield passed
        return
    if config.listen is None:
        raise ConfigError('nowhere to listen: set listen = "unix:/path/to.sock" in the config, '
                          "give --listen, or start the service from its .socket unit")
    sock = bind_unix(config)
    try:
        with sock:
            yield sock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(config.listen)


def tcp_listener(listen: str, host: str, port: int) -> socket.socket:
    """systemd's TCP socket, or `host`:`port` bound here; ConfigError naming the problem
    (`listen` as the user wrote it)."""
    passed = from_systemd()
    if passed is not None:
        if passed.family not in (socket.AF_INET, socket.AF_INET6):
            passed.close()
            raise ConfigError("systemd passed a socket that is not TCP; the HTTP front "
                              "takes a .socket unit with ListenStream=HOST:PORT")
        return passed
    try:
        return bind_tcp(host, port)
    except OSError as exc:
        fix = ""
        if exc.errno == errno.EADDRINUSE:
            fix = (f"; another process holds port {port} (`ss -ltnp 'sport = :{port}'` "
                   "names it): stop it, or listen on another port")
        raise ConfigError(f"cannot listen on {listen}: {exc.strerror}{fix}") from None


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(TCP_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def bind_unix(config: DaemonConfig) -> socket.socket:
    """Bind and listen on `config.listen`, with its mode and owner; ConfigError if it cannot."""
    path = config.listen
    assert path is not None
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, config.listen_mode)
        if config.listen_owner is not None or config.listen_group is not None:
            os.chown(path, _uid(config.listen_owner), _gid(config.listen_group))
        sock.listen(BACKLOG)
    except (OSError, KeyError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot listen on {path}: {reason}") from None
    return sock


def _clear_stale(path: str) -> None:
    """Remove a socket file left by a daemon that is gone; refuse to take over a live one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(f"cannot listen on {path}: it exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)  # nobody listens: a leftover
            return
    raise ConfigError(f"cannot listen on {path}: another process is listening there")


def _uid(owner: str | None) -> int:
    import pwd

    return _account(owner, lambda name: pwd.getpwnam(name).pw_uid)


def _gid(group: str | None) -> int:
    import grp

    return _account(group, lambda name: grp.getgrnam(name).gr_gid)


def _account(name: str | None, lookup: Callable[[str], int]) -> int:
    """A user or group by name or number; -1 (leave it as it is) for None."""
    if name is None:
        return -1
    return int(name) if name.isdigit() else lookup(name)
