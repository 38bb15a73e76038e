"""bridge.collector: the collector paused for the start-up, and on again whatever happens."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bridge import collector, launch


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    gc.unfreeze()
    gc.enable()


def test_resume_freezes_what_start_up_made_and_turns_the_collector_on() -> None:
    collector.pause()
    assert not gc.isenabled()
    collector.resume()
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    collector.resume()  # a second call changes nothing
    assert gc.get_freeze_count() == frozen
    assert collector.state()["gc_enabled"] is True


def test_resume_leaves_a_running_collector_alone() -> None:
    gc.unfreeze()
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_command_turns_it_back_on_after_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert launch.main(["--no-such-flag"]) == 64
    assert gc.isenabled()
    assert "--no-such-flag" in capsys.readouterr().err


def test_the_command_turns_it_back_on_after_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert launch.main(["--version"]) == 0
    assert gc.isenabled()
    assert "mcp-rosetta" in capsys.readouterr().out
