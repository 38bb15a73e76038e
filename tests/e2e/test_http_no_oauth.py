"""mcp-remote at a front with bearer tokens but no OAuth, without a token: it must fail fast,
with the front's hint to send the token, not wait for a sign-in that can never end."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import conformance_suite as cs
import venvs
from test_http_clients import running_front

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "e2e", "version": "1"}}}
FAILS_WITHIN_S = 5.0


def test_mcp_remote_without_a_token_fails_within_5_s_with_the_token_hint(
        modern_python: venvs.SdkPython, tmp_path: Path) -> None:
    port = cs.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", url,
           *modern_python.peer("modern_server")]
    prefix = venvs.npm_client("mcp-remote")
    remote = [cs.node(), str(prefix / "node_modules" / "mcp-remote" / "dist" / "proxy.js"),
              url, "--transport", "http-only"]
    with running_front(cmd, port, tmp_path / "front.log",
                       env={"MCP_ROSETTA_TOKEN": "e2e-token"}):
        started = time.monotonic()
        # mcp-remote keeps its OAuth state in ~/.mcp-auth: a HOME of its own
        proc = subprocess.Popen(remote, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin",
                                                             "HOME": str(tmp_path)})
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        try:
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        took = time.monotonic() - started
    assert proc.returncode != 0
    assert "send Authorization: Bearer <token>" in err.decode(), err.decode()[-2000:]
    assert took < FAILS_WITHIN_S, took
