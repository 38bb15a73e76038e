"""Pipes widened for messages longer than they hold, and only then."""

from __future__ import annotations

import fcntl
import os
import socket

import pytest
import trio

from bridge.shell.fdio import fdio
from bridge.shell.fdio.outlet import Outlet

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


async def test_an_outlet_writes_pieces_as_one_stretch_and_queues_what_the_pipe_leaves() -> None:
    reader, writer = os.pipe()
    line = b'{"id":"rosetta-1","result":"' + b"z" * 3_000_000 + b'"}'
    view = memoryview(line)
    cut = line.index(b'"rosetta-1"')
    pieces: list[bytes | memoryview] = [b"small\n", view[:cut], b"7", view[cut + 11:], b"\n"]
    expected = b"small\n" + line.replace(b'"rosetta-1"', b"7") + b"\n"
    received = bytearray()
    try:
        async with trio.open_nursery() as nursery:
            outlet = Outlet(writer, nursery, "client")
            assert outlet.write_pieces(pieces)
            # Widened to a MiB and filled; the rest waits, as views of the line (no copy).
            assert pipe_size(writer) == fdio.PIPE_SIZE
            assert outlet.queued == len(expected) - fdio.PIPE_SIZE
            assert outlet.write(b"after\n")  # in order, behind the backlog
            while len(received) < len(expected) + 6:
                await trio.lowlevel.wait_readable(reader)
                received += os.read(reader, 1 << 20)
            assert bytes(received) == expected + b"after\n"
            assert outlet.queued == 0
            outlet.close()
    finally:
        os.close(reader)
