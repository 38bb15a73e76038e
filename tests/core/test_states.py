"""The core's state machines: each transition table names every state, moves only among its
own states, and a move it forbids is an IllegalMove (a bug, logged, never a crash)."""

from __future__ import annotations

import importlib
import pathlib
from enum import Enum
from typing import Any

import pytest

import bridge.core
from bridge.core.probe import Probe, ProbeState
from bridge.core.states import IllegalMove
from tests.core.harness import Harness

CORE = pathlib.Path(bridge.core.__file__).parent


def _tables() -> dict[str, dict[Any, frozenset[Any]]]:
    """Every `_…_MOVES` table of the core, by module and name."""
    found = {}
    for path in sorted(CORE.rglob("*.py")):
        name = ".".join(path.relative_to(CORE.parent.parent).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        for attribute, value in vars(module).items():
            if attribute.startswith("_") and attribute.endswith("_MOVES"):
                found[f"{name}.{attribute}"] = value
    return found


def test_there_are_the_machines_design_md_names() -> None:
    assert len(_tables()) >= 10


@pytest.mark.parametrize(("name", "table"), sorted(_tables().items()))
def test_a_transition_table_covers_its_states_and_no_others(
        name: str, table: dict[Any, frozenset[Any]]) -> None:
    states = {type(state) for state in table}
    assert len(states) == 1, name
    (kind,) = states
    assert issubclass(kind, Enum)
    assert set(table) == set(kind), f"{name} misses {set(kind) - set(table)}"
    for moves in table.values():
        assert isinstance(moves, frozenset) and moves <= set(kind), name


def test_a_forbidden_move_is_an_illegal_move_naming_both_states() -> None:
    bridge = Harness().bridge
    probe = Probe(bridge.ctx, bridge.supervision.probe.timers)
    with pytest.raises(IllegalMove, match="probe: UNSENT -> ANSWERED"):
        probe._move(ProbeState.ANSWERED)
