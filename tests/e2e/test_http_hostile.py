"""The HTTP front under hostile input: `mcp-rosetta serve --listen http://…` as a process, in
front of a real stdio server (peers/flood_server.py), reached over real sockets on loopback.

Must not fake the front or the server: each case is what a hostile or broken client can do on
the wire (raw sockets where http.client would refuse to say it), each checks that a
well-behaved client is served meanwhile and afterwards, and each ends by checking that
nothing leaked: the front's fds back to where they were, its one server child the same
process, the server told of every request the front gave up on.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import conformance_suite as cs
import pytest

WAIT = 30.0
FLOOD_SERVER = str(Path(__file__).resolve().parent / "peers" / "flood_server.py")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}
OPEN_FILES = 4096
"""The test's own open-file limit: 1025 connections, and the rest."""


def raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def open_files(soft: int, hard: int | None = None) -> Callable[[], None]:
    """A preexec_fn: the front starts at these limits (the hard one kept when None)."""
    def limit() -> None:
        kept = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, kept if hard is None else hard))
    return limit


AS_SYSTEMD_STARTS_IT = open_files(1024)


def until(predicate: Callable[[], object], what: str, wait: float = WAIT) -> None:
    deadline = time.monotonic() + wait
    while not predicate():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def tool_call(tool: str, arguments: dict[str, Any], rid: object = 1,
              token: object = None) -> tuple[bytes, dict[str, str]]:
    """A 2026-07-28 tools/call: its body and headers."""
    meta = META if token is None else {**META, "progressToken": token}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}
    return json.dumps(body).encode(), {
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": tool}


def raw_request(port: int, body: bytes, headers: dict[str, str]) -> bytes:
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: {len(body)}\r\n"
            f"{head}\r\n").encode() + body


class Front:
    """`mcp-rosetta serve --listen http://127.0.0.1:PORT/mcp` before flood_server.py."""

    def __init__(self, tmp_path: Path, limits: Callable[[], None] = AS_SYSTEMD_STARTS_IT,
                 **settings: object) -> None:
        """`limits`: the front's open-file limits as it starts (by default systemd's and
        most shells' soft 1024); `settings`: keys of its config file."""
        self.port = cs.free_port()
        self.record = tmp_path / "server.txt"
        self.record.touch()
        self.log_file = tmp_path / "front.log"
        config = tmp_path / "front.toml"
        config.write_text('log_format = "json"\nshutdown_grace = 1.0\nkill_grace = 1.0\n' +
                          "".join(f"{key} = {json.dumps(value)}\n"
                                  for key, value in settings.items()))
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--config", str(config), "--listen",
                 f"http://127.0.0.1:{self.port}/mcp", "--", sys.executable, FLOOD_SERVER,
                 "--record", str(self.record)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                start_new_session=True, preexec_fn=limits)
        self.until(lambda: self.events("http.listening"), "http.listening")
        assert self.echo("warm") == "warm"
        self.server = self.children()
        assert len(self.server) == 1, self.server
        self.fds = self.settled_fds()

    # What the front's process shows -----------------------------------------------------------

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        lines = self.log_file.read_bytes().splitlines(keepends=True)
        entries = [json.loads(line) for line in lines if line.endswith(b"\n")]
        return [e for e in entries if name is None or e["event"] == name]

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def settled_fds(self) -> int:
        """The fd count once the warm-up's connection is surely closed at the front too."""
        seen = []
        for _ in range(10):
            seen.append(self.fd_count())
            time.sleep(0.05)
        return min(seen)

    def children(self) -> list[int]:
        found: list[int] = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            found += [int(pid) for pid in (task / "children").read_text().split()]
        return sorted(found)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def cancelled(self) -> list[str]:
        return [line.split()[1] for line in self.record.read_text().splitlines()
                if line.startswith("cancelled ")]

    def until(self, predicate: Callable[[], object], what: str, wait: float = WAIT) -> None:
        deadline = time.monotonic() + wait
        while not predicate():
            assert self.process.poll() is None, f"the front exited: {self.log_file.read_text()}"
            assert time.monotonic() < deadline, f"never: {what}\n{self.log_file.read_text()}"
            time.sleep(0.05)

    def nothing_leaked(self) -> None:
        """fds back to where they were once the connections are gone, the same one child,
        and a well-behaved client still served."""
        self.until(lambda: len(self.events("http.session_ended")) ==
                   len(self.events("http.session_started")), "no legacy session left")
        self.until(lambda: self.fd_count() <= self.fds,
                   f"the front's fds back to {self.fds} (now {self.fd_count()})")
        assert self.children() == self.server
        assert self.echo("after") == "after"
        assert self.process.poll() is None

    # A well-behaved client -------------------------------------------------------------------

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)

    def echo(self, text: str) -> str:
        conn = self.connect()
        try:
            body, headers = tool_call("echo", {"text": text})
            conn.request("POST", "/mcp", body, headers)
            response = conn.getresponse()
            answer = json.loads(response.read())
            assert response.status == 200, answer
            assert answer["id"] == 1, answer
            text_out: str = answer["result"]["content"][0]["text"]
            return text_out
        finally:
            conn.close()

    def raw(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Front]]:
    started: list[Front] = []

    def starting(**settings: Any) -> Front:
        front = Front(tmp_path, **settings)
        started.append(front)
        return front

    yield starting
    for front in started:
        front.stop()
        # The server child went with it: nothing is left behind.
        for pid in front.server:
            until(lambda pid=pid: not Path(f"/proc/{pid}").exists()  # type: ignore[misc]
                  or "zombie" in Path(f"/proc/{pid}/status").read_text(), f"{pid} gone")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    """One front for the cases that each leave it as they found it (malformed requests)."""
    front = Front(tmp_path_factory.mktemp("shared"))
    yield front
    front.stop()


