"""Real HTTP clients over real HTTP on loopback, through `mcp-rosetta serve --listen http://…`
in front of a legacy (mcp 1.30 FastMCP) and a modern (mcp 2.3, 2026-07-28 only) stdio server.

Must not fake a client or a server: every client is the published package as a host runs it
(tests/e2e/venvs.py pins them), the front a `python -m bridge serve` process. One front per
server for the module: each client adds a tool of its own name, so they do not meet.

Each client runs the tour: list tools and call `echo`; call `slow` with progress; call
`chatty` with logs asked for at `warning`; call `ask_name`, whose elicitation the client
answers (a legacy server asks mid-call; a modern one, or the bridge for a legacy server in
front of a modern client, answers `input_required`); call `add_tool` and hear the tools
`list_changed`; list again and call the new tool. What each checks:

| client (era on the wire) | progress | logs | elicitation | list_changed |
|---|---|---|---|---|
| Python SDK 2.x `Client(url)`, 2026-07-28 (modern) | 3 values | 2 (1) | answered (2) | listen (3) |
| Python SDK 1.x `streamablehttp_client` (legacy) | 3 values | 2 (4) | answered | heard |
| TS SDK 1.x `StreamableHTTPClientTransport` (legacy) | 3 values | 2 (4) | answered | heard |
| TS v2 `@modelcontextprotocol/client` (modern) (8) | 3 values | 2 (1) | answered (2) | listen (3) |
| TS v2 in its default negotiation (legacy session) | 3 values | 2 (4) | answered | heard |
| inspector CLI `--transport http`, each era | (5) | (5) | refused (6) | next list (7) |
| `mcp-remote` under a Python SDK 1.x stdio client (legacy) | 3 values | 2 (4) | answered | heard |

Every client: the tools listed, `echo`'s text, the new tool listed and its text.
"3 values": progress 1/3, 2/3, 3/3 with their messages; "2": exactly the `warning` and `error`
lines of `chatty`; "answered": the client was asked "What is your name?" once and the call
said "hello octocat"; "heard": `notifications/tools/list_changed` reached the client.

(1) Asked for by the request's `_meta` logLevel (2026-07-28 has no `logging/setLevel`).
(2) The SDK's own `input_required` driver answered it with the registered handler.
(3) An event on a `subscriptions/listen` stream the client opened (with the filter honored).
(4) After `logging/setLevel warning`.
(5) The CLI prints a call's result and nothing it was sent on the way: `chatty`'s result is
    checked, and in the modern era (from the front's `http.request` line) that its answer
    came as a stream, its log lines first (in the legacy era a legacy server's log lines
    name no request, so they go to the session's GET stream). It sends no progressToken.
(6) The CLI declares no elicitation capability, so the server (or the bridge for it) refuses
    the call, naming elicitation; but a legacy server in the legacy era asks anyway, the CLI
    cannot answer, and the tool carries on: "hello stranger".
(7) One process per method: no stream outlives a call to hear a change on. In the modern
    era the next `tools/list` shows the new tool (one shared server); in the legacy era each
    process is a legacy session with a server of its own, so the next one does not.
(8) Pinned to 2026-07-28, and in its "auto" negotiation (server/discover first, initialize
    only if the server is not modern), which must find the front modern.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import conformance_suite as cs
import pytest
import venvs

RUN_TIMEOUT = 90.0
START_TIMEOUT = 30.0
PROGRESS = [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
LOGS = [("warning", "chatty warning"), ("error", "chatty error")]
QUESTION = "What is your name?"
SERVERS = ("legacy", "modern")


@dataclass(frozen=True)
class Front:
    url: str
    server: str
    log: Path

    def lines(self) -> list[dict[str, Any]]:
        """What the front logged so far (its JSON lines)."""
        out = []
        for line in self.log.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

    def requests(self, rpc_method: str) -> list[dict[str, Any]]:
        """The `http.request` lines of `rpc_method` so far."""
        return [line for line in self.lines() if line.get("event") == "http.request"
                and line.get("rpc_method") == rpc_method]

    def request_after(self, rpc_method: str, seen: int) -> dict[str, Any]:
        """The next `http.request` line of `rpc_method` after the first `seen` of them (the
        front writes it once the answer is out, so it may follow the client's exit)."""
        deadline = time.monotonic() + START_TIMEOUT
        while len(lines := self.requests(rpc_method)) <= seen:
            assert time.monotonic() < deadline, f"no {rpc_method} line after {seen}"
            time.sleep(0.05)
        return lines[seen]


@pytest.fixture(scope="module", params=SERVERS)
def front(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython) -> Iterator[Front]:
    server = str(request.param)
    python = legacy_python if server == "legacy" else modern_python
    port = cs.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path_factory.mktemp(f"front-{server}") / "front.log"
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", url, "--",
           *python.peer(f"{server}_server")]
    with running_front(cmd, port, log):
        yield Front(url, server, log)


