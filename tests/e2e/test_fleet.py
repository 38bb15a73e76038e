"""A fleet: three `serve --listen http://…` fronts on one machine behind a real load balancer
from Debian (nginx round-robin, HAProxy round-robin), no affinity configured, in front of a
legacy (mcp 1.30 FastMCP) and a modern (mcp 2.3) stdio server; the Python SDK 1.x legacy
client (`streamablehttp_client`) drives them, and the 2.x modern client the legacy one.

Must not fake a balancer, a client or a server: nginx and haproxy are the Debian packages
(.ci/run installs them), started here with their own configuration in a temporary directory;
the nodes are `python -m bridge serve` processes sharing a fleet key. The balancers run the
repository's own example configurations (config/fleet/), their addresses replaced.

What each balancer shows:
- the whole tour of tests/e2e/test_http_clients.py (tools listed and called, progress, logs
  at the level set, an elicitation answered, a tools list_changed heard on the GET stream,
  the new tool listed and called) passes though round-robin spreads the session's requests
  over the three nodes: the ones that do not hold it forward them to the one that does
  (`forwarded_to` on their `http.request` lines), and the client's DELETE ends it there;
- a modern client (mcp 2.3 `Client`) whose calls the legacy server asks for input: each
  call is parked at the node it reached (mode B), and its retry, wherever round-robin sends
  it, is resumed there (the node it reached forwards it with the client's credential);
- the same client before either server, its calls asked for input in two rounds (before the
  modern server, mode P: the server keeps each call's state by its own requestState): the
  state reaches the client in the fleet's envelope, and each retry, wherever round-robin
  sends it, reaches the node that issued it (forwarded); a call held while its node restarts
  is answered, on its retry, as a call that ended with that node's earlier life;
- two modern clients (mcp 2.3 `Client`, each its own token: two tenants) each open a
  `subscriptions/listen` stream for tool list changes, then each in turn adds tools through
  either server (mode B before the legacy one; mode P before the modern one, whose changes
  each node hears on a listen stream of its own at its server), round-robin taking calls to
  nodes other than the one holding its stream: the stream hears one change per call, sent
  there by the node that ran it (a signed POST, `fleet.changes`), and the other tenant's
  stream hears none;
- the node holding a session is told to stop (SIGTERM) while a slow call of it is under
  way: it drains (/readyz 503 "draining"), a new session lands on another node (or is told
  503 with Retry-After, naming the drain), a new modern tenant whose home it is gets every
  call served at the next node of its order (the draining node declines the ones offered it,
  and is not taken as lost), the session is still served, the call completes, and the node
  stops by itself well within `drain_grace`;
- the node holding a session is killed mid-run (SIGKILL): the client's next call is
  answered 404 (the SDK's "Session terminated"), said by a node that could not reach the
  holder (`fleet.node_unreachable`, logged once per node), and a new `initialize` lands on a
  live node and goes on;
- the node where a modern client's call is parked is killed: the retry is told the node that
  held it is gone, and the client's next calls go on at once (the balancer takes a refused
  connection to the next node);
- the mcp 2.3 client's whole tour (the same checks as the legacy client's) with the default
  `fleet_affinity = "tenant"`: round-robin spreads its requests, and the nodes that are not
  its tenant's home forward them there, so the tool it adds is listed and called.

The tests of a modern client's retries and changes run with `fleet_affinity = "none"`
(`SPREAD`): its requests are served where they land, which is what they are about.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import conformance_suite as cs
import pytest
import venvs
from test_http_clients import (
    RUN_TIMEOUT,
    START_TIMEOUT,
    assert_whole_tour,
    python_tour,
    run_peer,
    wait_listening,
)
from test_http_tenants import post as modern_post

from bridge.fleet.home import ranked
from bridge.fleet.keys import derive
from bridge.shell.http.auth import Tokens

NODES = 3
TOKEN = "fleet-client-token-1"
OTHER_TOKEN = "fleet-client-token-2"
CHANGES_PATH = "/.mcp-rosetta/fleet/changes"
PATH = "/mcp"
SERVERS = ("legacy", "modern")
SPREAD = 'fleet_affinity = "none"\n'
"""A modern client's requests served where the balancer sends them (no tenant home): what
the tests of forwarded retries and relayed changes are about."""


@dataclass
class Node:
    name: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes]
    command: list[str]
    """What started it: a restart runs it again, its log going on in the same file."""

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

    def events(self, event: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line.get("event") == event]

    def kill(self) -> None:
        """SIGKILL, as a node is lost (its machine gone, the OOM killer): nothing is drained
        (its server children see their stdin close, and end)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """SIGTERM, as an orchestrator stops a node, and wait for it to go."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def restart(self) -> None:
        """Killed, and started again at the same address: a new process, a new life (not
        stopped: a drain would wait for the call the test holds there)."""
        self.kill()
        self.proc = _launch(self.command, self.log, "ab")
        wait_listening(self.proc, self.port, self.log)


def _launch(command: list[str], log: Path, mode: str = "wb") -> subprocess.Popen[bytes]:
    with open(log, mode) as sink:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink,
                                stderr=subprocess.STDOUT, cwd=venvs.REPO_ROOT,
                                start_new_session=True)


@contextlib.contextmanager
def fleet_nodes(tmp: Path, server_cmd: list[str], settings: str = "") -> Iterator[list[Node]]:
    """Three nodes sharing a key file, each listing all three (its own found by its port);
    `settings`: more lines of each node's configuration."""
    key = tmp / "fleet.key"
    key.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    key.chmod(0o600)
    ports = [cs.free_port() for _ in range(NODES)]
    listed = ", ".join(f'"http://127.0.0.1:{port}"' for port in ports)
    nodes: list[Node] = []
    try:
        for number, port in enumerate(ports, 1):
            config = tmp / f"node-{number}.toml"
            config.write_text(f'listen = "http://127.0.0.1:{port}{PATH}"\n'
                              f'node = "node-{number}"\n'
                              f"fleet_nodes = [{listed}]\n"
                              f'fleet_key_file = "{key}"\n'
                              # the balancer passes the client's Host (its own port)
                              'allowed_hosts = ["127.0.0.1"]\n' + settings)
            log = tmp / f"node-{number}.log"
            command = [sys.executable, "-m", "bridge", "serve", "--config", str(config), "--",
                       *server_cmd]
            nodes.append(Node(f"node-{number}", port, log, _launch(command, log), command))
        for node in nodes:
            wait_listening(node.proc, node.port, node.log)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


