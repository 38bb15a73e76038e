"""A legacy stdio client to a modern-only Streamable HTTP server: `mcp-rosetta --url` beside
`mcp-remote --protocol auto --transport http-only`, in one run.

Must not be taken for the e2e tests (tests/e2e/test_remote_vs_mcp_remote.py asserts the same
check table): it measures, and prints which checks each relay passes.

1. Timings, interleaved rounds (mcp-rosetta, mcp-remote, mcp-rosetta, ...): the server is the
   Python 2.x SDK's own HTTP server (tests/e2e/peers/modern_server.py --http); the client is
   this script writing legacy JSON-RPC lines to the relay's stdin. Per relay and round:
   initialize (its first answer, the relay's start included), tools/list, N sequential `echo`
   calls (per-call latency: p50, p90), a call with progress, and the RSS of the relay's process
   tree (VmRSS, sampled after the calls). Medians over the rounds.
2. The check table (tests/e2e/relay_checks.py): the legacy SDK client (mcp 1.x) runs the e2e
   cells' scenarios (basic, inputs, notify, restart) and a host's tour of the TypeScript v2
   SDK's server through each relay, against fresh servers.

Usage: python tests/benchmarks/bench_remote.py [--calls N] [--rounds R] [--no-checks]
Needs the e2e caches (tests/e2e/venvs.py: both SDKs, mcp-remote from npm, the conformance
project for the TypeScript server); installs them on first use.
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

import relay_checks  # noqa: E402
import venvs  # noqa: E402
from remote_peers import INITIALIZE, INITIALIZED  # noqa: E402


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


def timings(relays: dict[str, relay_checks.Relay], calls: int, rounds: int
            ) -> dict[str, list[dict[str, Any]]]:
    """Each relay's rounds, interleaved, against one server."""
    command, port = relay_checks.modern_server(venvs.sdk_python("modern"))
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in relays}
    with relay_checks.serving(command, port) as url:
        for _ in range(rounds):
            for name, relay in relays.items():
                results[name].append(run(relay(url), calls))
    return results


def summary(name: str, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in rounds if "p50_ms" in r]
    checks = {k: all(r["checks"].get(k) for r in rounds)
              for k in ("initialize", "tools/list", "tools/call", "progress")}
    line: dict[str, Any] = {"relay": name, "checks": checks,
                            "failed": [r["failed"] for r in rounds if "failed" in r]}
    if good:
        line |= {"p50_ms": round(statistics.median(r["p50_ms"] for r in good), 2),
                 "p90_ms": round(statistics.median(r["p90_ms"] for r in good), 2),
                 "initialize_ms": round(statistics.median(r["initialize_ms"] for r in good)),
                 "rss_mib": round(statistics.median(r["rss_kib"] for r in good) / 1024, 1)}
    return line


def check_table(relays: dict[str, relay_checks.Relay]) -> str:
    """The check table as Markdown: one column per relay, ✓ or ✗ (and the first failure's
    words below the table)."""
    legacy, modern = venvs.sdk_python("legacy"), venvs.sdk_python("modern")
    outcomes = {name: relay_checks.table(relay_checks.run_all(relay, legacy, modern))
                for name, relay in relays.items()}
    rows = ["| check | " + " | ".join(relays) + " |", "|---|" + "---|" * len(relays)]
    notes = []
    for check in relay_checks.CHECKS:
        cells = []
        for name in relays:
            passed, why = outcomes[name][check.name]
            cells.append("✓" if passed else "✗")
            if not passed:
                notes.append(f"- {name}, {check.name}: {why}")
        rows.append(f"| {check.name} | " + " | ".join(cells) + " |")
    return "\n".join([*rows, "", *notes])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-checks", action="store_true", help="timings only")
    args = parser.parse_args()
    relays = {"mcp-rosetta": relay_checks.mcp_rosetta(sys.executable),
              "mcp-remote": relay_checks.mcp_remote()}
    for name, rounds in timings(relays, args.calls, args.rounds).items():
        print(json.dumps(summary(name, rounds)), flush=True)
    if not args.no_checks:
        print(check_table(relays))


if __name__ == "__main__":
    main()
