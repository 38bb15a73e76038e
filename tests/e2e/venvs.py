"""The two official Python SDKs and some published servers, each installed once in its own
cached environment, and peer runners.

Must not import either SDK into the test process: the SDKs only ever run in the peer
subprocesses, under the interpreter of their own environment.

- legacy: `mcp==1.30.0` (initialize handshake, protocol 2025-11-25 and older)
- modern: `mcp==2.3.0`  (dual-era SDK; our peers pin it to 2026-07-28 where they must)
- published servers (`published_server`), each pinned to an exact version: npm packages
  installed with `npm install --prefix` (node and npm must be on PATH), PyPI packages in a
  virtual environment of their own.

Environments live in `$MCP_ROSETTA_E2E_CACHE` (default `~/.cache/mcp-rosetta-e2e/`), one
per (era or server, pin, interpreter version), built once under a file lock so parallel test
runs (xdist workers, two checkouts) neither clash nor build twice. A finished environment is
marked by a `.rosetta-ready` file holding its pin; a half-built one is rebuilt.
`MCP_ROSETTA_E2E_LEGACY_PYTHON` / `MCP_ROSETTA_E2E_MODERN_PYTHON` point at an existing
interpreter instead (one that already has the right SDK installed).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

E2E_DIR = Path(__file__).resolve().parent
PEERS_DIR = E2E_DIR / "peers"
REPO_ROOT = E2E_DIR.parents[1]

PINS = {"legacy": "mcp==1.30.0", "modern": "mcp==2.3.0"}


@dataclass(frozen=True)
class Published:
    """A server from a package registry: what to install, and the program it installs."""

    registry: str  # "npm" or "pypi"
    packages: tuple[str, ...]  # exact pins, the server's first
    program: str


# npm resolves a package's own dependencies by range, so the SDK the servers share is pinned
# too; likewise the mcp a PyPI server runs on.
NPM_SDK = "@modelcontextprotocol/sdk@1.32.2"
PUBLISHED = {
    "server-everything": Published(
        "npm", ("@modelcontextprotocol/server-everything@2026.8.31", NPM_SDK),
        "mcp-server-everything"),
    "server-filesystem": Published(
        "npm", ("@modelcontextprotocol/server-filesystem@2026.8.31", NPM_SDK),
        "mcp-server-filesystem"),
    "mcp-server-time": Published(
        "pypi", ("mcp-server-time==2026.10.19", "mcp==2.3.0"), "mcp-server-time"),
    # Not a server: the relay issue 21 measures against (Streamable HTTP in front of a stdio
    # server). It pins its own SDKs exactly, so NPM_SDK is left out.
    "supergateway": Published("npm", ("supergateway@4.0.0",), "supergateway"),
}
# Not servers: the HTTP clients of issue 21's e2e tests (tests/e2e/test_http_clients.py).
# `program` is what the install is checked by: a bin, or a package's own file for a library.
NPM_CLIENTS = {
    # The TypeScript SDK's clients, both lines: 1.x (`@modelcontextprotocol/sdk`) and the v2
    # client package; peers/ts_client.mjs runs beside them.
    "ts-clients": Published(
        "npm", ("@modelcontextprotocol/client@2.4.0", NPM_SDK),
        "../@modelcontextprotocol/client/package.json"),
    # Needs node >= 22.19: run under conformance_suite.node().
    "inspector": Published("npm", ("@modelcontextprotocol/inspector@2.12.0",), "mcp-inspector"),
    # Its 0.x line, as many users still run it: a legacy-era client.
    "inspector-0.15": Published("npm", ("@modelcontextprotocol/inspector@0.15.0",),
                                "mcp-inspector"),
    "mcp-remote": Published("npm", ("mcp-remote@0.15.1",), "mcp-remote"),
    # Not a client either: the authorization server of tests/e2e/test_remote_oauth_server.py,
    # run by peers/oauth_server.mjs under conformance_suite.node() (it wants node >= 22).
    "oidc-provider": Published("npm", ("oidc-provider@9.13.3",),
                               "../oidc-provider/package.json"),
}
CLIENTS = {"legacy": "legacy_client.py", "modern": "modern_client.py"}
READY_MARKER = ".rosetta-ready"
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class SdkPython:
    """An interpreter with one era's SDK installed, and the client peer that runs under it."""

    era: str
    path: str

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    @property
    def client(self) -> str:
        return CLIENTS[self.era]

    def peer(self, script: str, *args: str) -> list[str]:
        """The command that runs peers/<script>.py under this interpreter."""
        name = script if script.endswith(".py") else f"{script}.py"
        return [self.path, str(PEERS_DIR / name), *args]


