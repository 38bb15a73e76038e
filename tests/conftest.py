"""What every test shares: a state directory of its own.

The bridge remembers a legacy server command's era in the user's state directory
(bridge/shell/servers/era_memory.py). A test that starts a bridge must meet it as a first
start does, whatever ran before it: each test gets a directory of its own (created only if a
bridge writes to it), which the processes it starts inherit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

_NUMBERS = itertools.count()


@pytest.fixture(scope="session")
def _state_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


@pytest.fixture(autouse=True)
def _own_state_directory(_state_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_STATE_HOME", str(_state_root / str(next(_NUMBERS))))
    yield
