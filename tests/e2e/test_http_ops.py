"""The HTTP front as systemd runs it: started by systemd's own socket-activation tool on a TCP
port, in front of the real legacy SDK server (mcp==1.30.0), reached over real HTTP on
loopback (the standard library's http.client), telling a notify socket how it is doing.

Must not fake systemd's side nor the server: `systemd-socket-activate` listens on the port,
passes the socket on the first connection (LISTEN_FDS, Accept=no) and execs the front;
the server child is killed for real to see /readyz go red and green again.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import conformance_suite as cs
import venvs
from test_daemon import NotifySocket, alive, descendants

WAIT = 60.0
ENV_TOKEN = "env-token-0123456789"
FILE_TOKEN = "file-token-abcdef"
NEW_TOKEN = "file-token-reloaded="
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}


def ask(port: int, method: str, path: str, body: dict[str, Any] | None = None,
        token: str | None = None) -> tuple[int, dict[str, str], Any]:
    """One request on a connection of its own: status, headers, the JSON answer (the last
    event of a stream) or None."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    headers = {"accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if body is not None:
        headers |= {"content-type": "application/json", "mcp-protocol-version": "2026-07-28",
                    "mcp-method": body["method"]}
        if "name" in body.get("params", {}):
            headers["mcp-name"] = body["params"]["name"]
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        if response.getheader("content-type") == "text/event-stream":
            data = [line for line in data.split(b"\n") if line.startswith(b"data: ")][-1][6:]
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                json.loads(data) if data else None)
    finally:
        conn.close()


def call_pid(port: int, token: str | None) -> tuple[int, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "pid", "arguments": {}, "_meta": META}}
    status, _, answer = ask(port, "POST", "/mcp", body, token)
    return status, answer


def ready(port: int) -> tuple[int, str]:
    status, _, answer = ask(port, "GET", "/readyz")
    return status, answer["status"]


