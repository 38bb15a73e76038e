"""Published servers from the registries, through the real `mcp-rosetta`, driven by the
official SDK client of the other era.

Must not stand in for the servers: each is the package as published, pinned to an exact
version (venvs.PUBLISHED) and installed on first use. The legacy npm servers meet the modern
client (mode B); the dual-era PyPI server meets the legacy client (mode A, since it answers
server/discover).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import checks
import venvs
from test_bridge import assert_no_modern_traces


def root_dirs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Two empty directories, and the environment that makes the client give them as its
    roots, one after the other."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    # server-filesystem resolves symlinks before it compares paths; so do the checks.
    first, second = first.resolve(), second.resolve()
    return first, second, {"ROSETTA_E2E_ROOTS": os.pathsep.join((str(first), str(second)))}


def every_call_asks(tmp_path: Path) -> tuple[str, str]:
    """Bridge options that make every call declaring roots ask for them (roots_refresh = 0):
    the client changes its roots between two calls, and a 2026-07-28 client cannot say so."""
    config = tmp_path / "roots.toml"
    config.write_text("roots_refresh = 0\n")
    return "--config", str(config)


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def denied(result: dict[str, Any]) -> bool:
    return result.get("isError") is True and "Access denied" in text(result)


# --- mode B: the modern client, legacy npm servers ------------------------------------------


def test_server_filesystem_started_with_no_directory_works_in_the_clients_roots(
    modern_python, run_client, bridge_command, published_server, tmp_path
):
    server = published_server("server-filesystem")  # no directory: it takes the client's roots
    assert venvs.discover_directly(server)["error"]["code"] == -32601  # a legacy server
    first, second, env = root_dirs(tmp_path)
    report = run_client(modern_python, "filesystem",
                        bridge_command(server, *every_call_asks(tmp_path)), env=env)
    checks.no_errors(report)
    assert text(report["allowed:first"]) == f"Allowed directories:\n{first}"
    assert not report["write:first"].get("isError")
    assert (first / "hello.txt").read_text() == checks.FILE_TEXT
    assert text(report["read:first"]) == checks.FILE_TEXT
    assert denied(report["write:second:before"])
    # The client's roots changed between calls: the server was told and uses the new list.
    assert text(report["allowed:second"]) == f"Allowed directories:\n{second}"
    assert not report["write:second"].get("isError")
    assert text(report["read:second"]) == checks.FILE_TEXT
    assert denied(report["read:first:after"])
    for key in ("allowed:first", "read:first", "allowed:second"):
        assert report[key]["resultType"] == "complete"


def test_server_everything_lists_the_clients_roots_and_serves_every_kind_of_request(
    modern_python, run_client, bridge_command, published_server, tmp_path
):
    first, second, env = root_dirs(tmp_path)
    report = run_client(modern_python, "everything",
                        bridge_command(published_server("server-everything"),
                                       *every_call_asks(tmp_path)), env=env)
    checks.no_errors(report)
    assert "get-roots-list" in report["tools:names"]
    listed = text(report["roots:first"])
    assert "Current MCP Roots (1 total)" in listed
    assert f"URI: {first.as_uri()}" in listed and second.as_uri() not in listed
    listed = text(report["roots:second"])
    assert f"URI: {second.as_uri()}" in listed and first.as_uri() not in listed
    assert text(report["call:echo"]) == "Echo: hi"
    assert text(report["call:get-sum"]) == "The sum of 2 and 3 is 5."
    assert set(report["call:structured"]["structuredContent"]) == {
        "temperature", "conditions", "humidity"}
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3]
    assert f'"text": "{checks.SAMPLING_TEXT}"' in text(report["call:sampling"])
    assert f"Name: {checks.NAME}" in text(report["call:elicitation"])
    assert report["asked"]["sampling"] and report["asked"]["elicitation"]
    assert report["read:first"]["contents"][0]["text"]
    assert report["templates"]["resourceTemplates"]
    prompt = report["prompt:args"]["messages"][0]["content"]
    assert prompt["text"] == "What's weather in Paris?"
    assert report["complete:department"]["completion"]["values"] == ["Engineering"]
    assert report["discover"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "mcp-servers/everything")


# --- mode A: the legacy client, a dual-era PyPI server --------------------------------------


def test_legacy_client_uses_the_dual_era_mcp_server_time(
    legacy_python, run_client, bridge_command, published_server
):
    server = published_server("mcp-server-time")
    discovered = venvs.discover_directly(server)["result"]
    assert checks.MODERN_VERSION in discovered["supportedVersions"]  # so the bridge runs mode A
    report = run_client(legacy_python, "time", bridge_command(server))
    checks.no_errors(report, allowed={"call:unknown"})
    assert report["initialize"]["protocolVersion"] == "2025-11-25"
    assert report["initialize"]["serverInfo"]["name"] == "mcp-time"
    assert report["tools:names"] == ["get_current_time", "convert_time"]
    assert report["call:now"]["structuredContent"]["timezone"] == "UTC"
    converted = json.loads(text(report["call:convert"]))
    assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
    assert converted["time_difference"] == "+9.0h"
    assert report["call:bad_zone"]["isError"] is True
    assert report["call:unknown"]["error"]["code"] == -32602
    assert_no_modern_traces(report)
