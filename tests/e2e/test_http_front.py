"""The HTTP front as a process: `mcp-rosetta serve --listen http://…` in front of the real
SDK servers (the e2e peers), reached over real HTTP on loopback by a 2026-07-28 client (the
standard library's http.client: the front's wire, nothing more) and by the legacy SDK's own
Streamable HTTP client (mcp 1.x `streamablehttp_client`, in `peers/legacy_client.py`).

Must not fake the server: what is checked is what only the whole chain shows, one shared
server process for every modern request, a closed connection reaching the legacy server as
a cancellation of its call, and a server process of its own for each legacy session.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import checks
import conformance_suite as cs
import pytest
import venvs

WAIT = 60.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}


@pytest.fixture
def front(legacy_python: venvs.SdkPython) -> Iterator[int]:
    """The front's port, in front of the legacy peer."""
    port = cs.free_port()
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", f"http://127.0.0.1:{port}/mcp",
           "--", *legacy_python.peer("legacy_server")]
    with cs.http_server(cmd, port):
        yield port


@pytest.fixture(params=["legacy", "modern"])
def any_front(request: pytest.FixtureRequest, legacy_python: venvs.SdkPython,
              modern_python: venvs.SdkPython) -> Iterator[tuple[str, str]]:
    """The era of the server behind the front, and the front's URL."""
    server = legacy_python.peer("legacy_server") if request.param == "legacy" \
        else modern_python.peer("modern_server")
    port = cs.free_port()
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", f"http://127.0.0.1:{port}/mcp",
           "--", *server]
    with cs.http_server(cmd, port) as url:
        yield request.param, url


def send(conn: http.client.HTTPConnection, rid: Any, tool: str, **arguments: Any) -> None:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": META}}
    conn.request("POST", "/mcp", json.dumps(body), {
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": tool})


def call(port: int, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of one call, on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        send(conn, 1, tool, **arguments)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body
        if response.getheader("content-type") == "text/event-stream":
            lines = [line for line in body.split(b"\n") if line.startswith(b"data: ")]
            body = lines[-1][6:]
        answer = json.loads(body)
        assert answer["id"] == 1, answer
        result: dict[str, Any] = answer["result"]["structuredContent"]
        return result
    finally:
        conn.close()


def until(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_every_modern_request_reaches_the_one_shared_server(front: int) -> None:
    pids = {call(front, "pid")["pid"] for _ in range(5)}
    assert len(pids) == 1


def test_a_closed_connection_cancels_its_call_at_the_legacy_server(front: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", front, timeout=WAIT)
    send(conn, 7, "slow", steps=1, delay=600)
    until(lambda: call(front, "stats")["slow_started"] == 1, "the slow call started")
    conn.close()  # streamable-http.mdx §Cancellation: closing is the cancellation
    until(lambda: call(front, "stats")["slow_cancelled"] == 1,
          "the legacy server heard the cancellation")
    assert call(front, "stats")["slow_completed"] == 0


# --- legacy clients (2025-11-25 transports.mdx: sessions) ------------------------------------

LEGACY_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard")


def test_a_legacy_http_client_lists_and_calls_tools_with_progress(
        any_front: tuple[str, str], legacy_python: venvs.SdkPython, run_client: Any) -> None:
    era, url = any_front
    report = run_client(legacy_python, "basic", [url])
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == f"rosetta-{era}-server"
    assert [p["progress"] for p in report["progress"]] == [1.0, 2.0, 3.0]


def test_a_legacy_http_client_answers_input_questions(
        any_front: tuple[str, str], legacy_python: venvs.SdkPython, run_client: Any) -> None:
    _, url = any_front
    report = run_client(legacy_python, "inputs", [url])
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    messages = [e["message"] for e in report["asked"]["elicitation"]]
    assert "Favourite colour?" in messages  # two questions inside one call


def test_a_legacy_http_client_hears_list_changed_and_logs(
        any_front: tuple[str, str], legacy_python: venvs.SdkPython, run_client: Any) -> None:
    _, url = any_front
    checks.check_legacy_notify(run_client(legacy_python, "notify", [url]))
    checks.check_legacy_logs(run_client(legacy_python, "logs", [url]))


def legacy_post(port: int, message: dict[str, Any], session: str | None = None
                ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    heads = {"content-type": "application/json",
             "accept": "application/json, text/event-stream"}
    if session is not None:
        heads["mcp-session-id"] = session
    try:
        conn.request("POST" if message else "DELETE", "/mcp",
                     json.dumps(message) if message else None, heads)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, \
            response.read()
    finally:
        conn.close()


def session_pid(port: int) -> tuple[str, int]:
    """A new legacy session's id, and the pid of its server (its `pid` tool)."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}}
    status, heads, _ = legacy_post(port, init)
    assert status == 200
    session = heads["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert legacy_post(port, done, session)[0] == 202
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "pid", "arguments": {}}}
    status, heads, body = legacy_post(port, call, session)
    assert status == 200, body
    if heads["content-type"] == "text/event-stream":
        body = [line for line in body.split(b"\n") if line.startswith(b"data: ")][-1][6:]
    return session, json.loads(body)["result"]["structuredContent"]["pid"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_each_legacy_session_has_a_server_of_its_own_until_deleted(front: int) -> None:
    (one, first), (_, second) = session_pid(front), session_pid(front)
    shared = call(front, "pid")["pid"]  # a modern request, meanwhile: the shared server
    assert len({first, second, shared}) == 3
    assert legacy_post(front, {}, one)[0] == 204  # DELETE
    until(lambda: not alive(first), "the deleted session's server stopped")
    assert alive(second) and alive(shared)
    status, _, body = legacy_post(front, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                                  one)
    assert status == 404, body
    assert call(front, "pid")["pid"] == shared
