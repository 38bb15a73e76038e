"""The outlet's life as a machine: its table, and the moves its writes, closes and breaks make."""

from __future__ import annotations

import os

import pytest
import trio

from bridge.core.states import IllegalMove
from bridge.shell.fdio.outlet import _OUTLET_MOVES, Outlet, OutletState


def test_the_outlet_table_covers_its_states_and_ends_in_closed_or_broken() -> None:
    assert set(_OUTLET_MOVES) == set(OutletState)
    assert {state for state, moves in _OUTLET_MOVES.items() if not moves} == {
        OutletState.CLOSED, OutletState.BROKEN}
    assert OutletState.OPEN not in set().union(*_OUTLET_MOVES.values())


async def test_closing_with_a_backlog_writes_it_out_then_closes() -> None:
    reader, writer = os.pipe()
    try:
        async with trio.open_nursery() as nursery:
            outlet = Outlet(writer, nursery, "client")
            assert outlet.write(b"x" * 3_000_000 + b"\n")  # more than even a widened pipe holds
            assert outlet.queued > 0
            outlet.close()
            assert (outlet.state, outlet.write(b"late\n")) == (OutletState.CLOSING, False)
            received = b""
            while not received.endswith(b"\n"):
                await trio.lowlevel.wait_readable(reader)
                received += os.read(reader, 1 << 20)
            await trio.testing.wait_all_tasks_blocked()
            assert (outlet.state, len(received)) == (OutletState.CLOSED, 3_000_001)
    finally:
        os.close(reader)


async def test_a_peer_gone_breaks_the_outlet_and_abandon_keeps_it_broken() -> None:
    reader, writer = os.pipe()
    os.close(reader)
    told = []
    async with trio.open_nursery() as nursery:
        outlet = Outlet(writer, nursery, "server-1", on_broken=lambda: told.append(True))
        assert not outlet.write(b"{}\n")
        assert outlet.state is OutletState.BROKEN and outlet.ended
        assert outlet.abandon() == (0, 0)
        assert outlet.state is OutletState.BROKEN
    assert told == [True]


async def test_abandon_drops_the_backlog_and_a_forbidden_move_names_both_states() -> None:
    reader, writer = os.pipe()
    try:
        async with trio.open_nursery() as nursery:
            outlet = Outlet(writer, nursery, "client")
            outlet.write(b"y" * 3_000_000 + b"\n")
            dropped, messages = outlet.abandon()
            assert dropped > 0 and messages == 1 and outlet.state is OutletState.CLOSED
            with pytest.raises(IllegalMove, match="outlet client: CLOSED -> CLOSING"):
                outlet._move(OutletState.CLOSING)
    finally:
        os.close(reader)
