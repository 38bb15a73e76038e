"""The HTTP front as a process: `mcp-rosetta serve --listen http://…` in front of the real
legacy SDK server (mcp==1.30.0, the e2e legacy peer), reached over real HTTP on loopback by
a 2026-07-28 client (the standard library's http.client: the front's wire, nothing more).

Must not fake the server: what is checked is what only the whole chain shows, one shared
server process for every modern request, and a closed connection reaching the legacy
server as a cancellation of its call.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

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
