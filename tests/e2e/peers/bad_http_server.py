"""A modern (2026-07-28) Streamable HTTP endpoint that misbehaves on purpose, for the tests of
`mcp-rosetta --url` against bad upstreams.

Must not be used as a model of a server: it answers `server/discover`, `tools/list` and
`subscriptions/listen` correctly, then for `tools/call` does what the tool's name says:

  html      200 with an HTML page (a login portal, a proxy's error page)
  status500 HTTP 500 with a plain-text body
  auth      HTTP 401 with a WWW-Authenticate challenge
  drop      an event stream with one notification, then it ends (the body's end: no answer)
  cut       an event stream with one notification, then the connection is cut mid-body (a
            chunked body never finished: a transport error, as when the server dies)
  endless   an event stream of notifications every 50 ms that never answers
  silent    nothing at all (the connection stays open, no headers)
  redirect  HTTP 307 to another origin
  moved     HTTP 307 to this origin's /moved, which answers like `echo`
  garbage   an event stream whose event is not JSON, then the stream ends
  echo      a correct answer (the session goes on after every failure)
  whoami    a correct answer: the Authorization header the request carried
  slow      a correct answer after 5 ms (counted: how many are under way at once)
  peak      a correct answer: the most `slow` calls ever under way at once
  stall     200 JSON with a Content-Length, half the body, then nothing more
  die       the server exits at once, the connection dropped (a crash)
  open      a correct answer: how many `endless` and `silent` calls still hold their
            connection (structuredContent {"open": N}): what a cancel must leave is 0
  ask       an event stream with a request to the client (elicitation/create, which this
            revision sends only inside an InputRequiredResult), then a correct answer

Runs under the test's interpreter (the standard library only). With CERT and KEY (PEM files)
it speaks HTTPS.
Usage: python bad_http_server.py PORT [CERT KEY]
"""

from __future__ import annotations

import json
import os
import select
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODERN = "2026-07-28"
DISCOVER = {"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": True}},
            "resultType": "complete",
            "ttlMs": 0, "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bad-http-server",
                                                             "version": "1.0.0"}}}
TOOLS = ["html", "status500", "auth", "drop", "cut", "endless", "silent", "redirect", "garbage",
         "echo", "whoami", "moved", "open", "slow", "peak", "stall", "die", "ask"]
SLOW = 0.005
under_way = peak = 0
counting = threading.Lock()
POLL = 0.05
"""Seconds between the checks of an `endless` or `silent` call that the client left."""


