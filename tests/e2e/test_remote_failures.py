"""`mcp-rosetta --url` in front of upstreams that fail: every request gets exactly one answer,
the error names the URL and the fix, and one log line says so; what a cancel or a timeout
ends leaves no connection behind.

Must not fake the bridge or the sockets: the bridge is `python -m bridge --url` over real
loopback HTTP; the misbehaving server is peers/bad_http_server.py (modern) or
peers/bad_legacy_http_server.py (the same in a legacy session), or no server at all.
The client is this test writing legacy-era JSON-RPC lines to the bridge's stdin (modern-era
ones where a test is about a modern client).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import venvs
from remote_peers import INITIALIZE, INITIALIZED, Bridge, free_port, wait_listening

SERVERS = {"modern": "bad_http_server.py", "legacy": "bad_legacy_http_server.py"}
NAMES = {"modern": "bad-http-server", "legacy": "bad-legacy-http-server"}


def bad_server(era: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(venvs.PEERS_DIR / SERVERS[era]), str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_listening(port, proc, 10.0)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def bad_url() -> Iterator[str]:
    yield from bad_server("modern")


@pytest.fixture(scope="module")
def bad_legacy_url() -> Iterator[str]:
    yield from bad_server("legacy")


@pytest.fixture(params=["modern", "legacy"])
def era_and_url(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Each era's bad server (module-scoped): (era, URL)."""
    era: str = request.param
    return era, request.getfixturevalue("bad_url" if era == "modern" else "bad_legacy_url")


def call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}


BEHAVIOURS = {  # tool → what the client's error must say
    "html": "text/html instead of JSON",
    "status500": "HTTP 500",
    "auth": 'HTTP 401 (WWW-Authenticate: Bearer realm="bad", error="invalid_token")',
    "drop": "ended the event stream of tools/call without answering it",
    "redirect": "redirects are not followed",
    "garbage": "ended the event stream of tools/call without answering it",
    "endless": "no answer from the server within 2 s",
    "silent": "no answer from the server within 2 s",
}


def text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return str(answer["result"]["content"][0]["text"])


def open_count(bridge: Bridge, request_id: int) -> int:
    """How many calls hold a connection to the server without answering (its `open` tool)."""
    bridge.send(call(request_id, "open"))
    count: int = bridge.answers({request_id})[request_id][0]["result"]["structuredContent"][
        "open"]
    return count


def still_open(bridge: Bridge, first_id: int) -> int:
    """open_count once it settles at 0, or after 3 s (ids from `first_id` on)."""
    deadline = time.monotonic() + 3.0
    for request_id in range(first_id, first_id + 100):
        count = open_count(bridge, request_id)
        if count == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return count


def test_each_bad_answer_is_one_error_and_the_session_goes_on(
    era_and_url: tuple[str, str]
) -> None:
    era, url = era_and_url
    bridge = Bridge(url, "--request-timeout", "2s")
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        assert bridge.answers({0})[0][0]["result"]["serverInfo"]["name"] == NAMES[era]
        names = [*BEHAVIOURS, "moved", "echo"]
        bridge.send(*(call(i, name) for i, name in enumerate(names, 1)))
        got = bridge.answers(set(range(1, len(names) + 1)))
        # The timeouts cancelled `endless` and `silent`: their connections are closed.
        left = still_open(bridge, 100)
    finally:
        logs = bridge.stop()
    assert {i: len(answers) for i, answers in got.items()} == {i: 1 for i in got}
    for i, (name, words) in enumerate(BEHAVIOURS.items(), 1):
        error = got[i][0]["error"]
        assert words in error["message"], (name, error)
        if name not in ("endless", "silent"):  # the bridge's words for its own timeout
            assert url in error["message"], (name, error)
    for last in (len(names) - 1, len(names)):  # a same-origin redirect is followed
        assert text(got[last][0]) == "ok"
    assert left == 0
    warned = [line for line in logs if line["event"] in ("upstream.refused", "upstream.failed")]
    assert len(warned) == 6 and all(line["url"] == url for line in warned)  # one each


def cancelled(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the user gave up"}}


def test_a_cancelled_call_leaves_no_connection_behind(era_and_url: tuple[str, str]) -> None:
    # No request timeout: only the client's cancel ends a call that is never answered.
    # Modern: closing the stream is the cancel; legacy: the cancel is POSTed in the session
    # and the stream, which the server may hold forever, closed.
    _, url = era_and_url
    bridge = Bridge(url)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "endless"), call(2, "silent"))
        bridge.answers({0})
        before = 0
        for request_id in range(3, 20):  # until both calls hold their connection
            before = open_count(bridge, request_id)
            if before == 2:
                break
            time.sleep(0.2)
        bridge.send(cancelled(1), cancelled(2))
        left = still_open(bridge, 100)
        bridge.send(call(500, "echo"))
        bridge.answers({500})
        got = bridge.answers({1, 2, 500}, timeout=1.0)
    finally:
        bridge.stop()
    assert (before, left) == (2, 0)
    assert len(got[1]) <= 1 and len(got[2]) <= 1  # a cancelled request needs no answer
    assert text(got[500][0]) == "ok"


