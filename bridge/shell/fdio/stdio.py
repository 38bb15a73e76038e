"""Stdout hygiene: the protocol takes fds 0 and 1 for itself; print() and input() cannot touch it.

Must not be called more than once, nor anywhere but at the bridge's start (it rewires the process).
"""

from __future__ import annotations

import os
import sys

from bridge.core.record import record


@record(frozen=True)
class ProtocolFds:
    """Private duplicates of the original stdin and stdout (not inherited by children)."""

    client_in: int
    client_out: int


def take_stdio() -> ProtocolFds:
    """Keep fds 0/1 for the protocol, then point fd 1 and sys.stdout at stderr, fd 0 at /dev/null.

    After this a stray print() from any library lands in the log stream, not in the middle
    of a JSON-RPC line, and a stray read of stdin sees EOF instead of stealing client bytes.
    """
    sys.stdout.flush()
    fds = ProtocolFds(client_in=os.dup(0), client_out=os.dup(1))
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return fds