class Holding:
    """How many calls still hold their connection open without answering."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1


HOLDING = Holding()


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"misbehaves: {name}",
            "inputSchema": {"type": "object", "properties": {}}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"bad_http_server: {format % args}\n")

    def do_GET(self) -> None:
        self.plain(405, b"")

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            self.plain(202, b"")
        elif method == "server/discover":
            self.answer(request_id, DISCOVER)
        elif method == "tools/list":
            self.answer(request_id, {"tools": [tool(t) for t in TOOLS], "resultType": "complete",
                                     "ttlMs": 0, "cacheScope": "private"})
        elif method == "tools/call":
            getattr(self, f"call_{message['params']['name']}")(request_id)
        elif method == "subscriptions/listen":
            self.stream([acknowledged(request_id, message["params"].get("notifications"))],
                        close=False, counted=False, beat=": still listening")
        else:
            self.json(404, {"jsonrpc": "2.0", "id": request_id,
                            "error": {"code": -32601, "message": f"no {method}"}})

    # tools/call behaviours -----------------------------------------------------------------

    def call_echo(self, request_id: object) -> None:
        self.answer(request_id, {"content": [{"type": "text", "text": "ok"}],
                                 "resultType": "complete"})

    def call_moved(self, request_id: object) -> None:
        if self.path == "/moved":
            self.call_echo(request_id)
            return
        self.send_response(307)
        self.send_header("Location", "/moved")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def call_open(self, request_id: object) -> None:
        self.answer(request_id, {"content": [{"type": "text", "text": str(HOLDING.count)}],
                                 "structuredContent": {"open": HOLDING.count},
                                 "resultType": "complete"})

    def call_ask(self, request_id: object) -> None:
        question = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                    "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
        done = {"jsonrpc": "2.0", "id": request_id,
                "result": {"content": [{"type": "text", "text": "asked"}],
                           "resultType": "complete"}}
        self.stream([json.dumps(question), json.dumps(done)], close=True, counted=False)

    def call_whoami(self, request_id: object) -> None:
        told = self.headers.get("Authorization", "none")
        self.answer(request_id, {"content": [{"type": "text", "text": told}],
                                 "resultType": "complete"})

    def call_slow(self, request_id: object) -> None:
        global under_way, peak
        with counting:
            under_way += 1
            peak = max(peak, under_way)
        time.sleep(SLOW)
        with counting:
            under_way -= 1
        self.call_echo(request_id)

    def call_peak(self, request_id: object) -> None:
        self.answer(request_id, {"content": [{"type": "text", "text": str(peak)}],
                                 "resultType": "complete"})

    def call_stall(self, request_id: object) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        time.sleep(3600)

    def call_die(self, request_id: object) -> None:
        os._exit(1)

    def call_html(self, request_id: object) -> None:
        self.plain(200, b"<html><body>Please log in</body></html>", "text/html")

    def call_status500(self, request_id: object) -> None:
        self.plain(500, b"Internal Server Error")

    def call_auth(self, request_id: object) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="bad", error="invalid_token"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def call_redirect(self, request_id: object) -> None:
        self.send_response(307)
        self.send_header("Location", "http://elsewhere.invalid/mcp")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def call_drop(self, request_id: object) -> None:
        self.stream([progress()], close=True)

    def call_cut(self, request_id: object) -> None:
        self.cut_stream(f"data: {progress()}\n\n")

    def call_garbage(self, request_id: object) -> None:
        self.stream(["this is not json"], close=True)

    def call_endless(self, request_id: object) -> None:
        self.stream([], close=False)

    def call_silent(self, request_id: object) -> None:
        with HOLDING.held():
            while not self.client_left():
                time.sleep(POLL)
        self.close_connection = True

    def client_left(self) -> bool:
        """Whether the client closed the connection (it sends nothing more on it)."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable) and not self.connection.recv(1, 2)  # MSG_PEEK

    # Writing -------------------------------------------------------------------------------

    def answer(self, request_id: object, result: dict[str, Any]) -> None:
        self.json(200, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def json(self, status: int, body: dict[str, Any]) -> None:
        self.plain(status, json.dumps(body).encode(), "application/json")

    def plain(self, status: int, body: bytes, kind: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stream(self, events: list[str], *, close: bool, counted: bool = True,
               beat: str = "") -> None:
        """An event stream with `events`; then closed (no answer), or `beat` (default: a
        notification) written forever (`counted`: by HOLDING, as a call that holds its
        connection)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for data in events:
            self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()
        if close:
            self.close_connection = True
            return
        with HOLDING.held() if counted else nullcontext():
            try:
                while True:
                    time.sleep(POLL)
                    self.wfile.write(f"{beat or 'data: ' + progress()}\n\n".encode())
                    self.wfile.flush()
            except OSError:  # the client closed the stream
                self.close_connection = True

    def cut_stream(self, events: str) -> None:
        """A chunked event stream: one chunk with `events`, then the connection closed without
        the last chunk (the client reads a body cut short, not one that ended)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        data = events.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        time.sleep(POLL)  # the client has read the event before the connection goes
        self.close_connection = True


def acknowledged(listen_id: object, honored: object) -> str:
    """What a listen stream begins with: the filter it honours (all that was asked)."""
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                       "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id},
                                  "notifications": honored}})


def progress() -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": "still here"}})


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    if len(sys.argv) == 4:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()