def test_a_modern_stream_cut_mid_body_is_the_server_going(bad_url: str) -> None:
    # 2026-07-28 streams are not resumable (streamable-http.mdx §Receiving Messages): a
    # transport error is the server going; the core's new session serves what follows.
    bridge = Bridge(bad_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        bridge.answers({0})
        bridge.send(call(1, "cut"))
        got = bridge.answers({1})
        bridge.send(call(2, "echo"))
        got.update(bridge.answers({2}))
    finally:
        logs = bridge.stop()
    assert len(got[1]) == 1
    message = got[1][0]["error"]["message"]
    assert f"the server at {bad_url} went away" in message and "is being restarted" in message
    assert text(got[2][0]) == "ok"
    changed = [m for m in bridge.seen if m.get("method") == "notifications/tools/list_changed"]
    assert len(changed) == 1  # the client's word that the server changed
    assert [line["gen"] for line in logs if line["event"] == "upstream.lost"] == [1]


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def modern_call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": MODERN_META}}


def test_a_modern_servers_request_on_a_calls_stream_is_refused_not_relayed(
        bad_url: str) -> None:
    # A 2026-07-28 server sends no requests (streamable-http.mdx: it "MUST NOT send
    # independent JSON-RPC requests"); a modern client in pass-through is never asked one.
    # The core answers it -32601, which that revision gives no way to POST: it is dropped.
    bridge = Bridge(bad_url)
    try:
        bridge.send(modern_call(1, "ask"))
        got = bridge.answers({1})
    finally:
        logs = bridge.stop()
    assert text(got[1][0]) == "asked"
    assert [m for m in bridge.seen if "method" in m] == []  # nothing asked of the client
    refused = [line for line in logs if line["event"] == "server.request_refused"]
    assert [(line["method"], line["level"]) for line in refused] == [
        ("elicitation/create", "warning")]
    dropped = [line["reason"] for line in logs if line["event"] == "upstream.dropped"]
    assert dropped == ["a response to a modern server"]


def test_a_legacy_stream_cut_after_an_event_id_is_resumed(bad_legacy_url: str) -> None:
    # transports.mdx §Resumability and Redelivery: after a disconnection "(whether due to
    # network failure or server-initiated closure)" the client SHOULD GET with Last-Event-ID;
    # the server replays the rest of that stream: here, the call's answer.
    bridge = Bridge(bad_legacy_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        bridge.answers({0})
        bridge.send(call(1, "sessions"))
        before = bridge.answers({1})[1][0]["result"]["structuredContent"]
        bridge.send(call(2, "cut"))
        got = bridge.answers({2})
        bridge.send(call(3, "sessions"))
        after = bridge.answers({3})[3][0]["result"]["structuredContent"]
    finally:
        logs = bridge.stop()
    assert len(got[2]) == 1 and text(got[2][0]) == "resumed"
    assert (after["opened"], after["resumed"]) == (before["opened"], before["resumed"] + 1)
    assert not [line for line in logs if line["event"] == "upstream.lost"]


def test_an_expired_legacy_session_is_replaced(bad_legacy_url: str) -> None:
    # A 404 mid-session (transports.mdx §Session Management: the session expired, or the
    # server restarted) is the server going: a new session with the client's initialize,
    # and the client hears list_changed. The call that met the 404 gets one error.
    bridge = Bridge(bad_legacy_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "sessions"))
        before = bridge.answers({0, 1})[1][0]["result"]["structuredContent"]
        bridge.send(call(2, "expire"))
        got = bridge.answers({2})
        bridge.send(call(3, "echo"), call(4, "sessions"))
        got.update(bridge.answers({3, 4}))
    finally:
        logs = bridge.stop()
    assert len(got[2]) == 1
    message = got[2][0]["error"]["message"]
    assert "ended the session (HTTP 404" in message and "is being restarted" in message
    assert text(got[3][0]) == "ok"
    assert got[4][0]["result"]["structuredContent"]["opened"] == before["opened"] + 1
    initialized = [m for m in bridge.seen if m.get("id") == 0]
    assert len(initialized) == 1  # the client's own initialize answered once, not again
    changed = [m for m in bridge.seen if m.get("method") == "notifications/tools/list_changed"]
    assert len(changed) == 1
    assert [line["gen"] for line in logs if line["event"] == "upstream.lost"] == [1]


def test_a_server_that_is_not_there_is_one_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    bridge = Bridge(url)
    try:
        bridge.send(INITIALIZE)
        got = bridge.answers({0})
    finally:
        logs = bridge.stop()
    assert len(got[0]) == 1
    message = got[0][0]["error"]["message"]
    assert url in message and "cannot connect" in message, message
    failed = [line for line in logs if line["event"] == "upstream.failed"]
    assert failed and all(url in line["error"] for line in failed)


def test_a_header_is_sent_from_the_environment_and_never_logged(bad_url: str) -> None:
    secret = "s3cret-token-value"
    bridge = Bridge(bad_url, "--header", "Authorization: Bearer ${ROSETTA_TEST_TOKEN}",
                    "--log-level", "debug", env={"ROSETTA_TEST_TOKEN": secret})
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "whoami"))
        got = bridge.answers({0, 1})
    finally:
        logs = bridge.stop()
    assert got[1][0]["result"]["content"][0]["text"] == f"Bearer {secret}"
    assert secret not in json.dumps(logs)
    assert logs[0]["event"] == "bridge.started" and logs[0]["headers"] == ["Authorization"]


