"""Benchmark MCP clients over stdio, one per era, with no SDK, and the figures they measure.

Must not judge the figures (report.py does): a Driver spawns one command, speaks its era to
it (legacy: initialize + notifications/initialized; modern: the `_meta` envelope on every
request), answers the server's elicitation requests, and times calls.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

Message = dict[str, Any]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = "io.modelcontextprotocol/"
CLIENT_INFO = {"name": "bench-client", "version": "1.0.0"}
ELICITATION = {"elicitation": {"form": {}}}
ACCEPT = {"action": "accept", "content": {"ok": True}}
NEWLINE = orjson.OPT_APPEND_NEWLINE
ECHO = {"name": "echo", "arguments": {"text": "hello, bridge"}}


class ProtocolFailure(RuntimeError):
    """The peer answered with an error, or closed its output."""


class Driver:
    """One client of one era talking to one spawned process over its stdin/stdout."""

    def __init__(self, command: list[str], era: str) -> None:
        self.era = era
        self.next_id = 0
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    # Wire ---------------------------------------------------------------------------------

    def send(self, message: Message) -> None:
        self.stdin.write(orjson.dumps(message, option=NEWLINE))
        self.stdin.flush()

    def request(self, method: str, params: Message | None = None,
                caps: Message | None = None) -> int:
        """Send a request of this driver's era; returns its id."""
        self.next_id += 1
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = {META + "protocolVersion": MODERN,
                               META + "clientCapabilities": caps or {},
                               META + "clientInfo": CLIENT_INFO}
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def receive(self) -> Message:
        """The next response; server requests met on the way are answered, notifications skipped."""
        while True:
            line = self.stdout.readline()
            if not line:
                raise ProtocolFailure(f"the peer closed its output (exit {self.proc.poll()})")
            message = orjson.loads(line)
            if "method" not in message:
                if "error" in message:
                    raise ProtocolFailure(f"error response: {message['error']}")
                return message
            if "id" in message:
                self.answer(message)

    def answer(self, request: Message) -> None:
        result = ACCEPT if request["method"] == "elicitation/create" else {}
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def call(self, method: str, params: Message | None = None,
             caps: Message | None = None) -> Message:
        """One request with nothing else in flight; its result."""
        self.request(method, params, caps)
        return self.receive()["result"]

    # Lifecycle ----------------------------------------------------------------------------

    def open(self) -> float:
        """Handshake if legacy, then tools/list; seconds from spawn to that answer."""
        if self.era == "legacy":
            self.call("initialize", {"protocolVersion": LEGACY, "capabilities": ELICITATION,
                                     "clientInfo": CLIENT_INFO})
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.call("tools/list")
        return time.perf_counter() - self.started

    def peak_rss_kib(self) -> int:
        """VmHWM of the spawned process (the bridge or relay; the server for direct)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()

    # Calls --------------------------------------------------------------------------------

    def timed(self, params: Message, caps: Message | None = None) -> float:
        started = time.perf_counter()
        self.call("tools/call", params, caps)
        return time.perf_counter() - started

    def ask(self) -> float:
        """One tools/call with one elicitation round, answered the way this era answers."""
        started = time.perf_counter()
        params: Message = {"name": "ask", "arguments": {}}
        result = self.call("tools/call", params, ELICITATION)
        if result.get("resultType") == "input_required":  # mrtr.mdx: retry with the answers
            responses = {key: ACCEPT for key in result.get("inputRequests") or {}}
            retry = {**params, "inputResponses": responses,
                     "requestState": result.get("requestState")}
            result = self.call("tools/call", retry, ELICITATION)
        if result.get("content", [{}])[0].get("text") != "asked":
            raise ProtocolFailure(f"ask did not complete: {result}")
        return time.perf_counter() - started

    def pipelined(self, total: int, window: int = 16) -> float:
        """Calls per second with `window` echo calls in flight."""
        started = time.perf_counter()
        sent = 0
        for _ in range(min(window, total)):
            self.request("tools/call", ECHO)
            sent += 1
        for _ in range(total):
            self.receive()
            if sent < total:
                self.request("tools/call", ECHO)
                sent += 1
        return total / (time.perf_counter() - started)


@dataclass
class Load:
    """How much work one run does."""

    warmup: int = 50
    sequential: int = 400
    pipelined: int = 3000
    blobs_64k: int = 20
    blobs_1m: int = 5
    asks: int = 50


@dataclass
class Figures:
    """What one run of one configuration measured (seconds, calls/s, KiB)."""

    startup: float = 0.0
    latencies: list[float] = field(default_factory=list)
    throughput: float = 0.0
    blob_64k: float = 0.0
    blob_1m: float = 0.0
    ask: float = 0.0
    plain: float = 0.0
    rss_kib: int = 0


def median_of(driver: Driver, count: int, params: Message) -> float:
    return statistics.median(driver.timed(params) for _ in range(count))


def measure(command: list[str], era: str, load: Load) -> Figures:
    """Spawn `command`, run the whole load against it as an `era` client, and close it."""
    driver = Driver(command, era)
    try:
        figures = Figures(startup=driver.open())
        for _ in range(load.warmup):
            driver.timed(ECHO)
        figures.latencies = [driver.timed(ECHO) for _ in range(load.sequential)]
        figures.throughput = driver.pipelined(load.pipelined)
        figures.blob_64k = median_of(driver, load.blobs_64k, blob_params(64 * 1024))
        figures.blob_1m = median_of(driver, load.blobs_1m, blob_params(1024 * 1024))
        figures.ask = statistics.median(driver.ask() for _ in range(load.asks))
        figures.plain = median_of(driver, load.asks, ECHO)
        figures.rss_kib = driver.peak_rss_kib()
    finally:
        driver.close()
    return figures


def blob_params(size: int) -> Message:
    return {"name": "blob", "arguments": {"size": size}}


if __name__ == "__main__":  # a smoke run: direct, modern era
    here = os.path.dirname(os.path.abspath(__file__))
    import sys

    result = measure([sys.executable, os.path.join(here, "servers.py"), "modern"], "modern",
                     Load(sequential=50, pipelined=200, blobs_1m=2, asks=5))
    print(result.startup, statistics.median(result.latencies), result.throughput)
