"""What a newcomer meets first: the demo and its edges, --help, and a config with no server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bridge import cli
from bridge.cli import main
from bridge.errors import EX_CONFIG, EX_USAGE

ROOT = Path(__file__).resolve().parents[1]


def test_the_demo_runs_and_its_lines_fit_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "mcp-rosetta demo"
    assert max(len(line) for line in lines) <= 100
    # Hop lines are cut, not wrapped: the cut ones end exactly at the 100th column.
    assert any(len(line) == 100 and line.endswith("…") for line in lines)
    assert lines[-1] == ("The legacy client never saw the modern era and lost nothing the "
                         "server offers.")


def test_demo_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mcp-rosetta demo [--full | --server]\n")
    assert {"--full", "--server"} <= set(out.split("options:")[1].split())


def test_an_unknown_demo_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--fast"]) == EX_USAGE
    assert capsys.readouterr().err == ("mcp-rosetta demo: unknown argument --fast (usage: "
                                       "mcp-rosetta demo [--full | --server])\n")


def test_demo_takes_full_or_server_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--full", "--server"]) == EX_USAGE
    assert "--full or --server, not both" in capsys.readouterr().err


def test_demo_server_answers_discover_on_stdio() -> None:
    # What the README's "try it" commands start: `mcp-rosetta demo --server`.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    done = subprocess.run([sys.executable, "-m", "bridge", "demo", "--server"],
                          input=json.dumps(request) + "\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["result"]["supportedVersions"] == ["2026-07-28"]


def test_demo_into_a_closed_pipe_stops_quietly_as_a_filter_does() -> None:
    # `mcp-rosetta demo | head -1`: the reader goes away. Its end is closed before the demo
    # writes anything, so the first write already fails, whatever the timing.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "bridge", "demo"], stdout=write_end,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60)
    finally:
        os.close(write_end)
    assert done.stderr == b""
    assert done.returncode == 128 + signal.SIGPIPE  # what a shell reports for `yes | head -1`


def test_help_names_where_the_config_and_units_are(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shipped = capsys.readouterr().out.rsplit("the systemd units:\n", 1)[1].split()
    # An editable install (this checkout's) ships no data files: the checkout's own are named.
    assert [Path(d) for d in shipped] in ([ROOT / "config", ROOT / "systemd"],
                                          [Path(sys.prefix) / "share" / "mcp-rosetta"])
    for folder in map(Path, shipped):
        assert {"mcp-rosetta.toml", "mcp-rosetta@.service"} & {p.name for p in folder.iterdir()}


def test_help_names_the_installed_files_under_the_prefix(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "share" / "mcp-rosetta").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert cli.shipped_files() == f"{tmp_path / 'share' / 'mcp-rosetta'}{os.sep}"
    assert cli.shipped_files() in cli.parser().format_help()


def test_a_config_without_a_server_command_is_a_config_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "weather.toml"
    config.write_text("probe_timeout = 1\n")
    assert main(["--config", str(config)]) == EX_CONFIG
    assert capsys.readouterr().err == (f"mcp-rosetta: config {config}: no server command: set "
                                       "command = [...] in the file, or give one after the "
                                       "options\n")


def test_no_config_and_no_server_command_stays_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EX_USAGE
    assert "no server command" in capsys.readouterr().err
