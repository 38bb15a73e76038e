"""The probe, quiet and remembered, against real servers: an `mcp` 1.x FastMCP server's
complaint about `server/discover` is one log event, and the second start of a legacy server
command skips the probe (no wait for a server that ignores it); a server that names itself
otherwise than remembered is probed again at the start after.

Must not share the memory between tests: each has its own state directory (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import venvs

from bridge.core.events import Remember
from bridge.shell.servers.era_memory import EraMemory, command_key, state_file

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "memory-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

FASTMCP = textwrap.dedent("""
    from mcp.server.fastmcp import FastMCP
    mcp = FastMCP("plain")
    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b
    mcp.run()
""")
# A legacy server that ignores what it does not know, the probe among it, as some do.
IGNORING = textwrap.dedent("""
    import json, os, sys
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "ignoring",
                                     "version": os.environ.get("VERSION", "1")}}
        elif message.get("method") == "tools/list":
            result = {"tools": []}
        else:
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
""")


class Run:
    """One session: a legacy client's handshake and tools/list, then its end of input."""

    def __init__(self, command: list[str]) -> None:
        started = time.monotonic()
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        self.initialized = json.loads(process.stdout.readline())
        self.answer_s = time.monotonic() - started
        """Seconds from the start to the answer to initialize."""
        process.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(TOOLS) + "\n")
        process.stdin.flush()
        self.tools = json.loads(process.stdout.readline())
        _, err = process.communicate(timeout=60)
        self.stderr = err.splitlines()

    def events(self, name: str) -> list[dict[str, Any]]:
        logged = [json.loads(line) for line in self.stderr if line.startswith("{")]
        return [event for event in logged if event.get("event") == name]

    def server_era(self) -> str:
        (detected,) = [e for e in self.events("era.detected") if e["side"] == "server"]
        reason: str = detected["reason"]
        return reason


def test_a_fastmcp_servers_complaint_is_one_line_and_its_second_start_is_not_probed(
        legacy_python: venvs.SdkPython, tmp_path: Path) -> None:
    server = tmp_path / "plain.py"
    server.write_text(FASTMCP)
    command = [str(legacy_python), str(server)]
    alone = Run(command)
    assert alone.tools["result"]["tools"][0]["name"] == "add"
    first = Run(venvs.bridge_command(command))
    assert first.tools["result"] == alone.tools["result"]
    assert len(first.events("server.stderr")) <= len(alone.stderr) + 3
    (complaint,) = [e for e in first.events("server.stderr") if "lines" in e]
    assert complaint["line"].startswith("Failed to validate request")
    assert complaint["lines"] > 50 and "--server-era legacy" in complaint["about"]
    (learned,) = first.events("era.remembered")
    assert learned["server"] == {"name": "plain", "version": "1.30.0"}

    second = Run(venvs.bridge_command(command))
    assert second.server_era() == "remembered from an earlier start"
    assert second.tools["result"] == alone.tools["result"]
    assert len(second.events("server.stderr")) <= len(alone.stderr)
    assert second.events("era.remembered") == second.events("era.forgotten") == []


def test_a_server_that_ignores_the_probe_waits_for_it_only_once(tmp_path: Path) -> None:
    server = tmp_path / "ignoring.py"
    server.write_text(IGNORING)
    command = venvs.bridge_command([sys.executable, str(server)], "--probe-timeout", "2s")
    first = Run(command)
    assert first.server_era() == "no answer in time"
    assert first.answer_s >= 2.0
    assert first.events("era.remembered")[0]["server"] == {"name": "ignoring", "version": "1"}
    second = Run(command)
    assert second.server_era() == "remembered from an earlier start"
    assert second.answer_s < 1.5, second.answer_s
    assert second.initialized["result"]["serverInfo"]["name"] == "ignoring"


def test_a_server_that_names_itself_otherwise_is_probed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = tmp_path / "ignoring.py"
    server.write_text(IGNORING)
    command = venvs.bridge_command([sys.executable, str(server)], "--probe-timeout", "1s")
    Run(command)
    monkeypatch.setenv("VERSION", "2")  # the bridge passes it on to the server
    upgraded = Run(command)
    monkeypatch.delenv("VERSION")
    assert upgraded.server_era() == "remembered from an earlier start"
    assert upgraded.initialized["result"]["serverInfo"]["version"] == "2"  # served all the same
    (forgotten,) = upgraded.events("era.forgotten")
    assert forgotten["reason"] == ("it names itself {'name': 'ignoring', 'version': '2'}, not "
                                   "{'name': 'ignoring', 'version': '1'}")
    assert Run(command).server_era() == "no answer in time"


def test_remember_era_false_probes_at_every_start(tmp_path: Path) -> None:
    server = tmp_path / "ignoring.py"
    server.write_text(IGNORING)
    config = tmp_path / "forgetful.toml"
    config.write_text("remember_era = false\n")
    command = venvs.bridge_command([sys.executable, str(server)], "--probe-timeout", "1s",
                                   "--config", str(config))
    assert Run(command).events("era.remembered") == []
    assert Run(command).server_era() == "no answer in time"
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "mcp-rosetta").exists()


def check(server: list[str], *options: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--json", *options, "--",
                           *server], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_check_says_what_is_remembered_and_where(tmp_path: Path) -> None:
    server = tmp_path / "ignoring.py"
    server.write_text(IGNORING)
    command = [sys.executable, str(server)]
    assert check(command, "--probe-timeout", "1s")["remembered"] is None
    Run(venvs.bridge_command(command, "--probe-timeout", "1s"))
    report = check(command, "--probe-timeout", "1s")
    assert report["remembered"] == {"name": "ignoring", "version": "1"}
    assert report["memory_file"] == str(
        Path(os.environ["XDG_STATE_HOME"]) / "mcp-rosetta" / "eras.json")
    assert report["forgotten"] is None
    text = subprocess.run([sys.executable, "-m", "bridge", "check", "--probe-timeout", "1s",
                           *command], capture_output=True, text=True, timeout=120).stdout
    assert "  remembered    legacy (ignoring 1): the bridge skips the probe at start; to" in text


def test_check_forgets_a_memory_the_server_contradicts() -> None:
    demo = [sys.executable, "-m", "bridge", "demo", "--server"]  # a modern server
    memory = EraMemory(state_file(os.environ), command_key(tuple(demo), None))
    assert memory.store(Remember("legacy", {"name": "demo", "version": "0"}))
    report = check(demo)
    assert report["era"] == "modern" and report["remembered"] == {"name": "demo",
                                                                   "version": "0"}
    assert report["forgotten"] == "the server answers the probe as a modern server"
    assert memory.load() is None
