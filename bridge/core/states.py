"""What every state machine of the core shares: the error of a move its table forbids.

Must not hold a state: each machine keeps its enum, its `_MOVES` table (each state to the
states it may go to) and one method that moves and checks; this module names the failure.
"""

from __future__ import annotations

from enum import Enum


class IllegalMove(Exception):
    """A state change the machine's transition table does not allow: a bug in the core, which
    `Bridge.handle` logs as `bridge.error` (it costs one message, not the session)."""

    def __init__(self, machine: str, now: Enum, to: Enum) -> None:
        super().__init__(f"{machine}: {now.name} -> {to.name}")
