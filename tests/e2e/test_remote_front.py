"""`mcp-rosetta serve --listen http://… --url URL`: the HTTP front before a remote server, with
real HTTP clients of either era in front and the SDKs' own Streamable HTTP servers of either
era behind, in all four cells.

Must not fake a client or a server: the clients are the Python SDKs' HTTP clients (mcp 2.x
`Client(url)`, 2026-07-28; mcp 1.x `streamablehttp_client`, 2025-11-25), the servers mcp
2.x's modern-only `streamable_http_app` and mcp 1.x FastMCP's `streamable-http`
(remote_peers.py, as test_remote.py runs them), and the front a `python -m bridge serve`
process. The clients' tour is test_http_clients.py's (tools listed and called, progress,
logs, an elicitation answered, `list_changed` heard); the restart scenario is the stdio
tests' (checks.py), the server killed mid-call and started again on its port.

| HTTP client → remote server | mode of the front's session |
|---|---|
| modern → legacy | B (the shared session) |
| legacy → modern | A (a legacy session of its own, with its own upstream) |
| modern → modern, legacy → legacy | P |
"""

from __future__ import annotations

import contextlib
import http.client
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import checks
import pytest
import venvs
from remote_peers import free_port, http_server, serving
from test_daemon import NotifySocket
from test_http_clients import Front, assert_whole_tour, python_tour, run_peer, running_front
from test_http_front import until

ERAS = ("legacy", "modern")
WAIT = 60.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}
FRONT_TOKEN = "front-token-0123456789"
UPSTREAM_TOKEN = "upstream-token-9876543210"


served = contextlib.contextmanager(serving)
"""A command's server on a port, as a context: stopped however the block ends."""
http_served = contextlib.contextmanager(http_server)


def pythons(legacy: venvs.SdkPython, modern: venvs.SdkPython) -> dict[str, venvs.SdkPython]:
    return {"legacy": legacy, "modern": modern}


@contextlib.contextmanager
def front_before(url: str, log: Path, *options: str,
                 env: dict[str, str] | None = None) -> Iterator[Front]:
    """`serve --listen http://127.0.0.1:PORT/mcp --url url`, its JSON lines in `log`."""
    port = free_port()
    listen = f"http://127.0.0.1:{port}/mcp"
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", listen, "--url", url,
           "--log-format", "json", *options]
    with running_front(cmd, port, log, env):
        yield Front(listen, url, log)


@pytest.fixture(scope="module", params=ERAS)
def remote(request: pytest.FixtureRequest, legacy_python: venvs.SdkPython,
           modern_python: venvs.SdkPython) -> Iterator[tuple[str, str]]:
    """The era of the remote server and its URL (one per era for the module: each tour adds
    a tool of its own name, so the tours do not meet)."""
    era = str(request.param)
    python = pythons(legacy_python, modern_python)[era]
    with http_served(python, f"{era}_server") as url:
        yield era, url


