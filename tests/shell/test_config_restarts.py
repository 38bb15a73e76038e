"""The restart settings: restart_backoff, max_restarts and restart_window, validated like every
key, and their defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.config import load_settings
from bridge.core.config import CoreConfig
from bridge.errors import ConfigError


def core_from(tmp_path: Path, text: str) -> CoreConfig:
    config = tmp_path / "c.toml"
    config.write_text(text)
    return load_settings(str(config), {}).core


def test_the_defaults_restart_five_times_a_minute_from_half_a_second() -> None:
    core = load_settings(None, {}).core
    assert (core.restart_backoff, core.max_restarts, core.restart_window) == (
        (0.5, 30.0), 5, 60.0)


def test_values_reach_the_core(tmp_path: Path) -> None:
    core = core_from(tmp_path, "restart_backoff = [0.1, 2]\nmax_restarts = 0\n"
                               "restart_window = 5\n")
    assert (core.restart_backoff, core.max_restarts, core.restart_window) == ((0.1, 2.0), 0, 5.0)


@pytest.mark.parametrize(("text", "key"), [
    ("restart_backoff = [2, 1]", "restart_backoff"),
    ("restart_backoff = [0, 1]", "restart_backoff"),
    ("restart_backoff = 1", "restart_backoff"),
    ("max_restarts = -1", "max_restarts"),
    ("max_restarts = 1.5", "max_restarts"),
    ("max_restarts = true", "max_restarts"),
    ("restart_window = -3", "restart_window"),
    ('restart_window = "1 minute"', "restart_window"),
])
def test_bad_values_are_config_errors_naming_the_key(tmp_path: Path, text: str,
                                                      key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        core_from(tmp_path, text + "\n")
