"""`mcp-rosetta --url` in front of upstreams that fail: every request gets exactly one answer,
the error names the URL and the fix, and one log line says so.

Must not fake the bridge or the sockets: the bridge is `python -m bridge --url` over real
loopback HTTP; the misbehaving server is peers/bad_http_server.py (or no server at all).
The client is this test writing legacy-era JSON-RPC lines to the bridge's stdin.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import venvs
from test_remote import free_port, wait_listening

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ANSWER_TIMEOUT = 20.0


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


class Bridge:
    """The bridge as a subprocess; its stdout read line by line, its stderr kept."""

    def __init__(self, url: str, *options: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bridge", "--url", url, "--log-format", "json", *options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=venvs.REPO_ROOT, start_new_session=True, env={**os.environ, **(env or {})})
        self.seen: list[dict[str, Any]] = []
        self._buffer = b""

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def answers(self, ids: set[int], timeout: float = ANSWER_TIMEOUT) -> dict[int, list[Any]]:
        """Every answer to `ids` until each has one and a quiet moment passed: by id."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        quiet_until = None
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while time.monotonic() < (quiet_until or deadline):
                if selector.select(0.1):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    *lines, self._buffer = (self._buffer + chunk).split(b"\n")
                    self.seen += [json.loads(line) for line in lines if line.strip()]
                got = self._by_id(ids)
                if quiet_until is None and all(got[i] for i in ids):
                    quiet_until = time.monotonic() + 0.5  # a second answer would come now
        return self._by_id(ids)

    def _by_id(self, ids: set[int]) -> dict[int, list[Any]]:
        return {i: [m for m in self.seen if m.get("id") == i and "method" not in m] for i in ids}

    def stop(self) -> list[dict[str, Any]]:
        """Close its stdin; its log lines once it exited."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return [json.loads(line) for line in self.proc.stderr.read().splitlines()
                if line.startswith(b"{")]


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
        names = [*BEHAVIOURS, "echo"]
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
    assert got[len(names)][0]["result"]["content"] == [{"type": "text", "text": "ok"}]
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