# --- the balancers ----------------------------------------------------------------------------

EXAMPLES = venvs.REPO_ROOT / "config" / "fleet"
"""The repository's balancer configurations: run here as shipped, but for their addresses."""
NGINX = """\
worker_processes 1;
pid {tmp}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/fleet.conf;
}}
"""


def _addressed(example: str, server: str, nodes: list[Node], listen: str, by: str) -> str:
    """The example's text with its three example servers replaced by `nodes` (each line
    `server` formatted with a node's name and port) and its listening line by `listen`."""
    text = (EXAMPLES / example).read_text()
    lines = [line for line in text.splitlines() if "10.0.0." not in line]
    at = next(i for i, line in enumerate(text.splitlines()) if "10.0.0." in line)
    lines[at:at] = [server.format(name=node.name, port=node.port) for node in nodes]
    replaced = "\n".join(lines) + "\n"
    assert by in replaced, f"{example} has no {by!r} line"
    return replaced.replace(by, listen, 1)


def nginx(tmp: Path, nodes: list[Node], port: int) -> list[str]:
    (tmp / "fleet.conf").write_text(_addressed(
        "nginx.conf", "    server 127.0.0.1:{port};", nodes, f"listen 127.0.0.1:{port};",
        "listen 80;"))
    config = tmp / "nginx.conf"
    config.write_text(NGINX.format(tmp=tmp))
    return [_program("nginx"), "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(config),
            "-g", "daemon off;"]


def haproxy(tmp: Path, nodes: list[Node], port: int) -> list[str]:
    config = tmp / "haproxy.cfg"
    config.write_text(_addressed(
        "haproxy.cfg", "    server {name} 127.0.0.1:{port} check inter 500ms", nodes,
        f"bind 127.0.0.1:{port}", "bind :80"))
    return [_program("haproxy"), "-db", "-f", str(config)]


