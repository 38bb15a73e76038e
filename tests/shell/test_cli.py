"""The command line: exit codes (sysexits), one-line errors, --help and --version."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge import __version__
from bridge.cli import main
from bridge.errors import EX_CONFIG, EX_USAGE


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("mcp-rosetta: ")
    return lines[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"mcp-rosetta {__version__}\n"


def test_help_names_the_usage_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "mcp-rosetta [options] -- COMMAND [ARGS...]" in out
    assert "mcp-rosetta demo" in out
    for flag in ("--config", "--server-era", "--probe-timeout", "--request-timeout",
                 "--log-level", "--log-format"):
        assert flag in out
    assert "64 usage" in out and "69 server unavailable" in out and "78 bad config" in out


@pytest.mark.parametrize("argv", [
    [],
    ["--bogus", "--", "true"],
    ["server.py"],
    ["--server-era", "medieval", "--", "true"],
    ["--probe-timeout", "soon", "--", "true"],
    ["--request-timeout", "-1", "--", "true"],
    ["--log-format", "xml", "--", "true"],
    ["--probe", "1", "--", "true"],  # no abbreviations: they would shadow future flags
])
def test_usage_errors_exit_64(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EX_USAGE
    one_line_error(capsys)


def test_a_positional_command_gets_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    main(["python", "server.py"])
    assert "the server command goes after --" in one_line_error(capsys)


@pytest.mark.parametrize("text", [
    "colour = 'blue'\n",
    "probe_timeout = 'soon'\n",
    "probe_timeout = -1\n",
    "server_era = 'medieval'\n",
    "mrtr_max_rounds = 0\n",
    "mrtr_backoff = [5, 1]\n",
    "command = []\n",
    "log_level = 'loud'\n",
    "[bridge_info]\nname = 'x'\n",
    "this is not toml\n",
])
def test_bad_config_exits_78_in_one_line(text: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    assert main(["--config", str(config), "--", "true"]) == EX_CONFIG
    assert str(config) in one_line_error(capsys)


def test_unreadable_config_exits_78(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "absent.toml"), "--", "true"]) == EX_CONFIG
    assert "cannot read config" in one_line_error(capsys)