def cache_root() -> Path:
    configured = os.environ.get("MCP_ROSETTA_E2E_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "mcp-rosetta-e2e"


def sdk_python(era: str) -> SdkPython:
    """The interpreter for `era` ("legacy" or "modern"), building its environment if needed."""
    override = os.environ.get(f"MCP_ROSETTA_E2E_{era.upper()}_PYTHON")
    if override:
        return SdkPython(era, override)
    pin = PINS[era]
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    version = f"py{sys.version_info.major}{sys.version_info.minor}"
    venv = root / f"{era}-{pin.replace('==', '-')}-{version}"
    with file_lock(root / f"{venv.name}.lock"):
        if not is_ready(venv, pin):
            build(venv, pin)
    return SdkPython(era, str(venv / "bin" / "python"))


def published_server(name: str) -> list[str]:
    """The command that starts the published server `name` (a key of PUBLISHED), installing
    it first if needed."""
    return [str(installed(name, PUBLISHED[name])[1])]


def npm_client(name: str) -> Path:
    """The npm prefix of the client package `name` (a key of NPM_CLIENTS), installing it
    first if needed; its programs are in node_modules/.bin, its packages in node_modules."""
    client = NPM_CLIENTS[name]
    return installed(f"client-{name}", client)[0]


def npm_peer(client: str, script: str) -> Path:
    """peers/`script` copied beside the npm client `client`'s node_modules (an ES module
    resolves its imports from where it lies), atomically: another run may be starting it."""
    target = npm_client(client) / script
    tmp = target.with_name(f".{script}.tmp")
    tmp.write_bytes((PEERS_DIR / script).read_bytes())
    os.replace(tmp, target)
    return target


def installed(name: str, server: Published) -> tuple[Path, Path]:
    """`server` installed under `name` once: its home (prefix or venv) and its program (or
    checked file)."""
    pin = " ".join(server.packages)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    if server.registry == "npm":
        home = root / f"npm-{name}-{server.packages[0].rpartition('@')[2]}"
        program = home / "node_modules" / ".bin" / server.program
    else:
        version = f"py{sys.version_info.major}{sys.version_info.minor}"
        home = root / f"pypi-{server.packages[0].replace('==', '-')}-{version}"
        program = home / "bin" / server.program
    with file_lock(root / f"{home.name}.lock"):
        if not is_ready(home, pin, program):
            (build_npm if server.registry == "npm" else build)(home, *server.packages)
    return home, program


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_ready(home: Path, pin: str, program: Path | None = None) -> bool:
    marker = home / READY_MARKER
    return (
        marker.is_file()
        and marker.read_text().strip() == pin
        and (program or home / "bin" / "python").exists()
    )


def build(venv: Path, *pins: str) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    run_checked([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    run_checked([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 *pins])
    (venv / READY_MARKER).write_text(" ".join(pins) + "\n")


def build_npm(prefix: Path, *pins: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the tests of published npm servers need node and npm on PATH")
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    run_checked([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                 "--loglevel=error", *pins])
    (prefix / READY_MARKER).write_text(" ".join(pins) + "\n")


def run_checked(cmd: Sequence[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def bridge_command(server_cmd: Sequence[str], *options: str) -> list[str]:
    """The bridge in front of `server_cmd`, run from the dev environment (the repo's)."""
    return [sys.executable, "-m", "bridge", *options, "--", *server_cmd]


def discover_directly(server_cmd: Sequence[str], timeout: float = 60.0) -> dict[str, Any]:
    """The server's answer to a 2026-07-28 server/discover written straight to it (no SDK, no
    bridge): a result for a server that speaks the modern era, an error for a legacy one."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    proc = subprocess.run(list(server_cmd), input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=timeout)
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    replies = [a for a in answers if a.get("id") == 1]
    assert replies, f"no answer to server/discover:\n{proc.stdout}\n{proc.stderr[-2000:]}"
    reply: dict[str, Any] = replies[0]
    return reply


def run_client(
    python: SdkPython,
    scenario: str,
    server_cmd: Sequence[str],
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run `python`'s client peer on `scenario` against `server_cmd`; its parsed JSON report.

    The report gains `_stderr` (the tail of the client's and server's stderr) so a failing
    assertion can show what the peers said. `env` adds to the test process's environment.
    """
    cmd = [python.path, str(PEERS_DIR / python.client), scenario, "--", *server_cmd]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        report: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise AssertionError(
            f"{python.client} {scenario} printed no JSON report (exit {proc.returncode})\n"
            f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
        ) from exc
    report["_stderr"] = proc.stderr[-4000:]
    return report
