"""The command line: exit codes (sysexits), one-line errors, --help and --version."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge import __version__
from bridge.cli import _settings, check_parser, main
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
    assert "mcp-rosetta [options] [--] COMMAND [ARGS...]" in out
    assert 'mcp-rosetta [options] --stdio "COMMAND [ARGS...]"' in out
    assert "For a launcher that\neats --, leave it out" in out
    assert "mcp-rosetta demo" in out
    for flag in ("--config", "--server-era", "--probe-timeout", "--request-timeout",
                 "--log-level", "--log-format"):
        assert flag in out
    assert "64 usage" in out and "69 server unavailable" in out and "78 bad config" in out


@pytest.mark.parametrize("argv", [
    [],
    ["--bogus", "--", "true"],
    ["--server-era", "medieval", "--", "true"],
    ["--probe-timeout", "soon", "--", "true"],
    ["--request-timeout", "-1", "--", "true"],
    ["--log-format", "xml", "--", "true"],
    ["--probe", "1", "--", "true"],  # no abbreviations: they would shadow future flags
])
def test_usage_errors_exit_64(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EX_USAGE
    one_line_error(capsys)


@pytest.mark.parametrize("argv", [
    ["npx", "-y", "server-everything", "--config", "x"],
    ["--log-level", "error", "npx", "-y", "server-everything", "--config", "x"],
    ["--", "npx", "-y", "server-everything", "--config", "x"],
    ["--stdio", "npx -y server-everything --config x"],
    ["--stdio", "npx -y 'server-everything' --config x", "--log-level", "error"],
])
def test_the_server_command_starts_at_the_first_argument_not_an_option(
        argv: list[str]) -> None:
    settings, _ = _settings(argv, serve=False)
    assert settings.shell.command == ("npx", "-y", "server-everything", "--config", "x")


def test_serve_and_check_take_the_command_without_dashes_too() -> None:
    settings, _ = _settings(["--max-sessions", "2", "python3", "-m", "s"], serve=True)
    assert settings.shell.command == ("python3", "-m", "s")
    settings, _ = _settings(["--json", "python3", "-m", "s"], serve=False, p=check_parser())
    assert settings.shell.command == ("python3", "-m", "s")


def test_both_stdio_and_a_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stdio", "npx -y a", "npx", "-y", "b"]) == EX_USAGE
    assert "both --stdio and a server command" in one_line_error(capsys)


@pytest.mark.parametrize(("argv", "said"), [
    (["serve", "--token", "abc"], "unknown option --token; did you mean --token-file?"),
    (["--probe", "1", "--", "true"], "unknown option --probe; did you mean --probe-timeout?"),
    (["--bogus", "npx"], "unknown option --bogus (see mcp-rosetta --help)"),
])
def test_an_unknown_option_is_named_as_one(argv: list[str], said: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EX_USAGE
    line = one_line_error(capsys)
    assert said in line and "goes after --" not in line


@pytest.mark.parametrize("argv", [["check", "--version"], ["serve", "--version"]])
def test_every_command_that_starts_a_server_has_version(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert capsys.readouterr().out == f"mcp-rosetta {__version__}\n"


def test_help_is_dash_dash_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help"]) == 0
    top = capsys.readouterr().out
    assert main(["--help"]) == 0
    assert capsys.readouterr().out == top and top.startswith("usage: mcp-rosetta")
    assert main(["help", "serve"]) == 0
    assert capsys.readouterr().out.startswith("usage: mcp-rosetta serve")


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


