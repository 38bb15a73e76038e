"""`mcp-rosetta check --url` (and a config's `url`) against the SDKs' Streamable HTTP servers
of both eras: reached through the bridge's own upstream, its era found, its lists counted.

Must not trust check's own code for what to expect: counts come from the peers' sources.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import venvs
from remote_peers import free_port, http_server, without_proxies

from bridge.errors import EX_UNAVAILABLE


@pytest.fixture(scope="module")
def modern_url(modern_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(modern_python, "modern_server")


@pytest.fixture(scope="module")
def legacy_url(legacy_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(legacy_python, "legacy_server")


def check(*arguments: str) -> tuple[int, dict[str, Any], str]:
    """check's exit status, its JSON report, and its stderr."""
    import os

    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--json", *arguments],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=without_proxies(dict(os.environ)))
    return done.returncode, json.loads(done.stdout), done.stderr


def declared(peer: str, kind: str) -> int:
    """How many `@mcp.<kind>(...)` a peer's source declares, templates left out."""
    source = (venvs.PEERS_DIR / f"{peer}.py").read_text()
    found = re.findall(rf"^@(?:mcp|server)\.{kind}\((.*)\)$", source, re.M)
    return len([args for args in found if "{" not in args])


def counts(report: dict[str, Any]) -> dict[str, int]:
    assert all(listing["error"] is None for listing in report["lists"].values())
    return {name: listing["count"] for name, listing in report["lists"].items()}


def test_a_modern_endpoint_is_reached_and_listed(modern_url: str) -> None:
    code, report, _ = check("--url", modern_url)
    assert code == 0, report["failure"]
    assert (report["era"], report["era_reason"]) == ("modern", "answered server/discover")
    assert report["options"] == ["--url", modern_url] and report["command"] == []
    source = (venvs.PEERS_DIR / "modern_server.py").read_text()
    # Its table, and over HTTP the one tool it adds there (TOOLS["regional"]).
    tools = len(re.findall(r'^\s+"\w+": tool\(', source, re.M)) + 1
    assert counts(report)["tools"] == tools
    assert report["server_info"]["name"] == "rosetta-modern-server"
    assert report["modes"] == {"legacy": "A", "modern": "P"}


def test_a_legacy_endpoint_is_reached_and_listed(legacy_url: str) -> None:
    code, report, _ = check("--url", legacy_url)
    assert code == 0, report["failure"]
    assert report["era"] == "legacy" and report["legacy_version"] == "2025-11-25"
    assert counts(report) == {kind + "s": declared("legacy_server", kind)
                              for kind in ("tool", "prompt", "resource")}
    assert report["modes"] == {"legacy": "P", "modern": "B"}


def test_the_url_can_come_from_the_config(legacy_url: str, tmp_path: Path) -> None:
    config = tmp_path / "remote.toml"
    config.write_text(f'url = "{legacy_url}"\n')
    code, report, stderr = check("--config", str(config))
    assert code == 0, stderr
    assert report["era"] == "legacy" and report["options"] == ["--url", legacy_url]


def test_a_pin_the_endpoint_contradicts_fails_as_on_stdio(legacy_url: str) -> None:
    code, report, _ = check("--url", legacy_url, "--server-era", "modern")
    assert code == EX_UNAVAILABLE
    assert report["failure"].startswith(
        "server_era is pinned to modern, but the server answered server/discover like a "
        "legacy server")


def test_an_endpoint_nobody_listens_on_is_69_naming_the_fix() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    code, report, stderr = check("--url", url)
    assert code == EX_UNAVAILABLE
    assert f"cannot connect to {url}" in report["failure"]
    assert "check that the server runs and the URL (host, port) is right" in report["failure"]
    assert stderr.startswith("mcp-rosetta: server unavailable: ")


def test_the_text_report_names_the_url(modern_url: str) -> None:
    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--url", modern_url],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[0] == f"mcp-rosetta check --url {modern_url}"
    assert done.stdout.endswith("ok: mcp-rosetta can serve it\n")
