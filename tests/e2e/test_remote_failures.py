"""`mcp-rosetta --url` in front of upstreams that fail: every request gets exactly one answer,
the error names the URL and the fix, and one log line says so.

Must not fake the bridge or the sockets: the bridge is `python -m bridge --url` over real
loopback HTTP; the misbehaving server is peers/bad_http_server.py (or no server at all).
The client is this test writing legacy-era JSON-RPC lines to the bridge's stdin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import venvs
from remote_peers import INITIALIZE, INITIALIZED, Bridge, free_port, wait_listening


@pytest.fixture(scope="module")
def bad_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(venvs.PEERS_DIR / "bad_http_server.py"),
                             str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_listening(port, proc, 10.0)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


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


def test_each_bad_answer_is_one_error_and_the_session_goes_on(bad_url: str) -> None:
    bridge = Bridge(bad_url, "--request-timeout", "2s")
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        assert bridge.answers({0})[0][0]["result"]["serverInfo"]["name"] == "bad-http-server"
        names = [*BEHAVIOURS, "moved", "echo"]
        bridge.send(*(call(i, name) for i, name in enumerate(names, 1)))
        got = bridge.answers(set(range(1, len(names) + 1)))
    finally:
        logs = bridge.stop()
    assert {i: len(answers) for i, answers in got.items()} == {i: 1 for i in got}
    for i, (name, words) in enumerate(BEHAVIOURS.items(), 1):
        error = got[i][0]["error"]
        assert words in error["message"], (name, error)
        if name not in ("endless", "silent"):  # the bridge's words for its own timeout
            assert bad_url in error["message"], (name, error)
    for last in (len(names) - 1, len(names)):  # a same-origin redirect is followed
        assert got[last][0]["result"]["content"] == [{"type": "text", "text": "ok"}]
    warned = [line for line in logs if line["event"] in ("upstream.refused", "upstream.failed")]
    assert len(warned) == 6 and all(line["url"] == bad_url for line in warned)  # one each


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