def test_an_unset_variable_in_a_header_is_a_config_error(bad_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ROSETTA_TEST_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "bridge", "--url", bad_url, "--header",
                           "Authorization: Bearer ${ROSETTA_TEST_TOKEN}"],
                          input=b"", capture_output=True, env=env, timeout=30,
                          cwd=venvs.REPO_ROOT)
    assert proc.returncode == 78
    assert b"${ROSETTA_TEST_TOKEN} is not set" in proc.stderr


def test_an_idle_legacy_session_that_expired_is_replaced_unnoticed(bad_legacy_url: str) -> None:
    # The session's GET stream ends with it, and its reopening meets the 404: the bridge
    # opens a new session before the client asks anything, and the client hears only
    # list_changed (what it has and does stays valid).
    bridge = Bridge(bad_legacy_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "sessions"))
        before = bridge.answers({0, 1})[1][0]["result"]["structuredContent"]
        bridge.send(call(2, "expire_quietly"))
        bridge.answers({2})
        deadline = time.monotonic() + 10.0
        while not changed_in(bridge.seen) and time.monotonic() < deadline:
            bridge.answers(set(), timeout=0.2)
        bridge.send(call(3, "echo"), call(4, "sessions"))
        got = bridge.answers({2, 3, 4})
    finally:
        logs = bridge.stop()
    assert [m for m in bridge.seen if "error" in m] == []
    assert text(got[2][0]) == text(got[3][0]) == "ok"
    assert got[4][0]["result"]["structuredContent"]["opened"] == before["opened"] + 1
    assert len(changed_in(bridge.seen)) == 1
    lost = [line for line in logs if line["event"] == "upstream.lost"]
    assert len(lost) == 1 and "ended the session (HTTP 404" in lost[0]["went"]


def test_a_legacy_get_stream_is_open_before_the_first_request(bad_legacy_url: str) -> None:
    # The GET stream is opened beside notifications/initialized and the next request waits
    # for its answer: what the server sends there about that request reaches the client.
    bridge = Bridge(bad_legacy_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "sessions"))
        counts = bridge.answers({0, 1})[1][0]["result"]["structuredContent"]
    finally:
        logs = bridge.stop()
    assert counts["listening"] == 1
    assert not [line for line in logs if line["event"] == "upstream.listen_slow"]


def test_a_legacy_get_stream_cut_after_an_event_id_is_resumed(bad_legacy_url: str) -> None:
    bridge = Bridge(bad_legacy_url)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "sessions"))
        before = bridge.answers({0, 1})[1][0]["result"]["structuredContent"]
        bridge.send(call(2, "cut_listen"))
        bridge.answers({2})
        after = before
        for request_id in range(3, 30):  # until the GET stream was opened again
            bridge.send(call(request_id, "sessions"))
            after = bridge.answers({request_id})[request_id][0]["result"]["structuredContent"]
            if after["listens_resumed"] > before["listens_resumed"]:
                break
            time.sleep(0.2)
    finally:
        logs = bridge.stop()
    assert after["listens_resumed"] == before["listens_resumed"] + 1
    assert after["opened"] == before["opened"]  # the same session
    assert not [line for line in logs if line["event"] == "upstream.lost"]
    assert [line["last_event_id"] for line in logs if line["event"] == "upstream.listen_cut"]


def changed_in(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in seen if m.get("method") == "notifications/tools/list_changed"]