@contextlib.contextmanager
def running_front(cmd: list[str], port: int, log: Path,
                  env: dict[str, str] | None = None) -> Iterator[None]:
    """`cmd` (a `serve --listen` on `port`) in a process group of its own, its output in
    `log`, until it listens; ended with SIGTERM, then SIGKILL for the group."""
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink,
                                stderr=subprocess.STDOUT, cwd=venvs.REPO_ROOT,
                                start_new_session=True, env={**os.environ, **(env or {})})
    try:
        wait_listening(proc, port, log)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert proc.poll() is None, f"the front exited:\n{log.read_text()[-4000:]}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        assert time.monotonic() < deadline, f"the front never listened:\n{log.read_text()}"
        time.sleep(0.05)


# --- what a tour saw, whatever the client ---------------------------------------------------


@dataclass(frozen=True)
class Tour:
    tools: list[str]
    echo: str
    progress: list[tuple[float, float | None, str | None]]
    logs: list[tuple[str, Any]]
    asked: list[str]
    greeting: str
    heard_change: bool
    tools_after: list[str]
    added: str


def text_of(result: Any) -> str:
    """The first text block of a call's result, or the step's error as text."""
    if not isinstance(result, dict):
        return repr(result)
    if "error" in result:
        return f"error: {result['error']}"
    return str(result["content"][0]["text"])


def python_tour(report: dict[str, Any]) -> Tour:
    """A tour from peers/modern_client.py or peers/legacy_client.py."""
    heard = (report.get("add_tool:arrived") is True
             or (report.get("add_tool:event") or {}).get("type") == "ToolsListChanged")
    return Tour(
        tools=report.get("tools:names", []),
        echo=text_of(report.get("call:echo")),
        progress=[(p["progress"], p["total"], p["message"]) for p in report["progress"]],
        logs=[(log["level"], log["data"]) for log in report["logs"]],
        asked=[question["message"] for question in report["asked"]["elicitation"]],
        greeting=text_of(report.get("call:ask_name")),
        heard_change=heard,
        tools_after=report.get("tools:after:names", []),
        added=text_of(report.get("call:added")),
    )


def ts_tour(report: dict[str, Any]) -> Tour:
    """A tour from peers/ts_client.mjs."""
    return Tour(
        tools=report.get("tools") or [],
        echo=text_of(report.get("call:echo")),
        progress=[(p["progress"], p.get("total"), p.get("message")) for p in report["progress"]],
        logs=[(log["level"], log["data"]) for log in report["logs"]],
        asked=[question["message"] for question in report["asked"]],
        greeting=text_of(report.get("call:ask_name")),
        heard_change=any(c["phase"] == "add_tool" for c in report["changed"]),
        tools_after=report.get("tools:after") or [],
        added=text_of(report.get("call:added")),
    )


def assert_whole_tour(tour: Tour, added: str, report: dict[str, Any]) -> None:
    context = json.dumps(report, indent=1)[-6000:]
    assert {"echo", "slow", "chatty", "ask_name", "add_tool"} <= set(tour.tools), context
    assert tour.echo == "over http", context
    assert tour.progress == PROGRESS, context
    assert tour.logs == LOGS, context
    assert tour.asked == [QUESTION], context
    assert tour.greeting == "hello octocat", context
    assert tour.heard_change, context
    assert added in tour.tools_after, context
    assert tour.added == f"{added} says hi", context
    assert report["exit_code"] == 0, context


