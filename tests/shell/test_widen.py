"""Pipes widened for messages longer than they hold, and only then."""

from __future__ import annotations

import fcntl
import os
import socket

import pytest
import trio

from bridge.shell import fdio
from bridge.shell.outlet import Outlet

F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", None)
pytestmark = pytest.mark.skipif(F_GETPIPE_SZ is None, reason="pipe sizes are Linux's")


def pipe_size(fd: int) -> int:
    assert F_GETPIPE_SZ is not None
    return fcntl.fcntl(fd, F_GETPIPE_SZ)


def test_widen_gives_a_pipe_a_mib_and_leaves_a_socket_alone() -> None:
    reader, writer = os.pipe()
    ours, theirs = socket.socketpair()
    try:
        default = pipe_size(writer)
        fdio.widen(writer)
        fdio.widen(ours.fileno())  # not a pipe: nothing to do, and no error
        assert (default, pipe_size(reader)) == (65536, fdio.PIPE_SIZE)
    finally:
        os.close(reader)
        os.close(writer)
        ours.close()
        theirs.close()


async def test_an_outlet_widens_its_pipe_for_a_message_longer_than_it() -> None:
    reader, writer = os.pipe()
    try:
        async with trio.open_nursery() as nursery:
            outlet = Outlet(writer, nursery, "client")
            assert outlet.write(b"x" * 1000 + b"\n")
            assert pipe_size(writer) == 65536  # small messages: as before
            assert outlet.write(b"y" * 300_000 + b"\n")  # nobody reads: all of it in the pipe
            assert (pipe_size(writer), outlet.queued) == (fdio.PIPE_SIZE, 0)
            outlet.abandon()
    finally:
        os.close(reader)
