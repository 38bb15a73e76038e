"""Durations and sizes with units, and level names in any case: in flags and in the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli import _overrides, main, parser
from bridge.config import load_settings, milliseconds, seconds, size
from bridge.errors import EX_CONFIG, EX_USAGE


@pytest.mark.parametrize(("text", "expected"), [
    ("5s", 5.0), ("250ms", 0.25), ("1.5s", 1.5), ("2m", 120.0), ("1h", 3600.0),
    ("5", 5.0), ("0", 0.0), (".5s", 0.5), ("3 S", 3.0), (7, 7.0), (0.25, 0.25),
])
def test_durations(text: str | float, expected: float) -> None:
    assert seconds(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("64MiB", 64 * 1024**2), ("512KiB", 512 * 1024), ("1GiB", 1024**3), ("1000000", 10**6),
    ("1.5MiB", 1572864), ("1kB", 1000), ("2MB", 2 * 10**6), ("10B", 10), (4096, 4096),
])
def test_sizes(text: str | int, expected: int) -> None:
    assert size(text) == expected


@pytest.mark.parametrize("bad", ["soon", "5x", "-1s", "1e3", "inf", "", True, None, [5]])
def test_bad_durations_say_what_is_accepted(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^expected seconds >= 0 .*250ms, 2m"):
        seconds(bad)


@pytest.mark.parametrize("bad", ["0", "1.5", "64 furlongs", "-1KiB", "0.5B", 0, 1.5, True])
def test_bad_sizes_say_what_is_accepted(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^expected bytes as an integer >= 1 .*64MiB"):
        size(bad)


def test_milliseconds_take_units_too() -> None:
    assert [milliseconds(v) for v in (60000, "60s", "250ms", "100")] == [60000, 60000, 250, 100]
    with pytest.raises(ValueError, match="milliseconds"):
        milliseconds(1.5)


def test_flags_take_units_and_levels_in_any_case() -> None:
    args = parser(serve=True).parse_args([
        "--probe-timeout", "250ms", "--request-timeout", "2m", "--max-message-bytes", "1MiB",
        "--log-level", "DEBUG", "--default-log-level", "Info"])
    values = _overrides(args, ["srv"])
    assert values == {"probe_timeout": 0.25, "request_timeout": 120.0,
                      "max_message_bytes": 1024**2, "log_level": "debug",
                      "default_log_level": "info", "command": ("srv",)}


def test_the_config_takes_units_and_levels_in_any_case(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('probe_timeout = "1.5s"\nrestart_backoff = ["250ms", "1m"]\n'
                      'max_message_bytes = "512KiB"\nlog_level = "WARNING"\n'
                      'default_log_level = "Notice"\ncache_ttl_ms = "2s"\n'
                      'shutdown_grace = 1\n')
    settings = load_settings(str(config), {})
    assert settings.core.probe_timeout == 1.5
    assert settings.core.restart_backoff == (0.25, 60.0)
    assert settings.core.default_log_level == "notice"
    assert settings.core.cache_ttl_ms == 2000
    assert settings.shell.max_message_bytes == 512 * 1024
    assert settings.shell.log_level == "warning"
    assert settings.shell.timing.shutdown_grace == 1.0


def test_a_bad_unit_in_a_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--probe-timeout", "5 fortnights", "--", "true"]) == EX_USAGE
    err = capsys.readouterr().err
    assert "'5 fortnights': expected seconds >= 0 as a number or with a unit" in err
    assert err.endswith("(see mcp-rosetta --help)\n")


def test_a_bad_unit_in_the_config_names_the_key(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('max_message_bytes = "64 MB please"\n')
    assert main(["--config", str(config), "--", "true"]) == EX_CONFIG
    assert capsys.readouterr().err == (
        f"mcp-rosetta: config {config}: max_message_bytes: expected bytes as an integer >= 1 "
        "or with a unit: 1000000, 512KiB, 64MiB, 1GiB (or kB, MB, GB) (got '64 MB please')\n")


def test_an_unknown_level_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--log-level", "LOUD", "--", "true"]) == EX_USAGE
    assert "invalid choice: 'loud'" in capsys.readouterr().err
