"""`mcp-rosetta connect`: the stdio end a client config launches, relaying to a running daemon.

Must not parse anything: bytes go both ways as they come. It ends when either side closes
(its stdin's EOF is passed on as the socket's; the daemon's EOF ends it), and a daemon that
is not there is one line on stderr and exit status 69, naming the unit to start.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from bridge.errors import ServerUnavailable

if TYPE_CHECKING:  # imported when relaying: a daemon that is not there is told at once
    import trio

CHUNK = 64 * 1024
SERVICE_DIR = "/run/mcp-rosetta/"


def socket_path(address: str) -> str:
    return address.removeprefix("unix:")


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
    sock = connect(socket_path(address))
    import trio

    blocking = os.get_blocking(0), os.get_blocking(1)
    try:
        trio.run(_relay, sock)
    finally:  # a terminal shared with a shell must stay usable after us
        os.set_blocking(0, blocking[0])
        os.set_blocking(1, blocking[1])
    return 0


async def _relay(sock: socket.socket) -> None:
    import trio

    daemon = trio.socket.from_stdlib_socket(sock)
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    async with stdin, stdout, trio.open_nursery() as nursery:
        nursery.start_soon(_up, stdin, daemon)
        await _down(daemon, stdout)
        nursery.cancel_scope.cancel()
    daemon.close()


async def _up(stdin: trio.lowlevel.FdStream, daemon: trio.socket.SocketType) -> None:
    """The client's bytes to the daemon; at the client's EOF, the daemon gets EOF too."""
    import trio

    try:
        while chunk := await stdin.receive_some(CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[await daemon.send(view):]
        daemon.shutdown(socket.SHUT_WR)
    except (OSError, trio.BrokenResourceError):
        pass  # the daemon hung up: _down sees its EOF and ends the relay


async def _down(daemon: trio.socket.SocketType, stdout: trio.lowlevel.FdStream) -> None:
    """The daemon's bytes to the client, until the daemon closes (or the client stops)."""
    import trio

    try:
        while chunk := await daemon.recv(CHUNK):
            await stdout.send_all(chunk)
    except (OSError, trio.BrokenResourceError):
        pass
