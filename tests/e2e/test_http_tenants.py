"""Tenants on the HTTP front, against the real legacy server (mcp 1.30 FastMCP) and the real
modern client (mcp 2.3 `Client`): two bearer tokens, two tenants that never see each other.

Must not fake a peer: the front is a `python -m bridge serve --listen http://…` process with
a token file of two tokens, the server tests/e2e/peers/legacy_server.py, the clients
tests/e2e/peers/tenant_client.py (both tokens' clients in one process) or plain HTTP/1.1 for
what a client SDK would not do (another token's retry of a parked call).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import conformance_suite as cs
import pytest
import venvs

COLD_AT_MOST_S = 6.0
WAIT = 60.0
ALICE, BOB = "alice-token-1", "bob-token-2"
ELICITATION = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
               "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}


def front_command(legacy_python: venvs.SdkPython, tokens: Path, port: int,
                  *options: str) -> list[str]:
    (tokens).write_text(f"{ALICE}\n{BOB}\n")
    return [sys.executable, "-m", "bridge", "serve", "--listen",
            f"http://127.0.0.1:{port}/mcp", "--token-file", str(tokens), *options, "--",
            *legacy_python.peer("legacy_server")]


@pytest.fixture
def front(legacy_python: venvs.SdkPython, tmp_path: Path) -> Iterator[str]:
    """The URL of a front with two tokens, in front of the legacy peer."""
    port = cs.free_port()
    with cs.http_server(front_command(legacy_python, tmp_path / "tokens", port), port) as url:
        yield url


def post(url: str, token: str, rid: Any, tool: str, timeout: float = WAIT,
         **params: Any) -> tuple[int, dict[str, Any]]:
    """One tools/call as `token`'s client, declaring elicitation: the status and the JSON-RPC
    answer."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": ELICITATION, **params}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/mcp", json.dumps(body), {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
            "mcp-name": tool, "authorization": f"Bearer {token}"})
        response = conn.getresponse()
        data = response.read()
        if response.getheader("content-type") == "text/event-stream":
            data = [line for line in data.split(b"\n") if line.startswith(b"data: ")][-1][6:]
        return response.status, json.loads(data)
    finally:
        conn.close()


def test_roots_listen_streams_logs_and_progress_never_cross_tenants(
        front: str, modern_python: venvs.SdkPython) -> None:
    cmd = [modern_python.path, str(venvs.PEERS_DIR / "tenant_client.py"), front, ALICE, BOB]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT * 2,
                          cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.splitlines()[-1])
    alice, bob = report["A"], report["B"]
    assert alice["roots"] == {"roots": ["file:///secret-of-A"]}
    # Bob declares no roots: his server asks, and nobody may answer for him with Alice's.
    assert "secret-of-A" not in json.dumps(bob["roots"])
    assert "roots" in bob["roots"]["error"]
    assert alice["heard"] == {"b_added": [], "a_added": ["ToolsListChanged"]}
    assert alice["logs"] == [["warning", "chatty warning"], ["error", "chatty error"]]
    assert bob["logs"] == [["error", "chatty error"]]
    assert alice["progress"] == bob["progress"] == [1.0, 2.0, 3.0]


def test_another_tenant_s_retry_of_a_parked_call_is_refused_and_the_owner_s_still_works(
        front: str) -> None:
    status, asked = post(front, ALICE, 1, "ask_name")
    assert status == 200, asked
    result = asked["result"]
    assert result["resultType"] == "input_required", result
    [(key, question)] = result["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    retry = {"inputResponses": {key: {"action": "accept", "content": {"name": "mallory"}}},
             "requestState": result["requestState"]}
    status, refused = post(front, BOB, 2, "ask_name", **retry)
    assert refused["error"]["code"] == -32602, refused  # Bob's tenant never issued it
    assert refused["error"]["data"] == {"reason": "tampered"}
    mine = {**retry, "inputResponses": {key: {"action": "accept",
                                              "content": {"name": "octocat"}}}}
    status, answered = post(front, ALICE, 3, "ask_name", **mine)
    assert status == 200, answered
    assert answered["result"]["content"][0]["text"] == "hello octocat", answered


def test_a_tenant_idle_for_tenant_idle_gets_a_new_server_and_max_tenants_refuses(
        legacy_python: venvs.SdkPython, tmp_path: Path) -> None:
    port = cs.free_port()
    cmd = front_command(legacy_python, tmp_path / "tokens", port, "--tenant-idle", "1",
                        "--max-tenants", "1")
    with cs.http_server(cmd, port) as url:
        first = post(url, ALICE, 1, "pid")[1]["result"]["structuredContent"]["pid"]
        status, refused = post(url, BOB, 1, "pid")  # Alice's tenant was in use 0 s ago
        assert status == 503 and refused["error"]["data"] == {"max_tenants": 1}, refused
        time.sleep(2.5)  # past tenant_idle: Alice's tenant ended, its server stopped
        status, bobs = post(url, BOB, 2, "pid")
        assert status == 200, bobs
        again = post(url, ALICE, 3, "pid")
        assert again[0] == 503  # Bob's tenant is the one now
        time.sleep(2.5)
        later = post(url, ALICE, 4, "pid")[1]["result"]["structuredContent"]["pid"]
        assert later != first