def read_answer(file: Any) -> tuple[int, bytes]:
    """One answer with a Content-Length off a connection's buffered reader: status, body."""
    status = int(file.readline().split()[1])
    length = 0
    while (line := file.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, file.read(length)


def answer_of(sock: socket.socket) -> tuple[int, bytes]:
    """The status and whatever else arrived before the front closed the connection."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    status_line = data.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 "), data[:200]
    return int(status_line.split()[1]), data


# Malformed HTTP --------------------------------------------------------------------------------

MALFORMED = {
    "garbage": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n", 400),
    "bad chunking": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\ncontent-type: application/json\r\n"
                     b"transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400),
    "a request line of 100 KiB": (b"GET /" + b"a" * 100 * 1024 + b" HTTP/1.1\r\n"
                                  b"host: HOST\r\n\r\n", 431),
    "headers over 16 KiB": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\n" +
                            b"".join(b"x-filler-%d: %s\r\n" % (n, b"v" * 100)
                                     for n in range(200)) + b"\r\n", 431),
    "no host": (b"POST /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}", 400),
    "a length and chunks (smuggling)": (
        b"POST /mcp HTTP/1.1\r\nhost: HOST\r\ncontent-length: 5\r\n"
        b"transfer-encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),
    "two lengths": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\ncontent-length: 2\r\n"
                    b"content-length: 3\r\n\r\n{} ", 400),
    "a length that is no number": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\n"
                                   b"content-length: -1\r\n\r\n", 400),
    "gzip transfer coding": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\n"
                             b"transfer-encoding: gzip\r\n\r\n", 501),
    "a NUL in a header": (b"POST /mcp HTTP/1.1\r\nhost: HOST\r\nx: a\x00b\r\n\r\n", 400),
    "HTTP/2 prior knowledge": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_http_is_refused_with_its_status_and_the_front_serves_on(
        shared: Front, case: str) -> None:
    front = shared
    data, status = MALFORMED[case]
    before = len(front.events("http.rejected"))
    with front.raw() as sock:
        sock.sendall(data.replace(b"HOST", f"127.0.0.1:{front.port}".encode()))
        assert front.echo("meanwhile") == "meanwhile"
        got, data = answer_of(sock)
    assert got == status, data
    # A JSON-RPC error naming the cause and what to send instead; then the connection closed.
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    message = json.loads(body)["error"]["message"]
    assert message.startswith(HTTPStatus(status).phrase) and "; send " in message, message
    rejected = front.events("http.rejected")[before:]
    assert [e["status"] for e in rejected] == [status], rejected
    front.nothing_leaked()


def test_a_burst_of_pipelined_requests_is_answered_in_order(shared: Front) -> None:
    front = shared
    burst = b"".join(raw_request(front.port, *tool_call("echo", {"text": f"n{n}"}, rid=n))
                     for n in range(200))
    with front.raw() as sock, sock.makefile("rb") as file:
        sock.sendall(burst)
        answers = [json.loads(read_answer(file)[1]) for _ in range(200)]
    assert [a["id"] for a in answers] == list(range(200))
    assert [a["result"]["content"][0]["text"] for a in answers] == [f"n{n}" for n in range(200)]
    front.nothing_leaked()


def test_a_client_expecting_100_continue_gets_it_then_its_answer(shared: Front) -> None:
    front = shared
    body, headers = tool_call("echo", {"text": "continued"})
    with front.raw() as sock:
        sock.sendall(raw_request(front.port, b"", {**headers, "expect": "100-continue"})
                     .replace(b"content-length: 0", f"content-length: {len(body)}".encode()))
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 ")
        sock.sendall(body)
        with sock.makefile("rb") as file:
            status, answer = read_answer(file)
    assert status == 200 and json.loads(answer)["result"]["content"][0]["text"] == "continued"
    front.nothing_leaked()


# A 1 GiB body --------------------------------------------------------------------------------


GIB = 1024 ** 3
MIB = 1024 * 1024


def announced(sock: socket.socket, port: int) -> Callable[[], bytes]:
    """A head with `content-length: 1 GiB`; then spaces, a MiB at a time."""
    _, headers = tool_call("echo", {"text": "big"})
    sock.sendall(raw_request(port, b"", headers).replace(b"content-length: 0",
                                                         f"content-length: {GIB}".encode()))
    return lambda: b" " * MIB


def chunked(sock: socket.socket, port: int) -> Callable[[], bytes]:
    """A chunked head (no length said); then chunks of a MiB each."""
    _, headers = tool_call("echo", {"text": "big"})
    sock.sendall(raw_request(port, b"", {**headers, "transfer-encoding": "chunked"}).replace(
        b"content-length: 0\r\n", b""))
    return lambda: f"{MIB:x}\r\n".encode() + b" " * MIB + b"\r\n"


@pytest.mark.parametrize(("start_body", "limit"), [(announced, None), (chunked, "4MiB")],
                         ids=["announced", "chunked"])
def test_a_1_gib_body_is_refused_413_and_never_buffered(
        start: Callable[..., Front], start_body: Callable[..., Callable[[], bytes]],
        limit: str | None) -> None:
    """Announced: 413 from the Content-Length, before a byte of it is read. Chunked: 413 once
    past max_message_bytes, what was read so far dropped."""
    front = start() if limit is None else start(max_message_bytes=limit)
    rss_before = front.rss_kib()
    sent = 0
    with front.raw() as sock:
        piece = start_body(sock, front.port)
        stop = threading.Event()

        def stream() -> None:
            nonlocal sent
            with contextlib.suppress(OSError):
                while sent < GIB and not stop.is_set():
                    sock.sendall(piece())
                    sent += MIB

        sender = threading.Thread(target=stream, daemon=True)
        sender.start()
        try:
            assert front.echo("meanwhile") == "meanwhile"
            status, data = answer_of(sock)
        finally:
            stop.set()
            sender.join(WAIT)
    assert status == 413, data
    assert b"connection: close" in data.lower()
    assert sent < GIB // 4, f"the front read {sent} bytes of the body"
    assert front.rss_kib() - rss_before < 16 * 1024, "the front buffered the body"
    assert [e["status"] for e in front.events("http.rejected")] == [413]
    front.nothing_leaked()


def test_large_bodies_past_what_the_front_holds_at_once_are_503_until_room_is_made(
        start: Callable[..., Front]) -> None:
    front = start(max_message_bytes="1MiB")  # so 4 MiB of bodies held at once
    body, headers = tool_call("echo", {"text": "z" * 1_000_000})
    request = raw_request(front.port, body, headers)
    started = [front.raw() for _ in range(4)]
    for sock in started:  # all but the last byte: each body held, none complete
        sock.sendall(request[:-1])
    with front.raw() as fifth:
        fifth.sendall(request[:-1])
        status, data = answer_of(fifth)
    assert status == 503, data
    head, _, error = data.partition(b"\r\n\r\n")
    assert b"retry-after: 1" in head.lower()
    assert "request bodies" in json.loads(error)["error"]["message"]
    assert front.echo("small") == "small"  # a small body still fits beside them
    for sock in started:
        sock.sendall(request[-1:])
        with sock, sock.makefile("rb") as file:
            status, answer = read_answer(file)
        assert status == 200 and len(answer) > 1_000_000
    with front.raw() as again, again.makefile("rb") as file:
        again.sendall(request)
        assert read_answer(file)[0] == 200
    front.nothing_leaked()


# A client sending one byte a second ----------------------------------------------------------


def test_a_client_sending_one_byte_a_second_is_closed_at_the_idle_timeout(
        start: Callable[..., Front]) -> None:
    front = start(connection_idle=2.5)
    body, headers = tool_call("echo", {"text": "slow"})
    request = raw_request(front.port, body, headers)
    with front.raw() as sock:
        began = time.monotonic()
        closed = False
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            assert front.echo("meanwhile") == "meanwhile"
            sock.settimeout(1.0)
            try:
                if sock.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
        took = time.monotonic() - began
    assert closed, "the front served a request sent at one byte a second"
    assert 2.0 < took < 6.0, took
    assert [e["idle_s"] for e in front.events("http.idle_closed")] == [2.5]
    front.nothing_leaked()


# 1000 idle connections -----------------------------------------------------------------------


def test_1024_idle_connections_are_held_and_the_1025th_gets_503(
        start: Callable[..., Front]) -> None:
    raise_open_files()
    front = start(connection_idle=60)
    held: list[socket.socket] = []
    try:
        for _ in range(1024):
            held.append(front.raw())
        front.until(lambda: front.fd_count() >= front.fds + 1024, "1024 connections accepted")
        with front.raw() as sock:
            body, headers = tool_call("echo", {"text": "one too many"})
            sock.sendall(raw_request(front.port, body, headers))
            status, data = answer_of(sock)
        assert status == 503, data
        error = json.loads(data.partition(b"\r\n\r\n")[2])["error"]
        assert error["data"] == {"max_connections": 1024}, error
        refused = front.events("http.refused")
        assert len(refused) == 1 and "max_connections (1024)" in refused[0]["reason"]
        for sock in held[:10]:
            sock.close()
        front.until(lambda: front.fd_count() <= front.fds + 1014, "10 connections closed")
        assert front.echo("while 1014 idle") == "while 1014 idle"
    finally:
        for sock in held:
            sock.close()
    front.nothing_leaked()
    # It started at a soft limit of 1024 and raised it itself: room for every connection.
    assert not front.events("http.open_files_low")


def test_out_of_fds_the_front_waits_for_one_and_serves_on(start: Callable[..., Front]) -> None:
    raise_open_files()
    front = start(limits=open_files(64, 64))
    low = front.events("http.open_files_low")
    assert len(low) == 1 and low[0]["limit"] == 64, low
    held = [front.raw() for _ in range(120)]  # past the backlog's accepted ones too
    try:
        front.until(lambda: front.events("http.accept_waiting"), "the front out of fds")
    finally:
        for sock in held:
            sock.close()
    waiting = front.events("http.accept_waiting")
    assert len(waiting) == 1 and "LimitNOFILE" in waiting[0]["fix"], waiting
    front.nothing_leaked()
    assert len(front.events("http.accept_waiting")) == 1  # said once, not once per try


# A client that disconnects mid-stream ------------------------------------------------------


def test_a_client_leaving_mid_stream_cancels_its_call_at_the_server(
        start: Callable[..., Front]) -> None:
    front = start()
    conn = front.connect()
    body, headers = tool_call("flood", {"count": 3, "size": 10, "hang": True}, rid="mine",
                              token="t")
    conn.request("POST", "/mcp", body, headers)
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"
    first = b""
    while b"\n\n" not in first:
        first += response.read1(65536)
    assert b'"progressToken":"t"' in first, first
    assert front.echo("meanwhile") == "meanwhile"
    conn.close()
    front.until(lambda: front.cancelled(), "the server told of the cancellation")
    assert len(front.cancelled()) == 1
    requests = [e for e in front.events("http.request") if e.get("cancelled")]
    assert len(requests) == 1 and requests[0]["stream"] is True
    front.nothing_leaked()


# A client that stops reading its stream (back-pressure) -------------------------------------


def test_a_client_that_stops_reading_is_given_up_on_past_the_backlog_bound(
        start: Callable[..., Front]) -> None:
    bound = 256 * 1024
    front = start(stream_backlog=bound)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.settimeout(WAIT)
    sock.connect(("127.0.0.1", front.port))
    with sock:
        body, headers = tool_call("flood", {"count": 20_000, "size": 1000}, token=7)
        sock.sendall(raw_request(front.port, body, headers))
        # It reads nothing; everyone else is served meanwhile.
        front.until(lambda: front.events("http.client_dropped"), "the front gave up on it")
        assert front.echo("meanwhile") == "meanwhile"
        dropped = front.events("http.client_dropped")
        assert len(dropped) == 1, dropped
        assert dropped[0]["bound"] == bound and dropped[0]["request"] == 1
        assert dropped[0]["reason"] == "the client stopped reading"
        assert dropped[0]["client"] == f"127.0.0.1:{sock.getsockname()[1]}"
        # Its connection is closed: what it reads now ends, well short of the 20 MB.
        received = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += len(chunk)
        assert received < 20_000 * 1000 // 2, received
    front.until(lambda: front.cancelled(), "the server told of the cancellation")
    assert len(front.cancelled()) == 1
    request = [e for e in front.events("http.request") if e.get("cancelled")]
    assert len(request) == 1 and "stopped reading" in request[0]["reason"]
    front.nothing_leaked()


def test_a_client_that_reads_gets_every_message_of_a_flood_in_order(shared: Front) -> None:
    front = shared
    conn = front.connect()
    body, headers = tool_call("flood", {"count": 3000, "size": 1000}, rid="f", token="mine")
    conn.request("POST", "/mcp", body, headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    events = [json.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: ")]
    assert [e["params"]["progress"] for e in events[:-1]] == list(range(1, 3001))
    assert {e["params"]["progressToken"] for e in events[:-1]} == {"mine"}
    assert events[-1]["id"] == "f" and events[-1]["result"]["content"][0]["text"] == \
        "flooded 3000"
    assert data.count(b"\n\n") == 3001  # every event framed on its own
    front.nothing_leaked()


def test_a_client_that_takes_nothing_of_its_answer_is_given_up_on_at_the_drain_timeout(
        start: Callable[..., Front]) -> None:
    front = start(drain_timeout=1.0)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.settimeout(WAIT)
    sock.connect(("127.0.0.1", front.port))
    with sock:
        text = "y" * (16 * MIB)  # one JSON answer far longer than the sockets' buffers
        body, headers = tool_call("echo", {"text": text})
        sock.sendall(raw_request(front.port, body, headers))
        front.until(lambda: front.events("http.client_dropped"), "the front gave up on it")
        assert front.echo("meanwhile") == "meanwhile"
    dropped = front.events("http.client_dropped")
    assert len(dropped) == 1 and dropped[0]["stalled_s"] == 1.0, dropped
    assert dropped[0]["reason"] == "the client stopped reading"
    request = [e for e in front.events("http.request") if "stopped reading" in
               e.get("reason", "")]
    assert len(request) == 1 and "took nothing for 1.0 s" in request[0]["reason"]
    assert front.cancelled() == []  # answered at the server already: nothing to cancel
    front.nothing_leaked()


# A wrong Origin ------------------------------------------------------------------------------


def test_a_wrong_origin_is_refused_403(shared: Front) -> None:
    front = shared
    conn = front.connect()
    body, headers = tool_call("echo", {"text": "rebound"})
    conn.request("POST", "/mcp", body, {**headers, "origin": "http://evil.example:8080"})
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    assert response.status == 403
    assert "evil.example" in answer["error"]["message"], answer
    assert front.echo("after") == "after"
    front.nothing_leaked()


# All of it at once ---------------------------------------------------------------------------


def test_a_storm_of_every_hostile_client_at_once_leaves_others_served_and_nothing_behind(
        start: Callable[..., Front]) -> None:
    raise_open_files()
    front = start(connection_idle=3.0, stream_backlog=256 * 1024, drain_timeout=1.0)
    port = front.port
    floods, leavers = 4, 8
    stop = threading.Event()
    idle = [front.raw() for _ in range(200)]
    lorises = [front.raw() for _ in range(20)]
    loris_bytes = raw_request(port, *tool_call("echo", {"text": "loris"}))

    def loris() -> None:  # every loris sends one byte a second until the front closes it
        for byte in loris_bytes:
            if stop.wait(1.0):
                return
            for sock in lorises:
                with contextlib.suppress(OSError):
                    sock.sendall(bytes([byte]))

    def flood() -> None:  # asks for 5 MB of progress and reads none of it
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.connect(("127.0.0.1", port))
        sock.sendall(raw_request(port, *tool_call("flood", {"count": 5000, "size": 1000},
                                                  token=1)))
        stop.wait(WAIT)
        sock.close()

    def leave() -> None:  # starts a stream, then goes
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(raw_request(port, *tool_call(
                "flood", {"count": 2, "size": 10, "hang": True}, token=2)))
            sock.recv(1)

    def garbage() -> None:
        for data, _ in MALFORMED.values():
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", port)) as sock:
                sock.sendall(data.replace(b"HOST", f"127.0.0.1:{port}".encode()))
                while sock.recv(65536):
                    pass

    hostile = [threading.Thread(target=loris), threading.Thread(target=garbage),
               *(threading.Thread(target=flood) for _ in range(floods)),
               *(threading.Thread(target=leave) for _ in range(leavers))]
    for thread in hostile:
        thread.start()
    slowest = 0.0
    try:
        for n in range(40):  # a well-behaved client throughout
            began = time.monotonic()
            assert front.echo(f"good {n}") == f"good {n}"
            slowest = max(slowest, time.monotonic() - began)
        front.until(lambda: len(front.events("http.client_dropped")) == floods,
                    "every flood given up on")
        front.until(lambda: len(front.cancelled()) == floods + leavers,
                    "the server told of every cancellation")
        front.until(lambda: len(front.events("http.idle_closed")) >= 220,
                    "the idle connections and the lorises closed at the idle timeout")
    finally:
        stop.set()
        for thread in hostile:
            thread.join(WAIT)
        for sock in idle + lorises:
            sock.close()
    assert slowest < 10.0, slowest
    assert len(front.events("http.rejected")) == len(MALFORMED)
    front.nothing_leaked()


# A stale or foreign Mcp-Session-Id (legacy sessions: 2025-11-25 transports.mdx) ----------

LEGACY = "2025-11-25"


def legacy_post(front: Front, message: dict[str, Any], session: str | None = None,
                method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-protocol-version": LEGACY}
    if session is not None:
        headers["mcp-session-id"] = session
    conn = front.connect()
    try:
        conn.request(method, "/mcp", json.dumps(message) if method == "POST" else None,
                     headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, \
            response.read()
    finally:
        conn.close()


def open_session(front: Front) -> str:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}}
    status, headers, body = legacy_post(front, init)
    assert status == 200 and b'"serverInfo"' in body, body
    session = headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert legacy_post(front, done, session)[0] == 202
    return session


LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def no_session_left(front: Front) -> None:
    front.until(lambda: front.children() == front.server, "only the shared server left")


@pytest.mark.parametrize("foreign", [
    "never-issued-by-this-front", "x" * 4096, "a b\tc", "0" * 43], ids=[
    "unknown", "4 KiB long", "not visible ASCII", "the shape of ours"])
def test_a_foreign_session_id_is_refused_and_opens_nothing(shared: Front,
                                                           foreign: str) -> None:
    front = shared
    for method in ("POST", "GET", "DELETE"):
        status, _, body = legacy_post(front, LIST, foreign, method)
        assert status == 404, (method, status, body)
        assert "send initialize" in json.loads(body)["error"]["message"]
    assert front.echo("meanwhile") == "meanwhile"
    no_session_left(front)
    front.nothing_leaked()


def test_a_stale_session_id_is_404_once_its_session_ended(shared: Front) -> None:
    front = shared
    session = open_session(front)
    status, _, body = legacy_post(front, LIST, session)
    assert status == 200 and b'"flood"' in body, body
    assert len(front.children()) == 2  # its own server, beside the shared one
    assert legacy_post(front, LIST, session, "DELETE")[0] == 204
    for method in ("POST", "GET", "DELETE"):
        status, _, body = legacy_post(front, LIST, session, method)
        assert status == 404, (method, status, body)
    assert front.echo("after") == "after"
    no_session_left(front)
    assert session not in front.log_file.read_text()  # the log names a session by number
    front.nothing_leaked()


def test_a_legacy_client_that_stops_reading_its_post_stream_is_given_up_on_too(
        start: Callable[..., Front]) -> None:
    front = start(stream_backlog=256 * 1024)
    session = open_session(front)
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "flood", "arguments": {"count": 20_000, "size": 1000},
        "_meta": {"progressToken": "p"}}}
    body = json.dumps(call).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.settimeout(WAIT)
    sock.connect(("127.0.0.1", front.port))
    with sock:
        sock.sendall(raw_request(front.port, body, {
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY, "mcp-session-id": session}))
        front.until(lambda: front.events("http.client_dropped"), "the front gave up on it")
        assert front.echo("meanwhile") == "meanwhile"
    dropped = front.events("http.client_dropped")
    assert len(dropped) == 1 and dropped[0]["session"] == 1 and dropped[0]["request"] == 9
    assert dropped[0]["reason"] == "the client stopped reading"
    assert legacy_post(front, LIST, session, "DELETE")[0] == 204  # the session itself lives on
    no_session_left(front)
    front.nothing_leaked()