def _program(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.fail(f"{name} is not installed: apt-get install {name} (.ci/run does)")
    return found


BALANCERS: dict[str, Callable[[Path, list[Node], int], list[str]]] = {
    "nginx": nginx, "haproxy": haproxy}


@contextlib.contextmanager
def balancer(kind: str, tmp: Path, nodes: list[Node]) -> Iterator[str]:
    """The balancer in front of `nodes`, until the block ends; its URL."""
    port = cs.free_port()
    log = tmp / f"{kind}.out"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(BALANCERS[kind](tmp, nodes, port), stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_listening(proc, port, log)
        _wait_for(lambda: _ready(port))  # HAProxy: its first checks of /readyz passed
        yield f"http://127.0.0.1:{port}{PATH}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --- the checks -------------------------------------------------------------------------------


@pytest.fixture(params=SERVERS)
def server_cmd(request: pytest.FixtureRequest, legacy_python: venvs.SdkPython,
               modern_python: venvs.SdkPython) -> list[str]:
    python = legacy_python if request.param == "legacy" else modern_python
    return python.peer(f"{request.param}_server")


def holder_of(session_id: str, nodes: list[Node]) -> Node:
    """The node a session id names (its first part: the node's address, base64url)."""
    head = session_id.split(".")[0]
    address = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode()
    return next(node for node in nodes if node.address == address)


def requests(nodes: list[Node]) -> list[dict[str, Any]]:
    return [line for node in nodes for line in node.events("http.request")]


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_legacy_client_tours_a_fleet_through_a_balancer(
        kind: str, server_cmd: list[str], legacy_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    with fleet_nodes(tmp_path, server_cmd) as nodes, balancer(kind, tmp_path, nodes) as url:
        report = run_peer(legacy_python.peer("legacy_client", "tour", "--", url), "py_fleet")
        assert_whole_tour(python_tour(report), "py_fleet", report)
        # The session lived on one node; the others forwarded it its requests.
        started = [node for node in nodes if node.events("http.session_started")]
        assert len(started) == 1, [node.name for node in started]
        holder = started[0]
        forwarded = [line for line in requests(nodes) if "forwarded_to" in line]
        assert forwarded, "round-robin sent no request to a node that did not hold it"
        assert {line["forwarded_to"] for line in forwarded} == {holder.address}
        assert {line["forwarded_by"] for line in holder.events("http.request")
                if "forwarded_by" in line} <= {node.name for node in nodes} - {holder.name}
        # The SDK's DELETE at the end ended it at its node, whichever node it reached.
        _wait_for(lambda: any(line.get("reason") == "the client sent DELETE"
                              for line in holder.events("http.session_ending")))
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert errors == []


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_killed_node_ends_its_sessions_and_the_client_starts_anew(
        kind: str, server_cmd: list[str], legacy_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    shared = tmp_path / "peer"
    shared.mkdir()
    with fleet_nodes(tmp_path, server_cmd) as nodes, balancer(kind, tmp_path, nodes) as url:
        env = {**os.environ, "ROSETTA_E2E_NEW_TOOL": "py_fleet", "ROSETTA_E2E_FLEET_DIR":
               str(shared)}
        client = subprocess.Popen(legacy_python.peer("legacy_client", "fleet", "--", url),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL, cwd=venvs.REPO_ROOT, env=env)
        try:
            _wait_for(lambda: (shared / "session").exists() or client.poll() is not None,
                      RUN_TIMEOUT)
            assert (shared / "session").exists(), client.communicate()
            holder = holder_of((shared / "session").read_text(), nodes)
            holder.kill()
            (shared / "stopped").touch()
            out, err = client.communicate(timeout=RUN_TIMEOUT)
        finally:
            if client.poll() is None:
                client.kill()
        report: dict[str, Any] = json.loads(out.splitlines()[-1])
        context = json.dumps(report, indent=1)[-4000:] + err[-3000:]
        assert_whole_tour(python_tour(report), "py_fleet", {**report, "exit_code": 0})
        # The call after the stop: 404, which the SDK words as its session's end.
        assert "Session terminated" in json.dumps(report["call:stopped"]), context
        live = [node for node in nodes if node is not holder]
        gone = [line for node in live for line in node.events("http.request")
                if line.get("status") == 404 and line.get("forwarded_to") == holder.address]
        assert gone and all("cannot be reached" in line["reason"] for line in gone), context
        assert_lost_once(live, holder)
        # A new session on a live node goes on.
        assert report["call:again"]["content"][0]["text"] == "again", context
        assert holder_of(report["session:again"], nodes) in live
        assert report["exit_code"] == 0, context


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_modern_client_s_elicitation_retries_reach_the_node_that_parked_each_call(
        kind: str, legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    """The mcp 2.3 client makes 4 calls at once, twice, each asked a question by the legacy
    server (mode B parks the call and answers `input_required`); round-robin hands each
    retry to any node, and the ones that did not park it forward it to the one that did."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    with fleet_nodes(tmp_path, legacy_python.peer("legacy_server"),
                     f'token_file = "{tokens}"\n' + SPREAD) as nodes, \
            balancer(kind, tmp_path, nodes) as url:
        cmd = [modern_python.path, str(venvs.PEERS_DIR / "pool_client.py"), url, TOKEN, "4",
               "0.2", "2"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
        lines = requests(nodes)
        context = done.stderr[-3000:] + json.dumps(lines)[-3000:]
        assert done.returncode == 0, context
        rounds = json.loads(done.stdout.splitlines()[-1])["rounds"]
        for number, run in enumerate(rounds):
            results = run["results"]
            assert sorted(r["who"] for r in results) == [f"{number}-{i}" for i in range(4)]
            assert all(r["name"] == f"name-of-{r['who']}" for r in results), results
        # Each retry was resumed where its call was parked: forwarded from the other nodes.
        calls = [line for line in lines if line.get("rpc_method") == "tools/call"]
        forwarded = [line for line in calls if "forwarded_to" in line]
        assert forwarded, context
        assert all(line["status"] == 200 for line in calls), context
        assert {line["forwarded_to"] for line in forwarded} <= {n.address for n in nodes}
        rejected = [line for node in nodes for line in node.events("mrtr.state_rejected")]
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert (rejected, errors) == ([], []), context


def state_holder(state: str, nodes: list[Node]) -> Node:
    """The node a requestState's envelope names (its first part after "rf1.": the node's
    address, base64url)."""
    head = state.removeprefix("rf1.").split(".")[0]
    address = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode()
    return next(node for node in nodes if node.address == address)


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_input_rounds_span_the_fleet_and_a_restart_ends_a_held_call(
        kind: str, server_cmd: list[str], modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    """The mcp 2.3 client calls `wizard` (two rounds of elicitation) through the balancer:
    of the mcp 2.3 server (mode P: the server keeps each call's state by its own
    requestState) or of the mcp 1.30 one (mode B: the node's core parks the call). Round-robin
    hands the retries to other nodes, which forward them to the node that holds the call.
    Then a call is held while its node restarts: its retry, after, reads that the call ended
    (its node restarted), not that its state was tampered with; the call made anew goes on."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    shared = tmp_path / "peer"
    shared.mkdir()
    with fleet_nodes(tmp_path, server_cmd, f'token_file = "{tokens}"\n' + SPREAD) as nodes, \
            balancer(kind, tmp_path, nodes) as url:
        client = subprocess.Popen(
            [modern_python.path, str(venvs.PEERS_DIR / "fleet_modern_client.py"), url, TOKEN,
             str(shared), "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, cwd=venvs.REPO_ROOT)
        try:
            _wait_for(lambda: (shared / "state").exists() or client.poll() is not None,
                      RUN_TIMEOUT)
            assert (shared / "state").exists(), client.communicate()
            holder = state_holder((shared / "state").read_text(), nodes)
            holder.restart()
            (shared / "restarted").touch()
            out, err = client.communicate(timeout=RUN_TIMEOUT)
        finally:
            if client.poll() is None:
                client.kill()
        lines = requests(nodes)
        context = err[-3000:] + json.dumps(lines)[-3000:]
        assert client.returncode == 0, context
        report = json.loads(out.splitlines()[-1])
        assert report["wizard"] == ["octocat likes blue"] * 4, context
        # Retries landed at nodes whose server did not issue their state: forwarded.
        calls = [line for line in lines if line.get("rpc_method") == "tools/call"]
        forwarded = [line for line in calls if "forwarded_to" in line]
        assert forwarded, context
        assert {line["forwarded_to"] for line in forwarded} <= {n.address for n in nodes}
        assert all(line["status"] == 200 for line in calls), context
        # The held call's retry, after its node restarted: ended, said by that node.
        assert report["retry"]["code"] == -32602, report
        assert report["retry"]["data"] == {"reason": "ended"}, report
        assert "the node that held it restarted" in report["retry"]["message"]
        ended = [line for line in holder.events("http.request")
                 if line.get("reason") == "its node restarted since"]
        assert len(ended) == 1, context
        assert report["again"] == "hello octocat", report
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert errors == [], context


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_listen_stream_hears_its_tenant_s_changes_made_at_other_nodes_and_no_other_s(
        kind: str, server_cmd: list[str], modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN}\n{OTHER_TOKEN}\n")
    with fleet_nodes(tmp_path, server_cmd, f'token_file = "{tokens}"\n' + SPREAD) as nodes, \
            balancer(kind, tmp_path, nodes) as url:
        cmd = [modern_python.path, str(venvs.PEERS_DIR / "tenant_client.py"), url, TOKEN,
               OTHER_TOKEN, "fleet"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                              cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
        context = done.stderr[-3000:] + json.dumps(requests(nodes))[-3000:]
        assert done.returncode == 0, context
        report = json.loads(done.stdout.splitlines()[-1])
        each_call = {f"call_{n}": ["ToolsListChanged"] for n in range(3)}
        assert report["A"]["heard"] == {**each_call, "B_added": []}, context
        assert report["B"]["heard"] == {**each_call, "A_added": []}, context
        # Each stream was held at one node; calls that landed elsewhere were sent there.
        _wait_for(lambda: len(_rpc_lines(nodes, "subscriptions/listen")) == 2)
        for held, listen in _rpc_lines(nodes, "subscriptions/listen"):
            elsewhere = [n for n, line in _rpc_lines(nodes, "tools/call")
                         if line["credential"] == listen["credential"] and n is not held]
            assert elsewhere, context  # round-robin took a call to another node
            taken = [line for line in held.events("http.request")
                     if line["path"] == CHANGES_PATH]
            assert taken and all(line["status"] == 202 for line in taken), context
            assert {line["forwarded_by"] for line in taken} <= {n.name for n in nodes}
        missed = [line for node in nodes for line in node.events("fleet.changes_missed")]
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert (missed, errors) == ([], []), context


def _rpc_lines(nodes: list[Node], method: str) -> list[tuple[Node, dict[str, Any]]]:
    """Each node's `http.request` lines of `method`, with the node."""
    return [(node, line) for node in nodes for line in node.events("http.request")
            if line.get("rpc_method") == method]


def assert_lost_once(live: list[Node], lost: Node) -> None:
    """Each live node that tried to reach `lost` logged it once, however many requests it
    forwarded there."""
    unreachable = [line for node in live for line in node.events("fleet.node_unreachable")]
    assert unreachable, "no node logged the loss"
    assert {line["holder"] for line in unreachable} == {lost.address}
    for node in live:
        assert len(node.events("fleet.node_unreachable")) <= 1, node.name


# --- a node told to stop drains; a node killed is lost ----------------------------------------

DRAIN_GRACE = 40
LEGACY_HEADERS = {"content-type": "application/json",
                  "accept": "application/json, text/event-stream",
                  "authorization": f"Bearer {TOKEN}"}
NEW_TENANTS = tuple(f"fleet-new-tenant-{n}" for n in range(32))
"""Tokens the drain test's nodes accept, none used before: the node it stops is the home of
one of them but for a chance of (2/3)**32."""
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "e2e-fleet", "version": "1"}}}


def _port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def legacy_post(url: str, body: dict[str, Any], session: str | None = None,
                seen: Callable[[dict[str, Any]], None] = lambda _: None,
                ) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    """One legacy POST through the balancer: its status, headers (lower case) and the
    messages of its answer (an event stream's, each given to `seen` as it comes, or a JSON
    body's)."""
    conn = http.client.HTTPConnection("127.0.0.1", _port_of(url), timeout=RUN_TIMEOUT)
    heads = {**LEGACY_HEADERS, **({"mcp-session-id": session} if session else {})}
    try:
        conn.request("POST", PATH, json.dumps(body), heads)
        response = conn.getresponse()
        got = {name.lower(): value for name, value in response.getheaders()}
        messages: list[dict[str, Any]] = []
        if got.get("content-type") != "text/event-stream":
            data = response.read()
            return response.status, got, [json.loads(data)] if data.strip() else []
        for raw in response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data: ") and line[6:].strip():
                messages.append(json.loads(line[6:]))
                seen(messages[-1])
        return response.status, got, messages
    finally:
        conn.close()


def legacy_session(url: str) -> str:
    status, heads, _ = legacy_post(url, INITIALIZE)
    assert status == 200, (status, heads)
    legacy_post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                heads["mcp-session-id"])
    return heads["mcp-session-id"]


def credential_of(tmp: Path, token: str) -> str:
    """`token`'s credential as the nodes name it (the `credential` of their log lines and
    their tenant's name): its digest keyed by the fleet key `fleet_nodes` wrote."""
    tokens = Tokens((token.encode(),), derive((tmp / "fleet.key").read_bytes()).credentials)
    return tokens.check(f"Bearer {token}").digest


def tenant_ranking(tmp: Path, token: str, nodes: list[Node]) -> list[Node]:
    """`nodes` in the order of `token`'s tenant, as each node ranks them."""
    order = ranked(credential_of(tmp, token), [node.address for node in nodes])
    return [next(node for node in nodes if node.address == address) for address in order]


def readyz(node: Node) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=5)
    try:
        conn.request("GET", "/readyz")
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_node_told_to_stop_finishes_its_slow_call_while_new_sessions_go_elsewhere(
        kind: str, legacy_python: venvs.SdkPython, tmp_path: Path) -> None:
    """SIGTERM on the node holding a legacy session with a slow call under way: it drains
    (/readyz 503 "draining"), a new session lands on another node (or, at the draining
    node, is told 503 with Retry-After, naming the drain), the session's other requests are
    still served, the call completes, and the node then stops by itself, well within
    drain_grace. A new modern tenant whose home is the draining node is served, from its
    first call, at the next node of its order: the draining node declines the calls the
    others offer it, passes itself over for the ones it gets, and no node takes it as lost."""
    tokens = tmp_path / "tokens"
    tokens.write_text("\n".join((TOKEN, *NEW_TENANTS)) + "\n")
    with fleet_nodes(tmp_path, legacy_python.peer("legacy_server"),
                     f'drain_grace = {DRAIN_GRACE}\ntoken_file = "{tokens}"\n') as nodes, \
            balancer(kind, tmp_path, nodes) as url:
        session = legacy_session(url)
        holder = holder_of(session, nodes)
        progressed = threading.Event()
        call: dict[str, Any] = {}

        def slow_call() -> None:
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"steps": 120, "delay": 0.1},
                "_meta": {"progressToken": "p"}}}
            call["answer"] = legacy_post(url, body, session, lambda _: progressed.set())

        caller = threading.Thread(target=slow_call, daemon=True)
        caller.start()
        assert progressed.wait(RUN_TIMEOUT), call
        holder.proc.send_signal(signal.SIGTERM)
        told = time.monotonic()
        _wait_for(lambda: readyz(holder)[0] == 503)
        assert readyz(holder) == (503, {"status": "draining"})
        status, _, listed = legacy_post(url, {"jsonrpc": "2.0", "id": 8,
                                              "method": "tools/list"}, session)
        assert status == 200 and "tools" in listed[-1]["result"], listed
        assert_a_new_tenant_goes_on_past(holder, tmp_path, nodes, url, kind)
        opened = [legacy_post(url, INITIALIZE) for _ in range(NODES + 1)]
        landed = [holder_of(heads["mcp-session-id"], nodes) for status, heads, _ in opened
                  if status == 200]
        assert landed and holder not in landed, opened
        for status, heads, messages in opened:
            if status != 200:
                assert (status, heads.get("retry-after")) == (503, "1"), (status, heads)
                assert "this node is draining" in messages[0]["error"]["message"], messages
        if kind == "nginx":  # no health checks: round-robin gives the node its share of them
            assert any(status == 503 for status, _, _ in opened), opened
        assert caller.is_alive(), "the slow call ended before the checks of the drain"
        caller.join(RUN_TIMEOUT)
        status, _, messages = call["answer"]
        assert status == 200
        assert messages[-1]["result"]["content"][0]["text"] == "done 120", messages[-1]
        assert holder.proc.wait(timeout=DRAIN_GRACE) == 0
        assert time.monotonic() - told < DRAIN_GRACE  # drained, not timed out
        assert [line["grace_s"] for line in holder.events("http.draining")] == [DRAIN_GRACE]
        assert [line["grace_passed"] for line in holder.events("http.drained")] == [False]
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert errors == []


