"""The cost of a fleet's hop: `python tests/benchmarks/fleet_hop.py [--samples N]`.

Must not assert anything or run under pytest: it starts two nodes of one fleet on loopback,
each `mcp-rosetta serve --listen http://…` before the legacy server of `servers.py` (no SDK),
and times, request by request over keep-alive connections, the same request answered where
it is held and forwarded there by the other node:

- legacy: a `tools/call` of `echo` in a legacy session node A holds, sent to A (local) or to
  B (B forwards it to A and streams A's answer back);
- retry: a 2026-07-28 client's retry of a call parked at A (mode B: the legacy server asked
  for input), sent to A or to B. Each sample parks a new call at A first (not timed). These
  two run with `fleet_affinity = "none"`: a call is parked where it is sent;
- home: with the default `fleet_affinity = "tenant"`, a 2026-07-28 client's `tools/call` of
  `echo` (the token-less tenant) sent to its home node (local) or to the other node (which
  forwards it to the home).

Local and forwarded requests alternate, so a noisy machine weighs on both alike. It prints
the p50 and p90 of each, the p50 a hop adds, its ratio to the local p50, and one `BENCH ...`
line.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from bench_http import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVER = os.path.join(HERE, "servers.py")
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
START_TIMEOUT = 60.0
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


@contextlib.contextmanager
def fleet(directory: str, affinity: str = "none") -> Iterator[tuple[int, int]]:
    """Two nodes sharing a key, each listing both, of `fleet_affinity` `affinity`; their
    ports."""
    key = os.path.join(directory, "fleet.key")
    with open(key, "w") as file:
        file.write(base64.b64encode(os.urandom(32)).decode())
    os.chmod(key, 0o600)
    ports = (free_port(), free_port())
    listed = ", ".join(f'"http://127.0.0.1:{port}"' for port in ports)
    procs = []
    try:
        for number, port in enumerate(ports):
            config = os.path.join(directory, f"node-{number}.toml")
            with open(config, "w") as file:
                file.write(f'listen = "http://127.0.0.1:{port}/mcp"\nnode = "n{number}"\n'
                           f'fleet_nodes = [{listed}]\nfleet_key_file = "{key}"\n'
                           'log_level = "warning"\n'
                           f'fleet_affinity = "{affinity}"\n')
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--config", config, "--",
                 sys.executable, SERVER, "legacy"], cwd=ROOT, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for port in ports:
            wait_ready(port)
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)


def wait_ready(port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                conn.close()
                return
        time.sleep(0.1)
    raise SystemExit(f"the node on port {port} never became ready")


def post(conn: http.client.HTTPConnection, body: dict[str, Any],
         headers: dict[str, str]) -> tuple[dict[str, str], Any]:
    """One POST on a keep-alive connection: its headers and its last JSON message (None for
    no body)."""
    conn.request("POST", "/mcp", json.dumps(body), {
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        **headers})
    response = conn.getresponse()
    data = response.read()
    if not data.strip():  # 202: a notification taken
        return {k.lower(): v for k, v in response.getheaders()}, None
    if response.getheader("content-type") == "text/event-stream":
        data = [line for line in data.split(b"\n")
                if line.startswith(b"data: ") and line[6:].strip()][-1][6:]
    return {k.lower(): v for k, v in response.getheaders()}, json.loads(data)


def modern_headers(name: str) -> dict[str, str]:
    return {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}


def call(rid: int, name: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": {"text": "hop"}, "_meta": META, **params}}


def timed(conn: http.client.HTTPConnection, body: dict[str, Any],
          headers: dict[str, str]) -> tuple[float, Any]:
    began = time.perf_counter()
    _, answer = post(conn, body, headers)
    return (time.perf_counter() - began) * 1000, answer


def legacy(a: int, b: int, samples: int) -> tuple[list[float], list[float]]:
    """Milliseconds of each legacy call answered at A, and forwarded there by B."""
    at_a, at_b = (http.client.HTTPConnection("127.0.0.1", port) for port in (a, b))
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "fleet-hop", "version": "1"}}}
    heads, _ = post(at_a, init, {})
    session = {"mcp-session-id": heads["mcp-session-id"], "mcp-protocol-version": LEGACY}
    post(at_a, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    local: list[float] = []
    forwarded: list[float] = []
    for rid in range(1, 2 * samples + 1):
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hop"}}}
        into, conn = (local, at_a) if rid % 2 else (forwarded, at_b)
        ms, answer = timed(conn, body, session)
        assert "result" in answer, answer  # a failed request is no figure
        into.append(ms)
    return local, forwarded


def retries(a: int, b: int, samples: int) -> tuple[list[float], list[float]]:
    """Milliseconds of each retry of a call parked at A, sent to A, and to B."""
    at_a, at_b = (http.client.HTTPConnection("127.0.0.1", port) for port in (a, b))
    local: list[float] = []
    forwarded: list[float] = []
    for rid in range(1, 2 * samples + 1):
        _, asked = post(at_a, call(rid, "ask"), modern_headers("ask"))
        result = asked["result"]
        [key] = result["inputRequests"]
        retry = call(rid, "ask", requestState=result["requestState"],
                     inputResponses={key: {"action": "accept", "content": {"ok": True}}})
        into, conn = (local, at_a) if rid % 2 else (forwarded, at_b)
        ms, answer = timed(conn, retry, modern_headers("ask"))
        assert "result" in answer, answer
        into.append(ms)
    return local, forwarded


def homes(a: int, b: int, samples: int) -> tuple[list[float], list[float]]:
    """Milliseconds of each modern call sent to its tenant's home, and to the other node."""
    sys.path.insert(0, ROOT)
    from bridge.fleet.home import ranked

    ports = {f"http://127.0.0.1:{port}": port for port in (a, b)}
    home, other = (ports[node] for node in ranked(None, ports))
    at_home, elsewhere = (http.client.HTTPConnection("127.0.0.1", port)
                          for port in (home, other))
    local: list[float] = []
    forwarded: list[float] = []
    for rid in range(1, 2 * samples + 1):
        into, conn = (local, at_home) if rid % 2 else (forwarded, elsewhere)
        ms, answer = timed(conn, call(rid, "echo"), modern_headers("echo"))
        assert "result" in answer, answer
        into.append(ms)
    return local, forwarded


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


def row(name: str, local: list[float], forwarded: list[float]) -> dict[str, float]:
    here, there = statistics.median(local), statistics.median(forwarded)
    print(f"{name:7} local p50 {here:7.2f} ms  p90 {p(local, 90):7.2f} | forwarded p50 "
          f"{there:7.2f} ms  p90 {p(forwarded, 90):7.2f} | hop adds {there - here:6.2f} ms "
          f"(x{there / here:.2f} the local p50)")
    return {"local_p50_ms": round(here, 3), "forwarded_p50_ms": round(there, 3),
            "added_p50_ms": round(there - here, 3), "ratio": round(there / here, 3)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400,
                        help="timed requests each way, per kind (400)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory, fleet(directory) as (a, b):
        legacy(a, b, 20)  # warm both paths: connections between the nodes, the imports
        retries(a, b, 20)
        figures = {"legacy": row("legacy", *legacy(a, b, args.samples)),
                   "retry": row("retry", *retries(a, b, args.samples))}
    with tempfile.TemporaryDirectory() as directory, fleet(directory, "tenant") as (a, b):
        homes(a, b, 20)
        figures["home"] = row("home", *homes(a, b, args.samples))
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores while measuring")
    print("BENCH " + json.dumps({"fleet_hop": figures, "samples": args.samples,
                                 "load": round(load, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
