"""Helpers of the `--url` tests: free ports, the SDKs' HTTP servers on them and their
readiness, and the bridge driven by raw JSON-RPC lines (a client that is this test)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import venvs

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ANSWER_TIMEOUT = 20.0
READY_TIMEOUT = 30.0


PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy"})
"""Left out of the bridge's environment unless a test sets them: a proxy the machine names
must not stand between the bridge and a loopback server."""


def without_proxies(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.lower() not in PROXY_VARIABLES}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the HTTP server exited ({proc.returncode}) before listening")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {timeout}s")


def http_server(python: venvs.SdkPython, script: str, *, again: bool = False) -> Iterator[str]:
    """Run `script` with --http on a free port, in a process group of its own; its URL.
    `again`: started again on the same port whenever it exits (a server that is restarted)."""
    port = free_port()
    command = python.peer(script, "--http", str(port))
    if again:
        command = ["sh", "-c", 'while :; do "$@"; sleep 0.1; done', "again", *command]
    yield from serving(command, port)


def serving(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, **(env or {})})
    try:
        wait_listening(port, proc, READY_TIMEOUT)
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
            cwd=venvs.REPO_ROOT, start_new_session=True,
            env={**without_proxies(dict(os.environ)), **(env or {})})
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
