"""Every command's own --help, and that help and the demo fit an 80-column terminal."""

from __future__ import annotations

import pytest

from bridge.cli import main

COMMANDS = ("serve", "connect", "check", "auth", "demo")


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main([*argv, "--help"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_every_help_fits_80_columns(command: str, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    lines = help_of([command] if command else [], capsys)
    assert [line for line in lines if len(line) > 80] == []
    assert lines[0].startswith(f"usage: mcp-rosetta {command}".rstrip())


def test_the_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    out = "\n".join(help_of([], capsys))
    listed = out.split("commands (each has its own --help):\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0] for line in listed.splitlines()] == list(COMMANDS)
    options = out.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    assert "--log-level" in options and "--listen" not in options  # serve's own


def test_serve_has_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    lines = help_of(["serve"], capsys)
    assert lines[0] == ("usage: mcp-rosetta serve [options] [--listen ADDRESS] "
                        "[[--] COMMAND [ARGS...]]")
    out = "\n".join(lines)
    assert "--listen ADDRESS" in out and "--max-sessions N" in out
    assert "a session of its own" in out and "commands (each" not in out


def test_check_has_its_own_help_with_the_options_that_matter(
        capsys: pytest.CaptureFixture[str]) -> None:
    lines = help_of(["check"], capsys)
    assert lines[0] == "usage: mcp-rosetta check [--json] [options] [--] COMMAND [ARGS...]"
    options = {word for line in lines for word in line.split() if word.startswith("--")}
    assert {"--json", "--config", "--server-era", "--probe-timeout"} <= options
    assert "--log-format" not in options and "--listen" not in options


def test_connect_has_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    lines = help_of(["connect"], capsys)
    assert lines[0] == "usage: mcp-rosetta connect unix:PATH"


def test_a_bad_flag_of_a_command_points_at_its_own_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--json"]) == 64
    assert capsys.readouterr().err.endswith("(see mcp-rosetta serve --help)\n")


def test_the_demo_fits_80_columns(capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) == 80  # the long hop lines are cut at the 80th column
    assert lines[-1].startswith("The legacy client never saw the modern era")


def test_check_without_a_command_says_how_to_give_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json"]) == 64
    assert capsys.readouterr().err == ("mcp-rosetta: no server command: mcp-rosetta check "
                                       "[options] [--] COMMAND [ARGS...]\n")


def test_the_help_says_serve_fronts_clients_of_both_eras(
        capsys: pytest.CaptureFixture[str]) -> None:
    top = "\n".join(help_of([], capsys))
    assert "serve     the bridge as a daemon (Unix socket or HTTP)" in top
    serve = " ".join(" ".join(help_of(["serve"], capsys)).split())
    assert "HTTP front (clients of both eras)" in serve and "modern clients" not in serve
