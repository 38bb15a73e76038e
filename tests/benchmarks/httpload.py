"""The HTTP benchmark's load client: keep-alive HTTP/1.1 over raw sockets, 1 to N in flight.

Must not cost more than it must, and must not judge the figures (`bench_http.py` does): each
request is a pre-encoded head and body with only the id formatted in, each answer is framed
here (Content-Length or chunked, JSON or one SSE stream) and checked (status 200, the
request's id, the echo's text), and N calls in flight run over N connections on one
`selectors` loop (epoll), one call at a time per connection, as a keep-alive client pool does.
`TreeRss` samples the resident set of a process and all its descendants while a run goes on.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

Message = dict[str, Any]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = "io.modelcontextprotocol/"
CLIENT_INFO = {"name": "bench-http-client", "version": "1.0.0"}
ECHO_TEXT = "hello, bridge"
ECHO = {"name": "echo", "arguments": {"text": ECHO_TEXT}}
READ_SIZE = 64 * 1024
WAIT = 30.0  # seconds without any answer before a run gives up


class LoadFailure(RuntimeError):
    """The front answered something else than the call's result, or nothing."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def message(self) -> Message:
        """The JSON-RPC response this answer carries, as JSON or as the SSE event that has it."""
        if not self.headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            return orjson.loads(self.body)  # type: ignore[no-any-return]
        for line in reversed(self.body.split(b"\n")):
            if line.startswith(b"data:"):
                message: Message = orjson.loads(line[5:])
                if "method" not in message:
                    return message
        raise LoadFailure(f"an event stream with no response in it: {self.body[:300]!r}")


class Framer:
    """Bytes from one connection in, whole HTTP/1.1 answers out (only what the fronts send)."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def next(self) -> Answer | None:
        buf = self.buffer
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = bytes(buf[:end]).split(b"\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if b"content-length" in headers:
            stop = start + int(headers[b"content-length"])
            if len(buf) < stop:
                return None
            body = bytes(buf[start:stop])
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            framed = _chunks(buf, start)
            if framed is None:
                return None
            body, stop = framed
        else:
            body, stop = b"", start
        del buf[:stop]
        return Answer(int(lines[0][9:12]), headers, body)


def _chunks(buf: bytearray, pos: int) -> tuple[bytes, int] | None:
    """The body of a chunked answer starting at `pos` and where it ends, if it is all here."""
    pieces = []
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        pos = eol + 2
        if size == 0:  # no trailers from these fronts: the blank line follows
            return (b"".join(pieces), pos + 2) if len(buf) >= pos + 2 else None
        if len(buf) < pos + size + 2:
            return None
        pieces.append(bytes(buf[pos:pos + size]))
        pos += size + 2


class Wire:
    """Pre-encoded requests of one client era to one front; only the id varies per call."""

    def __init__(self, port: int, era: str, session: str | None = None) -> None:
        self.era = era
        self.port = port
        self.session = session
        self._call = self.template("tools/call", ECHO)

    def template(self, method: str, params: Message) -> tuple[bytes, bytes, bytes]:
        """(head up to Content-Length's value, body before the id, body after it)."""
        params = dict(params)
        if self.era == "modern":  # the 2026-07-28 envelope rides every request
            params["_meta"] = {META + "protocolVersion": MODERN,
                               META + "clientCapabilities": {}, META + "clientInfo": CLIENT_INFO}
        head = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1:%d" % self.port,
                b"Content-Type: application/json",
                b"Accept: application/json, text/event-stream"]
        if self.era == "modern":  # streamable-http.mdx §Standard MCP Request Headers
            head += [b"MCP-Protocol-Version: " + MODERN.encode(),
                     b"Mcp-Method: " + method.encode()]
            if "name" in params:
                head.append(b"Mcp-Name: " + params["name"].encode())
        else:
            head.append(b"MCP-Protocol-Version: " + LEGACY.encode())
        if self.session is not None:
            head.append(b"Mcp-Session-Id: " + self.session.encode())
        tail = b',"method":' + orjson.dumps(method) + b',"params":' + orjson.dumps(params) + b"}"
        return b"\r\n".join(head) + b"\r\nContent-Length: ", b'{"jsonrpc":"2.0","id":', tail

    def call(self, id_: int) -> bytes:
        return self.encode(self._call, id_)

    @staticmethod
    def encode(template: tuple[bytes, bytes, bytes], id_: int | None) -> bytes:
        head, before, after = template
        # a notification (no id) has no id member at all
        body = b'{"jsonrpc":"2.0"' + after if id_ is None else before + str(id_).encode() + after
        return head + str(len(body)).encode() + b"\r\n\r\n" + body


