"""What `mcp-rosetta serve` costs at rest: `python tests/benchmarks/daemon_cost.py [--sessions N]`.

Must not judge: it starts the daemon in front of the benchmark's modern server, and prints the
daemon's resident memory with no session and with N idle sessions (each initialized, so each
has its server running), and how long a new session takes to answer its first request: over a
raw socket (the daemon's own share) and through `mcp-rosetta connect` (what a client pays,
the relay's own start-up included), interleaved; and, for scale, how long this interpreter
takes to run nothing (an editable install's import hook, run by site, is part of it).
`--connect PROGRAM` (repeatable) times another `connect` too, in the same rounds: an installed
`mcp-rosetta` (e.g. a wheel's, or another commit's, in a venv of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INIT = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "cost", "version": "1"}}}) + "\n").encode()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def first_answer(sock: socket.socket) -> None:
    sock.sendall(INIT)
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the daemon hung up")
        data += chunk


def open_session(path: str) -> tuple[socket.socket, float]:
    started = time.perf_counter()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    first_answer(sock)
    return sock, time.perf_counter() - started


def through_connect(path: str, program: list[str]) -> float:
    started = time.perf_counter()
    relay = subprocess.Popen([*program, "connect", path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert relay.stdin is not None and relay.stdout is not None
    relay.stdin.write(INIT)
    relay.stdin.flush()
    relay.stdout.readline()
    elapsed = time.perf_counter() - started
    relay.stdin.close()
    relay.wait()
    return elapsed


def interpreter_start() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--starts", type=int, default=10, help="new sessions timed")
    parser.add_argument("--connect", action="append", default=[], metavar="PROGRAM",
                        help="another mcp-rosetta to time `connect` with; repeatable")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cost.sock")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", "--listen", f"unix:{path}",
             "--log-level", "warning", "--max-sessions", str(args.sessions + 8), "--",
             sys.executable, str(HERE / "servers.py"), "modern"])
        try:
            while not os.path.exists(path):
                time.sleep(0.01)
            time.sleep(0.5)
            idle = rss_mib(daemon.pid)
            held = [open_session(path)[0] for _ in range(args.sessions)]
            time.sleep(0.5)
            busy = rss_mib(daemon.pid)
            raw, relayed, bare = [], [], []
            others: dict[str, list[float]] = {program: [] for program in args.connect}
            for _ in range(args.starts):
                sock, elapsed = open_session(path)
                raw.append(elapsed)
                sock.close()
                relayed.append(through_connect(path, [sys.executable, "-m", "bridge"]))
                for program, times in others.items():
                    times.append(through_connect(path, [program]))
                bare.append(interpreter_start())
            for sock in held:
                sock.close()
        finally:
            daemon.terminate()
            daemon.wait()
    print(f"daemon RSS: {idle:.1f} MiB idle, {busy:.1f} MiB with {args.sessions} idle sessions "
          f"({(busy - idle) / args.sessions:.2f} MiB each; their servers not counted)")
    print(f"new session to its first answer: {statistics.median(raw) * 1e3:.0f} ms over the "
          f"socket, {statistics.median(relayed) * 1e3:.0f} ms through mcp-rosetta connect "
          f"(medians of {args.starts}); python itself runs nothing in "
          f"{statistics.median(bare) * 1e3:.0f} ms")
    for program, times in others.items():
        excess = statistics.median(t - r for t, r in zip(times, raw, strict=True))
        print(f"  {program} connect: {statistics.median(times) * 1e3:.0f} ms, "
              f"+{excess * 1e3:.0f} ms over the socket (median of each round's difference)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