def assert_a_new_tenant_goes_on_past(draining: Node, tmp: Path, nodes: list[Node], url: str,
                                     kind: str) -> None:
    """A tenant never seen before, whose home is `draining`, calls through the balancer
    `kind`: each call is served, all at the next node of its order."""
    fresh = next(token for token in NEW_TENANTS
                 if tenant_ranking(tmp, token, nodes)[0] is draining)
    then = tenant_ranking(tmp, fresh, nodes)[1]
    for rid in range(20, 21 + NODES):
        status, echoed = modern_post(url, fresh, rid, "echo", arguments={"text": f"on {rid}"})
        assert status == 200, echoed
        assert echoed["result"]["content"][0]["text"] == f"on {rid}", echoed
    credential = credential_of(tmp, fresh)

    def calls() -> list[tuple[Node, dict[str, Any]]]:
        return [(node, line) for node, line in _rpc_lines(nodes, "tools/call")
                if line.get("credential") == credential]

    def offered() -> list[dict[str, Any]]:
        return [line for node in nodes for line in node.events("fleet.home_declined")]

    def served() -> list[Node]:
        return [node for node, line in calls() if "forwarded_to" not in line
                and line["status"] == 200]

    def refused() -> list[tuple[Node, dict[str, Any]]]:
        return [(node, line) for node, line in calls() if line["status"] != 200]

    # Each line is written once its answer is out: the client may have read it first.
    _wait_for(lambda: len(served()) == NODES + 1 and len(offered()) == len(refused()))
    assert served() == [then] * (NODES + 1), [(node.name, line) for node, line in calls()]
    declined = refused()
    assert declined, "no node offered the draining node the new tenant's call"
    assert {(node.name, line["status"], line["reason"]) for node, line in declined} == {
        (draining.name, 503, "the node is draining: no new session")}
    assert {line["forwarded_by"] for _, line in declined} <= {n.name for n in nodes} - {
        draining.name}
    assert len(offered()) == len(declined)
    if kind == "nginx":  # round-robin gives the draining node its share: it passes itself over
        assert any(node is draining and line.get("forwarded_to") == then.address
                   for node, line in calls()), calls()
    assert {line["holder"] for line in offered()} == {draining.address}
    assert [line for node in nodes for line in node.events("fleet.node_unreachable")] == []


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_killed_node_s_parked_call_ends_at_its_retry_saying_so_and_clients_go_on(
        kind: str, legacy_python: venvs.SdkPython, tmp_path: Path) -> None:
    """A modern client's call parked at a node (mode B) that is then killed: its retry,
    wherever it lands, is told the node that held it is gone; the client's new calls go on
    at once (the balancer takes a refused connection to the next node: nothing was sent);
    each node that tried to reach the lost one logged it once."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    with fleet_nodes(tmp_path, legacy_python.peer("legacy_server"),
                     f'token_file = "{tokens}"\n' + SPREAD) as nodes, \
            balancer(kind, tmp_path, nodes) as url:
        status, asked = modern_post(url, TOKEN, 1, "ask_name")
        result = asked["result"]
        assert (status, result["resultType"]) == (200, "input_required"), asked
        holder = state_holder(result["requestState"], nodes)
        holder.kill()
        [key] = result["inputRequests"]
        retry = {"inputResponses": {key: {"action": "accept", "content": {"name": "x"}}},
                 "requestState": result["requestState"]}
        status, ended = modern_post(url, TOKEN, 2, "ask_name", **retry)
        assert (ended["error"]["code"], ended["error"]["data"]) == (-32602, {"reason": "ended"})
        assert "the node that held it is gone" in ended["error"]["message"], ended
        assert f"its node {holder.address} cannot be reached" in ended["error"]["message"]
        for rid in range(3, 3 + 2 * NODES):  # round-robin names the dead node too
            status, echoed = modern_post(url, TOKEN, rid, "echo", arguments={"text": "on"})
            assert status == 200 and "result" in echoed, echoed
        live = [node for node in nodes if node is not holder]
        assert_lost_once(live, holder)


def _ready(port: int) -> bool:
    with contextlib.suppress(OSError, http.client.HTTPException):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        finally:
            conn.close()
    return False


def _wait_for(done: Callable[[], bool], within: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("kind", sorted(BALANCERS))
def test_a_modern_client_tours_a_fleet_through_a_balancer(
        kind: str, server_cmd: list[str], modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    with fleet_nodes(tmp_path, server_cmd) as nodes, balancer(kind, tmp_path, nodes) as url:
        report = run_peer(modern_python.peer("modern_client", "tour", "--", url), "py_fleet")
        assert report.get("protocol_version") == "2026-07-28", report
        assert_whole_tour(python_tour(report), "py_fleet", report)
        errors = [line for node in nodes for line in node.lines()
                  if line.get("level") in ("error", "critical")]
        assert errors == []
