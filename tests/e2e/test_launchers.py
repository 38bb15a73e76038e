"""A launcher that eats every `--` (the MCP Inspector CLI, its 2.x line and its 0.x line)
launches the bridge with the server command right after the bridge's options, and shows the
bridge's usage errors.

The Inspector's CLI (its `--cli` form, stdio transport) drops each `--` it is given, and
shows nothing of its server's stderr: the bridge must take the server command without `--`,
and tell a wrong command line on stdout, as the error of the client's first request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import conformance_suite as cs
import pytest
import venvs

RUN_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    prefix = venvs.npm_client("inspector")
    return [cs.node(), str(prefix / "node_modules" / ".bin" / "mcp-inspector"), "--cli"]


def inspect(inspector: list[str], bridge_args: list[str], era: str,
            home: Path) -> subprocess.CompletedProcess[str]:
    cmd = [*inspector, sys.executable, "-m", "bridge", *bridge_args,
           "--protocol-era", era, "--format", "json", "--method", "tools/list"]
    env = {**os.environ, "HOME": str(home)}  # its catalog and client config stay here
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_the_inspector_launches_the_bridge_without_dashes(
        inspector: list[str], era: str, server: str, legacy_python: venvs.SdkPython,
        modern_python: venvs.SdkPython, tmp_path: Path) -> None:
    python = legacy_python if server == "legacy" else modern_python
    proc = inspect(inspector, python.peer(f"{server}_server"), era, tmp_path)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    tools = {tool["name"] for tool in json.loads(proc.stdout)["result"]["tools"]}
    assert "echo" in tools


# Published servers of both eras: server-everything is legacy, mcp-server-time dual-era.
PUBLISHED = {"server-everything": "echo", "mcp-server-time": "get_current_time"}


@pytest.fixture(scope="module")
def inspector_0_15() -> list[str]:
    prefix = venvs.npm_client("inspector-0.15")
    return [cs.node(), str(prefix / "node_modules" / ".bin" / "mcp-inspector"), "--cli"]


@pytest.mark.parametrize("server", sorted(PUBLISHED))
def test_the_inspector_0_15_launches_the_bridge_before_a_published_server(
        inspector_0_15: list[str], server: str, tmp_path: Path) -> None:
    cmd = [*inspector_0_15, sys.executable, "-m", "bridge", *venvs.published_server(server),
           "--method", "tools/list"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL, env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert PUBLISHED[server] in {tool["name"] for tool in json.loads(proc.stdout)["tools"]}


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("server", sorted(PUBLISHED))
def test_the_inspector_launches_the_bridge_before_a_published_server(
        inspector: list[str], era: str, server: str, tmp_path: Path) -> None:
    proc = inspect(inspector, venvs.published_server(server), era, tmp_path)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    tools = {tool["name"] for tool in json.loads(proc.stdout)["result"]["tools"]}
    assert PUBLISHED[server] in tools


def test_the_inspector_shows_the_bridges_usage_error(
        inspector: list[str], modern_python: venvs.SdkPython, tmp_path: Path) -> None:
    proc = inspect(inspector, ["--server-era", "medieval",
                               *modern_python.peer("modern_server")], "legacy", tmp_path)
    assert proc.returncode != 0
    shown = json.loads(proc.stdout.strip() or proc.stderr.strip().splitlines()[-1])
    assert "argument --server-era: invalid choice: 'medieval'" in shown["error"]["message"]
