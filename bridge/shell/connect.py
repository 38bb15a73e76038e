"""`mcp-rosetta connect`: the stdio end a client config launches, relaying to a running daemon.

Must not parse anything: bytes go both ways as they come. It ends when either side closes
(its stdin's EOF is passed on as the socket's; the daemon's EOF ends it). Exit status: 0 when
the client ended first (its input closed, or it stopped reading) and the daemon's answers were
relayed; 69 with one line on stderr when the daemon is not there (naming the unit to start),
or when it ended the connection while the client's input was still open (the daemon refused
it, stopped, or its session ended: the daemon's log says which).
"""

from __future__ import annotations

import os
import re
import socket
from typing import TYPE_CHECKING

from bridge.errors import ServerUnavailable, UsageError

if TYPE_CHECKING:  # imported when relaying: a daemon that is not there is told at once
    import trio

CHUNK = 64 * 1024
SERVICE_DIR = "/run/mcp-rosetta/"
# A scheme other than unix: (tcp:host:port, http://...): a path has a "/" before any ":".
_OTHER_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
FORMS = "unix:PATH or a socket's path (e.g. /run/mcp-rosetta/NAME.sock)"
HUNG_UP = ("the daemon ended the connection while the client's input was still open (it "
           "refused the client, stopped, or the session ended); its log says which")


def socket_path(address: str) -> str:
    """The path of the Unix socket `address` names; UsageError for what connect cannot reach."""
    is_unix = address.startswith("unix:")
    path = address.removeprefix("unix:")
    if not is_unix and _OTHER_SCHEME.match(address):
        raise UsageError(f"connect reaches a daemon's Unix socket only: give {FORMS}, not "
                         f"{address!r} (see mcp-rosetta connect --help)")
    if not path:
        raise UsageError(f"no socket path in {address!r}: give {FORMS}")
    return path


def connect(path: str) -> socket.socket:
    """A connection to the daemon at `path`; ServerUnavailable (69) saying what to start."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
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
    sock = connect(socket_path(address))
    import trio

    blocking = os.get_blocking(0), os.get_blocking(1)
    try:
        client_first = trio.run(_relay, sock)
    finally:  # a terminal shared with a shell must stay usable after us
        os.set_blocking(0, blocking[0])
        os.set_blocking(1, blocking[1])
    if not client_first:
        raise ServerUnavailable(HUNG_UP)
    return 0


async def _relay(sock: socket.socket) -> bool:
    """Relay both ways until the daemon's EOF (or the client stops reading); whether the
    client ended first."""
    import trio

    daemon = trio.socket.from_stdlib_socket(sock)
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    input_ended = trio.Event()
    async with stdin, stdout, trio.open_nursery() as nursery:
        nursery.start_soon(_up, stdin, daemon, input_ended)
        client_stopped_reading = await _down(daemon, stdout)
        nursery.cancel_scope.cancel()
    daemon.close()
    return client_stopped_reading or input_ended.is_set()


async def _up(stdin: trio.lowlevel.FdStream, daemon: trio.socket.SocketType,
              input_ended: trio.Event) -> None:
    """The client's bytes to the daemon; at the client's EOF, the daemon gets EOF too."""
    import trio

    try:
        while chunk := await stdin.receive_some(CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[await daemon.send(view):]
        input_ended.set()
        daemon.shutdown(socket.SHUT_WR)
    except (OSError, trio.BrokenResourceError):
        pass  # the daemon hung up: _down sees its EOF and ends the relay


async def _down(daemon: trio.socket.SocketType, stdout: trio.lowlevel.FdStream) -> bool:
    """The daemon's bytes to the client, until the daemon closes; True if the client stopped
    reading first (nothing more can reach it)."""
    import trio

    try:
        while chunk := await daemon.recv(CHUNK):
            try:
                await stdout.send_all(chunk)
            except (OSError, trio.BrokenResourceError):
                return True
    except OSError:
        pass  # reset: the daemon is gone, as at its EOF
    return False
