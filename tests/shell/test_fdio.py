"""fdio.reader_gone: whether anybody can still read what is written to an fd."""

from __future__ import annotations

import os
import socket
import struct

import pytest

from bridge.shell.fdio import fdio


def test_a_pipe_whose_reader_closed_is_gone() -> None:
    reader, writer = os.pipe()
    try:
        assert not fdio.reader_gone(writer)
        os.close(reader)
        assert fdio.reader_gone(writer)
    finally:
        os.close(writer)


@pytest.mark.parametrize(("ending", "gone"), [
    ("open", False),
    ("shut down writing", False),  # it still reads: a client waiting for its answers
    ("closed", True),
    ("reset", True),
])
def test_a_socket_is_gone_once_its_peer_closed_both_ways_or_reset(ending: str,
                                                                   gone: bool) -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:  # closing twice is fine
        if ending == "shut down writing":
            theirs.shutdown(socket.SHUT_WR)
        elif ending == "reset":
            theirs.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            ours.send(b"unread")  # closing with unread bytes resets the connection
            theirs.close()
        elif ending == "closed":
            theirs.close()
        assert fdio.reader_gone(ours.fileno()) is gone
