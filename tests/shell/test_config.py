"""The config file: every key validated, flags on top, and the example documents every key."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from bridge.config import (
    CORE_KEYS,
    DAEMON_KEYS,
    DERIVED_CORE_FIELDS,
    SHELL_KEYS,
    accepted_keys,
    load_settings,
)
from bridge.core.config import CoreConfig
from bridge.errors import ConfigError
from bridge.shell.servers.supervisor import Timing
from bridge.shell.session.pool import FRONT_MAX_SERVERS, PoolSettings

EXAMPLE = Path(__file__).parents[2] / "config" / "mcp-rosetta.toml"


def test_every_core_field_has_a_key_or_is_derived() -> None:
    fields = {f.name for f in dataclasses.fields(CoreConfig)}
    assert fields == set(CORE_KEYS) | DERIVED_CORE_FIELDS


def documented(key: str, text: str) -> bool:
    """Whether the example sets `key` or shows it commented out, with a comment right above."""
    return re.search(rf"(?:^#.*\n)+^(?:# )?\[?{key}\]?\s*(?:=|$)", text, re.MULTILINE) is not None


def test_the_example_config_is_valid_and_documents_every_key() -> None:
    # The keys come from what the code accepts, so a key added anywhere is checked too.
    settings = load_settings(str(EXAMPLE), {})
    text = EXAMPLE.read_text()
    assert [key for key in accepted_keys() if not documented(key, text)] == []
    assert {*CORE_KEYS, *SHELL_KEYS, *DAEMON_KEYS} <= set(accepted_keys())
    assert settings.daemon.max_sessions == 16 and settings.daemon.listen_mode == 0o660
    assert settings.daemon.session_idle == 1800.0  # "30m", as the default
    assert settings.shell.max_message_bytes == 64 * 1024 * 1024


def test_session_idle_is_a_duration(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('session_idle = "90s"\n')
    assert load_settings(str(config), {}).daemon.session_idle == 90.0
    config.write_text('session_idle = "soon"\n')
    with pytest.raises(ConfigError, match="session_idle"):
        load_settings(str(config), {})


def test_a_key_counts_as_documented_only_under_a_comment() -> None:
    text = "# doc\nalpha = 1\n# doc\n# beta = 2\n# [gamma]\n\ndelta = 3\n"
    assert [k for k in ("alpha", "beta", "gamma", "delta") if documented(k, text)] == [
        "alpha", "beta", "gamma"]


def test_values_reach_core_and_shell(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        'command = ["srv", "--x"]\nserver_era = "legacy"\nprobe_timeout = 1\n'
        'shutdown_grace = 0.5\nkill_grace = 3\nlog_level = "debug"\n'
        'listen_backoff = [1, 2]\n[bridge_info]\nname = "b"\nversion = "9"\n')
    settings = load_settings(str(config), {})
    assert settings.core.server_era == "legacy"
    assert settings.core.probe_timeout == 1.0
    assert settings.core.listen_backoff == (1.0, 2.0)
    assert settings.core.bridge_info == {"name": "b", "version": "9"}
    assert settings.core.debug_logs is True
    assert settings.shell.command == ("srv", "--x")
    assert settings.shell.timing == Timing(shutdown_grace=0.5, kill_grace=3.0)


def test_flags_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('command = ["a"]\nprobe_timeout = 1\nlog_level = "debug"\n')
    settings = load_settings(str(config), {"probe_timeout": 9.0, "command": ("b",),
                                           "log_level": "error"})
    assert settings.core.probe_timeout == 9.0
    assert settings.shell.command == ("b",)
    assert settings.core.debug_logs is False


def test_defaults_without_a_file() -> None:
    settings = load_settings(None, {})
    assert settings.core == CoreConfig()
    assert settings.shell.timing == Timing()


def test_booleans_are_not_numbers(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("probe_timeout = true\n")
    with pytest.raises(ConfigError, match="probe_timeout"):
        load_settings(str(config), {})


def test_the_http_front_parks_calls_as_long_as_stdio_and_sizes_its_pools(
        tmp_path: Path) -> None:
    """A parked call holds its own process of its tenant's pool: no shorter parking there."""
    http = {"listen": "http://127.0.0.1:8808/mcp"}
    assert load_settings(None, http).core.parked_timeout == 900.0
    shell = load_settings(None, http).shell
    assert (shell.max_servers, shell.min_servers, shell.server_idle,
            shell.max_servers_total) == (None, 1, 300.0, 64)  # None: the mode's default
    assert PoolSettings.of(shell, FRONT_MAX_SERVERS).max_servers == 8
    config = tmp_path / "c.toml"
    config.write_text('command = ["a"]\nmax_servers = 3\nserver_idle = "1m"\n')
    shell = load_settings(str(config), http).shell
    assert (shell.max_servers, shell.server_idle) == (3, 60.0)
    assert PoolSettings.of(shell, FRONT_MAX_SERVERS).max_servers == 3