def run_peer(cmd: list[str], added: str, home: Path | None = None) -> dict[str, Any]:
    """Run a client peer; its one JSON report (with `_stderr` for a failing assertion).
    `home` is the HOME of a client that keeps files there."""
    env = {**os.environ, "ROSETTA_E2E_NEW_TOOL": added, **({"HOME": str(home)} if home else {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"{cmd} printed no report ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    report["_stderr"] = proc.stderr[-3000:]
    return report


# --- the clients ----------------------------------------------------------------------------


def test_python_sdk_modern_client(front: Front, modern_python: venvs.SdkPython) -> None:
    added = f"py_modern_{front.server}"
    report = run_peer(modern_python.peer("modern_client", "tour", "--", front.url), added)
    assert report.get("protocol_version") == "2026-07-28", report
    assert report["listen:tools"]["honored"] == {"toolsListChanged": True}, report
    assert_whole_tour(python_tour(report), added, report)


def test_python_sdk_legacy_client(front: Front, legacy_python: venvs.SdkPython) -> None:
    added = f"py_legacy_{front.server}"
    report = run_peer(legacy_python.peer("legacy_client", "tour", "--", front.url), added)
    assert report["initialize"]["protocolVersion"] == "2025-11-25", report
    assert_whole_tour(python_tour(report), added, report)


@pytest.fixture(scope="module")
def ts_clients() -> Path:
    """The npm prefix with both TypeScript SDK lines, and peers/ts_client.mjs beside them
    (an ES module resolves its imports from where it lies)."""
    prefix = venvs.npm_client("ts-clients")
    script = prefix / "ts_client.mjs"
    tmp = prefix / ".ts_client.mjs.tmp"
    tmp.write_bytes((venvs.PEERS_DIR / "ts_client.mjs").read_bytes())
    os.replace(tmp, script)  # atomically: another run may be starting it
    return script


@pytest.mark.parametrize("sdk", ["v1", "v2", "v2-auto", "v2-legacy"])
def test_typescript_sdk_client(front: Front, ts_clients: Path, sdk: str) -> None:
    added = f"ts_{sdk.replace('-', '_')}_{front.server}"
    report = run_peer([cs.node(), str(ts_clients), sdk, front.url], added)
    if sdk in ("v1", "v2-legacy"):
        assert report.get("protocol_version") == "2025-11-25", report
    else:  # "auto" too: the front answers server/discover, so it is a 2026-07-28 server
        assert report.get("protocol_version") == "2026-07-28", report
        assert report["listen"]["honored"] == {"toolsListChanged": True}, report
    assert_whole_tour(ts_tour(report), added, report)


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    prefix = venvs.npm_client("inspector")
    return [cs.node(), str(prefix / "node_modules" / ".bin" / "mcp-inspector"), "--cli"]


def inspect(inspector: list[str], front: Front, era: str, *args: str,
            home: Path) -> subprocess.CompletedProcess[str]:
    cmd = [*inspector, front.url, "--transport", "http", "--protocol-era", era,
           "--format", "json", *args]
    env = {**os.environ, "HOME": str(home)}  # its catalog and client config stay here
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL, env=env)


def inspected(inspector: list[str], front: Front, era: str, *args: str,
              home: Path) -> dict[str, Any]:
    proc = inspect(inspector, front, era, *args, home=home)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    result: dict[str, Any] = json.loads(proc.stdout)["result"]
    return result


class Inspector:
    """The inspector CLI against the front in one era, one process per method."""

    def __init__(self, cli: list[str], front: Front, era: str, home: Path) -> None:
        self.cli, self.front, self.era, self.home = cli, front, era, home

    def run(self, *args: str) -> dict[str, Any]:
        return inspected(self.cli, self.front, self.era, *args, home=self.home)

    def call(self, tool: str, *args: str) -> str:
        return text_of(self.run("--method", "tools/call", "--tool-name", tool, *args))

    def refusal(self, tool: str) -> str:
        """The error message of a call the CLI reports as failed."""
        proc = inspect(self.cli, self.front, self.era, "--method", "tools/call",
                       "--tool-name", tool, home=self.home)
        assert proc.returncode != 0, proc.stdout
        message: str = json.loads(proc.stderr)["error"]["message"]
        return message

    def tool_names(self) -> set[str]:
        return {tool["name"] for tool in self.run("--method", "tools/list")["tools"]}


def test_inspector_cli_modern_era(front: Front, inspector: list[str], tmp_path: Path) -> None:
    cli = Inspector(inspector, front, "modern", tmp_path)
    added = f"inspector_modern_{front.server}"
    seen = len(front.requests("tools/call"))
    assert cli.call("echo", "--tool-arg", "text=over http") == "over http"
    front.request_after("tools/call", seen)  # echo's line is written: the next is chatty's
    assert cli.call("chatty", "--tool-metadata",
                    "io.modelcontextprotocol/logLevel=warning") == "logged"
    # The CLI shows none of them, but the log lines went out on the call's stream, before
    # its answer.
    assert front.request_after("tools/call", seen + 1).get("stream") is True
    assert "elicitation" in cli.refusal("ask_name")
    assert cli.call("add_tool", "--tool-arg", f"name={added}") == f"added {added}"
    # Every modern request reaches the one shared server: the next process sees the tool.
    assert {"echo", "slow", "chatty", "ask_name", "add_tool", added} <= cli.tool_names()
    assert cli.call(added) == f"{added} says hi"


def test_inspector_cli_legacy_era(front: Front, inspector: list[str], tmp_path: Path) -> None:
    cli = Inspector(inspector, front, "legacy", tmp_path)
    added = f"inspector_legacy_{front.server}"
    assert cli.call("echo", "--tool-arg", "text=over http") == "over http"
    assert cli.run("--method", "logging/setLevel", "--log-level", "warning") == {}
    assert cli.call("chatty") == "logged"
    if front.server == "legacy":
        # The server asks the CLI, which has no elicitation to answer with; it carries on.
        assert cli.call("ask_name") == "hello stranger"
    else:
        assert "elicitation" in cli.refusal("ask_name")
    assert cli.call("add_tool", "--tool-arg", f"name={added}") == f"added {added}"
    # Each process is a legacy session of its own, and each legacy session a bridge session
    # with a server child of its own (as the daemon's per connection): the next one starts
    # without the tool.
    names = cli.tool_names()
    assert {"echo", "slow", "chatty", "ask_name", "add_tool"} <= names
    assert added not in names


def test_mcp_remote_under_a_legacy_stdio_client(front: Front, legacy_python: venvs.SdkPython,
                                                tmp_path: Path) -> None:
    added = f"mcp_remote_{front.server}"
    prefix = venvs.npm_client("mcp-remote")
    remote = [cs.node(), str(prefix / "node_modules" / "mcp-remote" / "dist" / "proxy.js"),
              front.url, "--transport", "http-only"]
    # mcp-remote keeps its OAuth state in ~/.mcp-auth: a HOME of its own
    report = run_peer(legacy_python.peer("legacy_client", "tour", "--", *remote), added,
                      home=tmp_path)
    assert_whole_tour(python_tour(report), added, report)


def test_one_server_child_served_every_modern_client_and_nothing_failed(front: Front) -> None:
    """Last, so it reads what the clients above left in the front's log: one server process
    for every modern request (no process per request), one per legacy session, and no line
    of level error or worse."""
    lines = front.lines()
    children = [line for line in lines if line["event"] == "child.started"]
    assert len([child for child in children if "session" not in child]) == 1, children
    sessions = [line["session"] for line in lines if line["event"] == "http.session_started"]
    assert sorted(child["session"] for child in children if "session" in child) == sessions
    assert [line for line in lines if line.get("level") in ("error", "critical")] == []