def test_a_tenant_s_parked_call_does_not_hold_another_tenant_s_call(front: str) -> None:
    """A call declaring an input capability runs alone at its legacy server, parked time
    included: Alice's parked call, never retried, must not make Bob's wait."""
    status, asked = post(front, ALICE, 1, "ask_name")
    assert status == 200 and asked["result"]["resultType"] == "input_required", asked
    began = time.monotonic()
    status, bobs = post(front, BOB, 1, "ask_name", timeout=5.0)
    assert time.monotonic() - began < 1.5
    assert status == 200 and bobs["result"]["resultType"] == "input_required", bobs


# --- a tenant's pool of server processes --------------------------------------------------------

def pool_rounds(url: str, modern_python: venvs.SdkPython, token: str, count: int,
                rounds: int, seconds: float = 1.0) -> list[dict[str, Any]]:
    cmd = [modern_python.path, str(venvs.PEERS_DIR / "pool_client.py"), url, token,
           str(count), str(seconds), str(rounds)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT * 2,
                          cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    report: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])["rounds"]
    return report


def test_parallel_calls_that_may_be_asked_run_at_once_each_at_a_process_of_its_own(
        front: str, modern_python: venvs.SdkPython) -> None:
    """8 concurrent 1-s calls declaring elicitation, at the front's default settings: each
    is asked its own question (the answer names the call) at a process of its own."""
    cold, warm = pool_rounds(front, modern_python, ALICE, 8, rounds=2)
    # From cold, 8 server processes start at once: about 0.6 s of CPU each (Python, mcp,
    # pydantic), 2.5 s on 2 cores before any answers; one process would take 8 s.
    assert cold["seconds"] < COLD_AT_MOST_S, cold
    assert warm["seconds"] < 1.5, warm
    for round_, run in enumerate((cold, warm)):
        results = run["results"]
        assert sorted(r["who"] for r in results) == sorted(f"{round_}-{i}" for i in range(8))
        assert all(r["name"] == f"name-of-{r['who']}" for r in results), results
        assert len({r["pid"] for r in results}) == 8, results
    assert {r["pid"] for r in warm["results"]} == {r["pid"] for r in cold["results"]}



def test_a_tool_change_at_a_later_process_of_the_pool_reaches_the_listen_stream(
        front: str, modern_python: venvs.SdkPython) -> None:
    """The listen stream lives at the tenant's first process; a call that ran at another
    (the first held a call that may be asked) changed that process's tools: the stream hears
    it all the same, though the first process's list does not have the new tool."""
    cmd = [modern_python.path, str(venvs.PEERS_DIR / "tenant_client.py"), front, ALICE, BOB,
           "pool"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT * 2,
                          cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    alice = json.loads(done.stdout.splitlines()[-1])["A"]
    assert alice["first_lists_it"] is False, alice  # it ran at another process
    assert alice["heard"] == {"added": ["ToolsListChanged"]}, alice

def test_past_max_servers_calls_wait_in_order_for_a_free_process(
        legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython,
        tmp_path: Path) -> None:
    port = cs.free_port()
    cmd = front_command(legacy_python, tmp_path / "tokens", port, "--max-servers", "2")
    with cs.http_server(cmd, port) as url:
        [run] = pool_rounds(url, modern_python, ALICE, 4, rounds=1, seconds=0.5)
    assert 1.0 <= run["seconds"] < COLD_AT_MOST_S, run  # two turns of two (and a start)
    assert len({r["pid"] for r in run["results"]}) == 2
    assert all(r["name"] == f"name-of-{r['who']}" for r in run["results"])


def test_one_tenant_s_flood_of_calls_does_not_delay_another_tenant_s(
        front: str, modern_python: venvs.SdkPython) -> None:
    """Alice's 200 calls that may be asked fill her pool and queue; Bob's call is served by
    his own tenant (started before the flood) at once."""
    assert post(front, BOB, 0, "pid")[0] == 200
    flood = subprocess.Popen(
        [modern_python.path, str(venvs.PEERS_DIR / "pool_client.py"), front, ALICE, "200",
         "2", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=venvs.REPO_ROOT,
        stdin=subprocess.DEVNULL)
    try:
        time.sleep(3.0)  # her pool is full, most of her calls wait
        began = time.monotonic()
        status, answer = post(front, BOB, 1, "pid", timeout=10.0)
        assert time.monotonic() - began < 1.5
        assert status == 200 and "pid" in answer["result"]["structuredContent"], answer
    finally:
        flood.kill()
        flood.communicate()
