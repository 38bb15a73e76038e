"""The era memory's file: one entry per command (its arguments and directory), stored and
forgotten as the core says, private to the user, and no memory at all when unreadable."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from structlog.testing import capture_logs

from bridge.core.config import CoreConfig
from bridge.core.events import Remember
from bridge.shell import logs
from bridge.shell.servers import era_memory
from bridge.shell.servers.era_memory import (
    REMEMBERED,
    EraMemory,
    command_key,
    remembering,
    state_file,
    storing,
)
from bridge.shell.settings import ShellConfig

SERVER = {"name": "plain", "version": "1.30.0"}


def memory(tmp_path: Path, *command: str, cwd: str = "/srv") -> EraMemory:
    return EraMemory(str(tmp_path / "mcp-rosetta" / "eras.json"),
                     command_key(command or ("npx", "-y", "server"), cwd))


def test_the_state_directory_follows_xdg_with_the_home_default() -> None:
    assert state_file({"XDG_STATE_HOME": "/x"}) == "/x/mcp-rosetta/eras.json"
    assert state_file({"HOME": "/home/u"}) == "/home/u/.local/state/mcp-rosetta/eras.json"


def test_a_stored_legacy_era_is_loaded_for_the_same_command_only(tmp_path: Path) -> None:
    assert memory(tmp_path).load() is None
    assert memory(tmp_path).store(Remember("legacy", SERVER))
    assert memory(tmp_path).load() == SERVER
    assert memory(tmp_path, "npx", "-y", "other").load() is None
    assert memory(tmp_path, cwd="/elsewhere").load() is None  # a relative path differs there
    mode = stat.S_IMODE(os.stat(tmp_path / "mcp-rosetta" / "eras.json").st_mode)
    assert mode == 0o600


def test_forgetting_removes_the_entry_and_keeps_the_others(tmp_path: Path) -> None:
    memory(tmp_path).store(Remember("legacy", SERVER))
    memory(tmp_path, "other").store(Remember("legacy", {}))
    assert memory(tmp_path).store(Remember(None))
    assert memory(tmp_path).load() is None
    assert memory(tmp_path, "other").load() == {}


def test_an_unreadable_file_is_no_memory_and_is_written_anew(tmp_path: Path) -> None:
    path = tmp_path / "mcp-rosetta" / "eras.json"
    path.parent.mkdir()
    path.write_text("{not json")
    assert memory(tmp_path).load() is None
    assert memory(tmp_path).store(Remember("legacy", SERVER))
    assert memory(tmp_path).load() == SERVER


def test_a_file_that_cannot_be_written_says_why(tmp_path: Path) -> None:
    (tmp_path / "mcp-rosetta").write_text("a file where the directory should be")
    remembered = memory(tmp_path)
    assert not remembered.store(Remember("legacy", SERVER))
    assert remembered.error is not None and "cannot write" in remembered.error


def test_only_the_newest_commands_are_kept(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(era_memory, "ENTRIES_AT_MOST", 3)
    for n in range(5):
        monkeypatch.setattr(era_memory.time, "time", lambda n=n: 1000.0 + n)
        memory(tmp_path, f"server-{n}").store(Remember("legacy", {}))
    stored = orjson.loads((tmp_path / "mcp-rosetta" / "eras.json").read_bytes())
    assert [orjson.loads(key)[1] for key in stored["servers"]] == [
        "server-4", "server-3", "server-2"]


def test_each_store_is_logged_with_what_it_changes(tmp_path: Path) -> None:
    remembered = memory(tmp_path)
    store = storing(remembered, logs.logger())
    with capture_logs() as captured:
        store(Remember("legacy", SERVER, "it answered initialize as a legacy server"))
        store(Remember(None, reason="it refused initialize"))
    assert [(e["event"], e["reason"]) for e in captured] == [
        ("era.remembered", "it answered initialize as a legacy server"),
        ("era.forgotten", "it refused initialize")]
    assert captured[0]["file"] == remembered.path and captured[0]["effect"] == REMEMBERED


def test_a_store_that_fails_is_a_warning_with_the_way_out(tmp_path: Path) -> None:
    (tmp_path / "mcp-rosetta").write_text("a file where the directory should be")
    with capture_logs() as captured:
        storing(memory(tmp_path), logs.logger())(Remember("legacy", SERVER, "learned"))
    (warning,) = captured
    assert (warning["event"], warning["log_level"]) == ("era.not_stored", "warning")
    assert "remember_era = false" in warning["fix"]


def test_no_memory_when_it_is_off_the_era_pinned_or_the_server_a_url() -> None:
    command = ShellConfig(command=("srv",))
    assert remembering(command, CoreConfig()) is not None
    assert remembering(replace(command, remember_era=False), CoreConfig()) is None
    assert remembering(command, CoreConfig(server_era="legacy")) is None
    assert remembering(ShellConfig(url="https://mcp.example.com/mcp"), CoreConfig()) is None