def check(answer: Answer, id_: int, era: str) -> None:
    """The echo call's answer, whole: raises LoadFailure naming what is wrong."""
    if answer.status != 200:
        raise LoadFailure(f"call {id_}: HTTP {answer.status}: {answer.body[:300]!r}")
    message = answer.message()
    if message.get("id") != id_:
        raise LoadFailure(f"call {id_}: the answer names id {message.get('id')!r}: {message}")
    result = message.get("result") or {}
    try:
        text = result["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        raise LoadFailure(f"call {id_}: no text result: {message}") from None
    if text != ECHO_TEXT or (era == "modern" and result.get("resultType") != "complete"):
        raise LoadFailure(f"call {id_}: wrong result: {result}")


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def exchange(sock: socket.socket, request: bytes) -> Answer:
    """One request and its answer on a blocking socket (set-up calls, not measured)."""
    sock.sendall(request)
    framer = Framer()
    while (answer := framer.next()) is None:
        data = sock.recv(READ_SIZE)
        if not data:
            raise LoadFailure("the front closed the connection before answering")
        framer.buffer += data
    return answer


def open_session(port: int, era: str) -> Wire:
    """A client of `era`, set up: legacy initializes a session (its id on every later
    request); both list the tools first, as real clients do."""
    sock = connect(port)
    try:
        wire = Wire(port, era)
        if era == "legacy":
            init = wire.template("initialize", {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO})
            answer = exchange(sock, Wire.encode(init, 0))
            session = answer.headers.get(b"mcp-session-id")
            if answer.status != 200 or session is None:
                raise LoadFailure(f"initialize: HTTP {answer.status}, no session: "
                                  f"{answer.body[:300]!r}")
            wire = Wire(port, era, session.decode())
            done = wire.template("notifications/initialized", {})
            exchange(sock, Wire.encode(done, None))
        listed = exchange(sock, Wire.encode(wire.template("tools/list", {}), 1))
        if listed.status != 200 or "tools" not in (listed.message().get("result") or {}):
            raise LoadFailure(f"tools/list: HTTP {listed.status}: {listed.body[:300]!r}")
        return wire
    finally:
        sock.close()


@dataclass(slots=True)
class Caller:
    """One keep-alive connection with at most one call in flight."""

    sock: socket.socket
    framer: Framer = field(default_factory=Framer)
    id_: int = 0
    sent_at: float = 0.0


class Load:
    """Calls through one front over `window` connections, `window` in flight."""

    def __init__(self, wire: Wire, window: int) -> None:
        self.wire = wire
        self.callers = [Caller(connect(wire.port)) for _ in range(window)]
        self.next_id = 1000

    def run(self, total: int) -> tuple[list[float], float]:
        """Latency of every call (s) and calls per second, `total` calls."""
        selector = selectors.DefaultSelector()
        latencies: list[float] = []
        sent = 0
        started = time.perf_counter()
        for caller in self.callers[:total]:
            caller.sock.setblocking(False)
            selector.register(caller.sock, selectors.EVENT_READ, caller)
            self._send(caller)
            sent += 1
        try:
            while len(latencies) < total:
                ready = selector.select(WAIT)
                if not ready:
                    raise LoadFailure(f"no answer in {WAIT:g} s ({len(latencies)}/{total} done)")
                for key, _ in ready:
                    caller = key.data
                    data = caller.sock.recv(READ_SIZE)
                    if not data:
                        raise LoadFailure("the front closed a keep-alive connection")
                    caller.framer.buffer += data
                    answer = caller.framer.next()
                    if answer is None:
                        continue
                    latencies.append(time.perf_counter() - caller.sent_at)
                    check(answer, caller.id_, self.wire.era)
                    if sent < total:
                        self._send(caller)
                        sent += 1
        finally:
            selector.close()
            for caller in self.callers:
                caller.sock.setblocking(True)
        return latencies, total / (time.perf_counter() - started)

    def _send(self, caller: Caller) -> None:
        self.next_id += 1
        caller.id_ = self.next_id
        caller.sent_at = time.perf_counter()
        caller.sock.sendall(self.wire.call(caller.id_))  # a few hundred bytes: never blocks

    def close(self) -> None:
        for caller in self.callers:
            caller.sock.close()


class TreeRss:
    """The largest resident set the process `pid` and its descendants had together, sampled
    every `interval` seconds from /proc (children that come and go are caught while alive),
    and the largest of `pid` alone."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self.own_peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        self.peak_kib = max(self.peak_kib, sum(rss_kib(pid) for pid in tree(self.pid)))
        self.own_peak_kib = max(self.own_peak_kib, rss_kib(self.pid))


PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_KIB
    except (OSError, IndexError, ValueError):
        return 0  # gone meanwhile


def tree(pid: int) -> list[int]:
    """`pid` and every process below it, as /proc's children lists say now."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", "rb") as children:
                    todo += [int(child) for child in children.read().split()]
            except OSError:
                pass
    return found
