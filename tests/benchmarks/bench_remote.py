"""A legacy stdio client to a modern-only Streamable HTTP server: `mcp-rosetta --url` beside
`mcp-remote --protocol auto`, in one run, interleaved.

Must not be taken for the e2e tests (tests/e2e/test_remote.py): it measures, and says which
of a few checks each relay passes. The server is the modern SDK's own HTTP server
(tests/e2e/peers/modern_server.py --http); the client is this script writing legacy JSON-RPC
lines to the relay's stdin. Per relay: initialize, tools/list, N sequential `echo` calls (the
per-call latency: p50, p90), a call with progress, and the relay's RSS (VmRSS of its process
tree, sampled after the calls).

Usage: python tests/benchmarks/bench_remote.py [--calls N] [--rounds R]
Needs the e2e caches (tests/e2e/venvs.py: the modern SDK, and mcp-remote from npm).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "e2e"))

import venvs  # noqa: E402
from remote_peers import INITIALIZE, INITIALIZED, free_port, wait_listening  # noqa: E402

MCP_REMOTE = ("mcp-remote@0.15.1",)


def mcp_remote() -> str:
    home = venvs.cache_root() / "npm-client-mcp-remote-0.15.1"
    program = home / "node_modules" / ".bin" / "mcp-remote"
    with venvs.file_lock(venvs.cache_root() / f"{home.name}.lock"):
        if not venvs.is_ready(home, " ".join(MCP_REMOTE), program):
            venvs.build_npm(home, *MCP_REMOTE)
    return str(program)


class Relay:
    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self._selector.register(self.proc.stdout.fileno(), selectors.EVENT_READ)
        self.notes: list[dict[str, Any]] = []

    def ask(self, message: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        if "id" not in message:
            return {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                got = json.loads(line)
                if got.get("id") == message["id"] and "method" not in got:
                    return dict(got)
                self.notes.append(got)
            if self._selector.select(0.5):
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError("the relay closed its output")
                self._buffer += chunk
        raise TimeoutError(f"no answer to {message.get('method')}")

    def rss_kib(self) -> int:
        """VmRSS of the relay and its descendants (mcp-remote runs node under a shim)."""
        pids, total = [self.proc.pid], 0
        while pids:
            pid = pids.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                total += int(next(line.split()[1] for line in status.splitlines()
                                  if line.startswith("VmRSS:")))
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                pids += [int(c) for c in children]
            except (OSError, StopIteration):
                continue
        return total

    def close(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def call(request_id: int, name: str, arguments: dict[str, Any],
         token: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def run(command: list[str], calls: int) -> dict[str, Any]:
    relay = Relay(command)
    out: dict[str, Any] = {"checks": {}}
    try:
        started = time.monotonic()
        init = relay.ask(INITIALIZE)
        out["checks"]["initialize"] = "result" in init
        out["initialize_ms"] = (time.monotonic() - started) * 1000
        relay.ask(INITIALIZED)
        listed = relay.ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        out["checks"]["tools/list"] = "echo" in json.dumps(listed.get("result"))
        times = []
        ok = True
        for i in range(calls):
            began = time.perf_counter()
            answer = relay.ask(call(100 + i, "echo", {"text": "hi"}))
            times.append((time.perf_counter() - began) * 1000)
            ok = ok and "result" in answer
        out["checks"]["tools/call"] = ok
        slow = relay.ask(call(2, "slow", {"steps": 3}, token=7))
        progress = [n for n in relay.notes if n.get("method") == "notifications/progress"]
        out["checks"]["progress"] = "result" in slow and len(progress) == 3
        times.sort()
        out["p50_ms"] = statistics.median(times)
        out["p90_ms"] = times[int(len(times) * 0.9)]
        out["rss_kib"] = relay.rss_kib()
    except (RuntimeError, TimeoutError) as exc:
        out["failed"] = str(exc)
    finally:
        relay.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(venvs.sdk_python("modern").peer("modern_server", "--http",
                                                              str(port)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}/mcp"
    relays = {"mcp-rosetta": [sys.executable, "-m", "bridge", "--url", url],
              "mcp-remote": [mcp_remote(), url, "--protocol", "auto", "--transport",
                             "http-only"]}
    try:
        wait_listening(port, server, 30.0)
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in relays}
        for _ in range(args.rounds):
            for name, command in relays.items():
                results[name].append(run(command, args.calls))
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    for name, rounds in results.items():
        good = [r for r in rounds if "p50_ms" in r]
        checks = {k: all(r["checks"].get(k) for r in rounds)
                  for k in ("initialize", "tools/list", "tools/call", "progress")}
        line = {"relay": name, "checks": checks,
                "failed": [r["failed"] for r in rounds if "failed" in r]}
        if good:
            line |= {"p50_ms": round(statistics.median(r["p50_ms"] for r in good), 2),
                     "p90_ms": round(statistics.median(r["p90_ms"] for r in good), 2),
                     "initialize_ms": round(statistics.median(r["initialize_ms"] for r in good)),
                     "rss_mib": round(statistics.median(r["rss_kib"] for r in good) / 1024, 1)}
        print(json.dumps(line))


if __name__ == "__main__":
    main()
