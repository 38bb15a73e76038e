"""The client configs in README.md's "Use a remote server": each JSON block parses, has the
shape its client documents, and its command line is one the real `mcp-rosetta` parser takes,
with the secret in `env` (or a VS Code input), never in the arguments.

Must not start anything: the arguments go through bridge.cli's own parser and config loader,
and the headers through the bridge's own `${VAR}` expansion, with the block's `env` as the
environment the client would give the bridge.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bridge import cli
from bridge.shell.servers.remote.endpoint import with_environment

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Use a remote server"
BLOCK = re.compile(r"\n([^\n]+(?:\n[^\n]+)*)\n\n```json\n(.*?)\n```", re.S)
# The client each block is for, by the paragraph above it; and the shape that client's
# documentation gives (top-level key, and fields of a stdio server).
CLIENTS = {
    "Claude Desktop": ("claude_desktop_config.json", "mcpServers"),
    "VS Code": (".vscode/mcp.json", "servers"),
    "Cursor": ("mcp.json", "mcpServers"),
}
TOKEN = "s3cr3t-token"  # what the user would put in env, or type when VS Code asks
INPUT = re.compile(r"^\$\{input:([^}]+)\}$")


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end != -1 else None]


def blocks() -> dict[str, Any]:
    """Each client's config block, parsed."""
    found: dict[str, Any] = {}
    for above, body in BLOCK.findall(section()):
        client = next((name for name in CLIENTS if above.startswith(name)), None)
        if client is not None:
            found[client] = json.loads(body)
    return found


def test_the_section_has_a_config_for_each_client() -> None:
    assert set(blocks()) == set(CLIENTS)
    for client, (path, _) in CLIENTS.items():
        assert f"{client} (`" in section() and path in section(), client


def servers_of(client: str, config: dict[str, Any]) -> dict[str, Any]:
    key = CLIENTS[client][1]
    allowed = {key, "inputs"} if client == "VS Code" else {key}
    assert set(config) <= allowed and key in config, (client, sorted(config))
    servers: dict[str, Any] = config[key]
    assert servers
    return servers


@pytest.mark.parametrize("client", CLIENTS)
def test_each_config_runs_mcp_rosetta_with_a_url_and_the_secret_in_env(
        client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = blocks()[client]
    for entry in servers_of(client, config).values():
        if client == "VS Code":
            assert entry["type"] == "stdio"  # VS Code's field for a local command
        assert entry["command"] == "mcp-rosetta"
        args, env = entry["args"], environment(entry.get("env", {}), config)
        assert all(isinstance(arg, str) for arg in args)
        assert not any(TOKEN in arg for arg in args)  # never on the command line
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings, _ = cli._settings(list(args), serve=False)  # the real parser and loader
        assert settings.shell.url is not None and settings.shell.url.startswith("https://")
        headers = dict(with_environment(settings.shell.headers, env))
        assert headers == {"Authorization": f"Bearer {TOKEN}"}


def environment(env: dict[str, str], config: dict[str, Any]) -> dict[str, str]:
    """The environment the client gives the bridge: the block's `env`, each value standing for
    the user's token; a VS Code `${input:ID}` must name a declared password input."""
    declared = {i["id"]: i for i in config.get("inputs", [])}
    resolved = {}
    for name, value in env.items():
        match = INPUT.match(value)
        if match:
            assert declared[match[1]]["type"] == "promptString"
            assert declared[match[1]]["password"] is True  # kept in VS Code's secret storage
        resolved[name] = TOKEN
    return resolved


def test_the_command_the_configs_name_is_the_installed_script() -> None:
    # Shipped as a console-script entry point, installed under its own name.
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"mcp-rosetta": "bridge.launch:main"}