@pytest.fixture(scope="module")
def front(remote: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    era, url = remote
    log = tmp_path_factory.mktemp(f"front-{era}") / "front.log"
    with front_before(url, log) as running:
        yield running


# --- each cell's tour ------------------------------------------------------------------------


def test_a_modern_http_client_tours_a_remote_server(
        front: Front, remote: tuple[str, str], modern_python: venvs.SdkPython) -> None:
    era = remote[0]
    added = f"py_modern_{era}"
    report = run_peer(modern_python.peer("modern_client", "tour", "--", front.url), added)
    assert report.get("protocol_version") == "2026-07-28", report
    assert report["listen:tools"]["honored"] == {"toolsListChanged": True}, report
    assert_whole_tour(python_tour(report), added, report)
    assert served_mode(front, shared=True) == ("B" if era == "legacy" else "P")


def test_a_legacy_http_client_tours_a_remote_server(
        front: Front, remote: tuple[str, str], legacy_python: venvs.SdkPython) -> None:
    era = remote[0]
    added = f"py_legacy_{era}"
    report = run_peer(legacy_python.peer("legacy_client", "tour", "--", front.url), added)
    assert report["initialize"]["protocolVersion"] == "2025-11-25", report
    assert_whole_tour(python_tour(report), added, report)
    assert served_mode(front, shared=False) == ("P" if era == "legacy" else "A")


def served_mode(front: Front, shared: bool) -> str:
    """The mode the front last chose for the shared session, or for a legacy session."""
    chosen = [line["mode"] for line in front.lines() if line.get("event") == "mode.chosen"
              and (line.get("session") is None) == shared]
    assert chosen, front.lines()
    return str(chosen[-1])


# --- the remote server restarted mid-session -------------------------------------------------


@pytest.mark.parametrize("client", ERAS)
@pytest.mark.parametrize("server", ERAS)
def test_the_front_s_clients_go_on_when_the_remote_server_restarts(
        client: str, server: str, legacy_python: venvs.SdkPython,
        modern_python: venvs.SdkPython, tmp_path: Path) -> None:
    # The client kills the server during a call; a loop starts it again on its port. The call
    # gets one error naming the URL, the front's session (the shared one, or the client's
    # legacy session) re-opens its own with the server, replays what it must, and the client
    # hears that the tools may have changed.
    python = pythons(legacy_python, modern_python)
    with http_served(python[server], f"{server}_server", again=True) as url, \
            front_before(url, tmp_path / "front.log") as running:
            report = run_peer(python[client].peer(f"{client}_client", "restart", "--",
                                                  running.url), "unused")
            if client == "modern":
                checks.check_modern_restart(report)
            else:
                checks.check_legacy_restart(report)
            assert url in report["kill:slow"]["error"]["message"]
            lost = [line for line in running.lines() if line.get("event") == "upstream.lost"]
            assert lost and all(line["url"] == url for line in lost)


# --- readiness while the server cannot be reached ----------------------------------------------


def readiness(front: Front) -> tuple[int, str]:
    conn = http.client.HTTPConnection(front.url.split("/")[2], timeout=WAIT)
    try:
        conn.request("GET", "/readyz")
        response = conn.getresponse()
        return response.status, json.loads(response.read())["status"]
    finally:
        conn.close()


def modern_call(front: Front, tool: str, token: str | None = None,
                **arguments: Any) -> dict[str, Any]:
    """One modern tools/call through the front, on a connection of its own: the answer."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": META}}
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": tool, **({"authorization": f"Bearer {token}"} if token else {})}
    conn = http.client.HTTPConnection(front.url.split("/")[2], timeout=WAIT)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        if response.getheader("content-type") == "text/event-stream":
            data = [line for line in data.split(b"\n") if line.startswith(b"data: ")][-1][6:]
        answer: dict[str, Any] = json.loads(data)
        return answer
    finally:
        conn.close()


@pytest.mark.parametrize("era", ERAS)
def test_readiness_is_red_until_the_remote_server_answers_and_while_it_is_re_reached(
        era: str, legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    # The front starts before its server: it waits for it (its era is found once it answers,
    # not guessed from a refused connection), /readyz says `starting`, systemd hears READY
    # (listening) and then `serving`. Once the server went (a modern one: found by the next
    # request, which is told; a legacy one: its session's GET stream ends), /readyz is red
    # until it is back, and a request sent meanwhile waits for it and is answered.
    port = free_port()
    server = pythons(legacy_python, modern_python)[era].peer(f"{era}_server", "--http",
                                                             str(port))
    notify = NotifySocket(tmp_path / "notify")
    url = f"http://127.0.0.1:{port}/mcp"
    with front_before(url, tmp_path / "front.log",
                      env={"NOTIFY_SOCKET": str(notify.path)}) as running, \
            ThreadPoolExecutor(1) as waiting:
        assert readiness(running) == (503, "starting")
        notify.wait_for("READY=1\nSTATUS=listening")
        until(lambda: any(line.get("event") == "upstream.unreachable"
                          for line in running.lines()), "upstream.unreachable logged")
        assert readiness(running) == (503, "starting")
        with served(server, port):
            until(lambda: readiness(running) == (200, "ready"), "ready once the server is up")
            notify.wait_for("READY=1\nSTATUS=serving")
            assert echoed(running, "hi") == "hi"
        if era == "modern":
            gone = modern_call(running, "echo", text="again")
            assert url in gone["error"]["message"], gone
        until(lambda: readiness(running)[0] == 503, "red while the server is re-reached")
        assert readiness(running)[1] in ("restarting", "down")
        held = waiting.submit(echoed, running, "held")
        time.sleep(1.0)
        assert not held.done()
        with served(server, port):
            assert held.result(timeout=WAIT) == "held"
            until(lambda: readiness(running) == (200, "ready"), "ready once it is back")
            assert echoed(running, "back") == "back"
        eras = [line["era"] for line in running.lines() if line.get("event") == "era.detected"
                and line.get("side") == "server"]
        assert eras and set(eras) == {era}, eras


def echoed(front: Front, text: str) -> str:
    answer = modern_call(front, "echo", text=text)
    assert "result" in answer, answer
    return str(answer["result"]["content"][0]["text"])


# --- two credentials, never crossed ---------------------------------------------------------


@pytest.fixture
def bad_url() -> Iterator[str]:
    """peers/bad_http_server.py: its `whoami` tool answers with the Authorization it got."""
    port = free_port()
    with served([sys.executable, str(venvs.PEERS_DIR / "bad_http_server.py"), str(port)],
                port) as url:
        yield url


@pytest.mark.parametrize("upstream_header", [True, False], ids=["header", "no-header"])
def test_the_front_s_token_is_never_the_upstream_s(bad_url: str, tmp_path: Path,
                                                   upstream_header: bool) -> None:
    # A client presents the front's bearer token; the remote server sees only the --header
    # the front was given (or no Authorization at all), and neither value is logged.
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{FRONT_TOKEN}\n")
    options = ["--token-file", str(tokens)]
    if upstream_header:
        options += ["--header", "Authorization: Bearer ${ROSETTA_UPSTREAM_TOKEN}"]
    with front_before(bad_url, tmp_path / "front.log", *options,
                      env={"ROSETTA_UPSTREAM_TOKEN": UPSTREAM_TOKEN}) as running:
        assert "error" in modern_call(running, "whoami")  # no token: 401 from the front
        answer = modern_call(running, "whoami", token=FRONT_TOKEN)
        told = answer["result"]["content"][0]["text"]
        assert told == (f"Bearer {UPSTREAM_TOKEN}" if upstream_header else "none"), answer
        logged = running.log.read_text()
    assert FRONT_TOKEN not in logged and UPSTREAM_TOKEN not in logged
