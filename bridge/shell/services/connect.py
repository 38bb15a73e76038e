"""`mcp-rosetta connect`: the stdio end a client config launches, relaying to a running daemon.

Must not parse anything, nor import more than the relay needs (a client pays every import at
each session's start: no trio, structlog or core here, and `_socket` rather than `socket`,
whose enums cost more to import than the rest of the relay). Bytes go both ways as they come.
It ends when either side closes (its stdin's EOF is passed on as the socket's; the daemon's EOF
ends it). Exit status: 0 when the client ended first (its input closed, or it stopped reading)
and the daemon's answers were relayed; 69 with one line on stderr when the daemon is not there
(naming the unit to start), or when it ended the connection while the client's input was still
open (the daemon refused it, stopped, or its session ended: the daemon's log says which);
130 on SIGINT (Ctrl-C), and SIGTERM's default action.
"""

from __future__ import annotations

import _socket
import _thread
import os

from bridge.errors import ServerUnavailable, UsageError
from bridge.shell.fdio.bytecopy import copy_fd

SERVICE_DIR = "/run/mcp-rosetta/"
FORMS = "unix:PATH or a socket's path (e.g. /run/mcp-rosetta/NAME.sock)"
HUNG_UP = ("the daemon ended the connection while the client's input was still open (it "
           "refused the client, stopped, or the session ended); its log says which")
EX_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789+.-")


def socket_path(address: str) -> str:
    """The path of the Unix socket `address` names; UsageError for what connect cannot reach."""
    is_unix = address.startswith("unix:")
    path = address.removeprefix("unix:")
    if not is_unix and _other_scheme(address):
        raise UsageError(f"connect reaches a daemon's Unix socket only: give {FORMS}, not "
                         f"{address!r} (see mcp-rosetta connect --help)")
    if not path:
        raise UsageError(f"no socket path in {address!r}: give {FORMS}")
    return path


def _other_scheme(address: str) -> bool:
    """Whether `address` opens with a URI scheme (tcp:host:port, http://...): a path has a "/"
    before any ":". (RFC 3986 scheme syntax, without importing re.)"""
    scheme, colon, _ = address.partition(":")
    return bool(colon and scheme[:1].isalpha() and scheme.isascii()
                and set(scheme.lower()) <= _SCHEME_CHARS)


def connect(path: str) -> _socket.socket:
    """A connection to the daemon at `path`; ServerUnavailable (69) saying what to start."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or type(exc).__name__
        raise ServerUnavailable(f"cannot connect to {path}: {reason}; {_what_to_start(path)}") \
            from None
    return sock


def _what_to_start(path: str) -> str:
    name, ext = os.path.splitext(os.path.basename(path))
    if path.startswith(SERVICE_DIR) and ext == ".sock" and name:
        return f"start it with: systemctl enable --now mcp-rosetta@{name}.socket"
    return f"start the daemon with: mcp-rosetta serve --listen unix:{path}"


def run_connect(address: str) -> int:
    """Relay until one side ends; 0, or ServerUnavailable (69) if the daemon ended first."""
    try:
        client_first = _relay(connect(socket_path(address)))
    except KeyboardInterrupt:  # Ctrl-C: nothing to flush or restore, just the shell's status
        return EX_INTERRUPTED
    if not client_first:
        raise ServerUnavailable(HUNG_UP)
    return 0


class _Up:
    """The client's bytes to the daemon, on a thread of their own; at the client's EOF the
    daemon gets EOF too, and the relay knows the client ended first."""

    def __init__(self, daemon: _socket.socket) -> None:
        self.daemon = daemon
        self.input_ended = False

    def run(self) -> None:
        if copy_fd(0, self.daemon.fileno()):
            return  # the daemon hung up: the other direction sees its EOF and ends the relay
        self.input_ended = True
        try:
            self.daemon.shutdown(_socket.SHUT_WR)
        except OSError:  # already gone: the other direction sees it
            return


def _relay(sock: _socket.socket) -> bool:
    """Relay both ways until the daemon's EOF (or the client stops reading); whether the
    client ended first. The daemon's bytes go to stdout on this thread; when it returns, the
    process ends, and with it the other thread, wherever it blocks."""
    up = _Up(sock)
    _thread.start_new_thread(up.run, ())
    client_stopped_reading = copy_fd(sock.fileno(), 1)
    return client_stopped_reading or up.input_ended