def until(predicate: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def write_config(path: Path, command: list[str], token_file: Path) -> None:
    path.write_text(f"command = {json.dumps(command)}\nshutdown_grace = 1.0\n"
                    f'kill_grace = 1.0\nlog_format = "json"\ntoken_file = "{token_file}"\n'
                    "restart_backoff = [1.0, 2.0]\n")


def test_socket_activation_tokens_readiness_reload_and_stop(
        tmp_path: Path, legacy_python: venvs.SdkPython) -> None:
    activate = shutil.which("systemd-socket-activate")
    assert activate is not None, "systemd-socket-activate is needed (Debian: package systemd)"
    port = cs.free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the e2e client\n{FILE_TOKEN}\n")
    config = tmp_path / "front.toml"
    write_config(config, legacy_python.peer("legacy_server"), tokens)
    notify = NotifySocket(tmp_path / "notify")
    log = tmp_path / "front.log"
    front = subprocess.Popen(
        [activate, "-l", f"127.0.0.1:{port}", "-E", f"NOTIFY_SOCKET={notify.path}",
         "-E", f"MCP_ROSETTA_TOKEN={ENV_TOKEN}", "-E", "WATCHDOG_USEC=400000",
         sys.executable, "-m", "bridge", "serve", "--config", str(config),
         "--listen", f"http://127.0.0.1:{port}/mcp"],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), env={**os.environ})
    try:
        # The first connection makes systemd-socket-activate exec the front.
        health = until(lambda: _health(port), "the socket answering /healthz")
        assert health == (200, {"status": "ok"})
        notify.wait_for("READY=1")
        notify.wait_for("WATCHDOG=1")
        until(lambda: ready(port) == (200, "ready"), "/readyz green")

        # The token: none or a wrong one is 401; the file's and the environment's pass.
        status, headers, answer = ask(port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                                             "method": "tools/list",
                                                             "params": {"_meta": META}})
        assert status == 401 and headers["www-authenticate"].startswith('Bearer realm=')
        assert "Authorization" in answer["error"]["message"]
        assert call_pid(port, "wrong")[0] == 401
        status, answer = call_pid(port, FILE_TOKEN)
        assert status == 200, answer
        server = answer["result"]["structuredContent"]["pid"]
        other = call_pid(port, ENV_TOKEN)[1]["result"]["structuredContent"]["pid"]
        assert other != server  # each token is a tenant, with a server of its own
        for pid in (server, other):
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert not any(entry.startswith(b"MCP_ROSETTA_TOKEN=") for entry in environ)

        # The front's own server (its session's, which /readyz reports) killed: /readyz red
        # (naming the state) until its successor answers.
        [own] = descendants(front.pid) - {server, other}
        os.kill(own, signal.SIGKILL)
        red = until(lambda: (lambda r: r if r[0] == 503 else None)(ready(port)),
                    "/readyz red while the server restarts")
        assert red[1] in ("down", "restarting"), red
        until(lambda: ready(port) == (200, "ready"), "/readyz green again")
        # A tenant's server killed: its successor serves the tenant's next call.
        os.kill(server, signal.SIGKILL)
        until(lambda: (lambda r: r[0] == 200 and "result" in r[1] and r[1]["result"][
            "structuredContent"]["pid"] not in (server, other))(call_pid(port, FILE_TOKEN)),
              "the tenant's server restarted")

        # SIGHUP: the token file is read again; the environment's token stays.
        tokens.write_text(f"{NEW_TOKEN}\n")
        mark = len(notify.messages)
        front.send_signal(signal.SIGHUP)
        reloading = notify.wait_for("RELOADING=1", after=mark)
        assert "\nMONOTONIC_USEC=" in notify.messages[reloading]
        notify.wait_for("READY=1", after=reloading)
        assert call_pid(port, FILE_TOKEN)[0] == 401
        assert call_pid(port, NEW_TOKEN)[0] == 200
        assert call_pid(port, ENV_TOKEN)[0] == 200

        # A configuration that no longer validates is logged and the one in force kept.
        config.write_text(config.read_text() + "max_connections = 0\n")
        mark = len(notify.messages)
        front.send_signal(signal.SIGHUP)
        notify.wait_for("READY=1", after=notify.wait_for("RELOADING=1", after=mark))
        assert call_pid(port, NEW_TOKEN)[0] == 200

        # SIGTERM: the front exits 0, and nothing it started is left.
        running = descendants(front.pid)
        assert running
        front.send_signal(signal.SIGTERM)
        front.wait(timeout=WAIT)
        stderr = log.read_bytes()
        assert front.returncode == 0, stderr.decode()[-3000:]
        notify.wait_for("STOPPING=1")
        assert [pid for pid in running if alive(pid)] == []
        log = stderr.decode()
        for token in (ENV_TOKEN, FILE_TOKEN, NEW_TOKEN):
            assert token not in log
        events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        requests = [e for e in events if e["event"] == "http.request"]
        assert all(e["peer"].startswith("127.0.0.1:") for e in requests)
        assert {e["status"] for e in requests} >= {200, 401, 503}
        [reloaded] = [e for e in events if e["event"] == "daemon.reloaded"]
        assert reloaded["tokens"] == 2 and reloaded["needs_restart"] == []
        [failed] = [e for e in events if e["event"] == "daemon.reload_failed"]
        assert "max_connections" in failed["reason"]
        assert any(e["event"] == "child.restarted" for e in events)
        statuses = [m for m in notify.messages if m.startswith(("STATUS=", "READY=1\nSTATUS"))]
        assert any("restarting the server" in m for m in statuses), statuses
    except BaseException:
        print(log.read_text()[-20000:])  # the front's log, in pytest's report of the failure
        raise
    finally:
        if front.poll() is None:
            front.kill()
            front.wait()
        notify.close()


def _health(port: int) -> tuple[int, Any] | None:
    try:
        status, _, answer = ask(port, "GET", "/healthz")
    except OSError:
        return None
    return status, answer


def test_a_non_loopback_address_without_a_token_is_refused_at_start(
        legacy_python: venvs.SdkPython) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "MCP_ROSETTA_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "serve", "--listen",
         f"http://0.0.0.0:{cs.free_port()}/mcp", "--", *legacy_python.peer("legacy_server")],
        capture_output=True, text=True, timeout=WAIT, env=environ)
    assert done.returncode == 78, done.stderr
    assert "token_file" in done.stderr and "MCP_ROSETTA_TOKEN" in done.stderr
