"""A legacy (2025-11-25) Streamable HTTP endpoint that misbehaves on purpose: bad_http_server.py's
behaviours in a legacy session, for the tests of `mcp-rosetta --url` against bad upstreams.

Must not be used as a model of a server. It refuses `server/discover` with HTTP 400 (as a
legacy endpoint does), opens a session on `initialize` (`Mcp-Session-Id`), answers 404 to a
request naming a session it does not know, and serves the session's GET stream (chunked: a
priming event with an id, then a comment every 50 ms, until the session ends). For
`tools/call` it does what the tool's name says: every behaviour of bad_http_server.py, and

  expire    forget every session and answer 404, as a server that restarted or expired the
            session mid-session: the next requests need a new session
  expire_quietly  forget every session (their GET streams end) and answer: the bridge learns
            of it on its GET stream's 404 before the next request
  cut       an event stream whose event has an id (and a retry of 0), then the connection cut
            mid-body; a GET with that id as `Last-Event-ID` replays the rest of the stream,
            the call's answer (transports.mdx §Resumability and Redelivery)
  cut_listen  cut the session's GET streams mid-body (after their priming event's id); a GET
            with that id as `Last-Event-ID` is counted and served a new stream
  sessions  a correct answer: how many sessions were opened so far, how many cut streams
            (request streams, GET streams) were resumed, and how many GET streams the
            caller's session has open

Runs under the test's interpreter (the standard library only).
Usage: python bad_legacy_http_server.py PORT
"""

from __future__ import annotations

import collections
import itertools
import json
import sys
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from typing import Any

from bad_http_server import POLL, TOOLS, Handler, progress, tool

LEGACY = "2025-11-25"
INITIALIZED = {"protocolVersion": LEGACY, "capabilities": {"tools": {"listChanged": True}},
               "serverInfo": {"name": "bad-legacy-http-server", "version": "1.0.0"}}
LEGACY_TOOLS = [*TOOLS, "expire", "expire_quietly", "cut_listen", "sessions"]
CUT_PREFIX = "cut-"
LISTEN_PREFIX = "listen-"


class Sessions:
    """The live sessions, the streams that were cut (by event id: the request they answer),
    and counts the `sessions` tool reports."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.live: set[str] = set()
        self.cut: dict[str, object] = {}
        self.opened = 0
        self.resumed = 0
        self.listens_resumed = 0
        self.listens_cut = 0
        """Bumped by `cut_listen`: each GET stream cuts itself when it sees it change."""
        self.listening: collections.Counter[str] = collections.Counter()
        """GET streams open, by session (counted from their request's arrival)."""
        self._ids = itertools.count(1)

    def open(self) -> str:
        with self._lock:
            session = uuid.uuid4().hex
            self.live.add(session)
            self.opened += 1
            return session

    def cut_stream(self, request_id: object) -> str:
        with self._lock:
            event_id = f"{CUT_PREFIX}{next(self._ids)}"
            self.cut[event_id] = request_id
            return event_id

    def resume(self, event_id: str) -> object:
        with self._lock:
            self.resumed += 1
            return self.cut.pop(event_id, None)

    def listen_id(self, resumed_from: str) -> str:
        with self._lock:
            if resumed_from.startswith(LISTEN_PREFIX):
                self.listens_resumed += 1
            return f"{LISTEN_PREFIX}{next(self._ids)}"


SESSIONS = Sessions()


class LegacyHandler(Handler):
    def do_GET(self) -> None:
        if not self.in_session():
            return
        event_id = self.headers.get("Last-Event-ID", "")
        if not event_id.startswith(CUT_PREFIX):
            self.listen(SESSIONS.listen_id(event_id))
            return
        answer = {"jsonrpc": "2.0", "id": SESSIONS.resume(event_id),
                  "result": {"content": [{"type": "text", "text": "resumed"}]}}
        self.stream([json.dumps(answer)], close=True)

    def listen(self, event_id: str) -> None:
        """The session's GET stream, counted in `SESSIONS.listening` while it lasts."""
        session = self.headers.get("Mcp-Session-Id", "")
        SESSIONS.listening[session] += 1
        try:
            self.listen_stream(session, event_id)
        finally:
            SESSIONS.listening[session] -= 1
        self.close_connection = True

    def listen_stream(self, session: str, event_id: str) -> None:
        """Chunked: it ends (the last chunk) with the session, or is cut (no last chunk) by
        `cut_listen`."""
        cuts = SESSIONS.listens_cut
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.chunk(f"id: {event_id}\ndata:\n\n")
            while session in SESSIONS.live and SESSIONS.listens_cut == cuts:
                time.sleep(POLL)
                self.chunk(": still listening\n\n")
            if SESSIONS.listens_cut == cuts:
                self.wfile.write(b"0\r\n\r\n")  # the session ended: so does its stream
        except OSError:  # the client closed it
            pass

    def chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_DELETE(self) -> None:
        SESSIONS.live.discard(self.headers.get("Mcp-Session-Id", ""))
        self.plain(200, b"")

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method, request_id = message.get("method"), message.get("id")
        if method == "server/discover":
            self.plain(400, b"Bad Request: no session")
        elif method == "initialize":
            self.initialize(request_id)
        elif not self.in_session():
            return
        elif request_id is None:
            self.plain(202, b"")
        elif method == "tools/list":
            self.answer(request_id, {"tools": [tool(t) for t in LEGACY_TOOLS]})
        elif method == "tools/call":
            getattr(self, f"call_{message['params']['name']}")(request_id)
        else:
            self.json(200, {"jsonrpc": "2.0", "id": request_id,
                            "error": {"code": -32601, "message": f"no {method}"}})

    def initialize(self, request_id: object) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": INITIALIZED}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", SESSIONS.open())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def in_session(self) -> bool:
        """Whether the request names a live session; if not, it was answered 400 or 404."""
        session = self.headers.get("Mcp-Session-Id")
        if session is None:
            self.plain(400, b"Bad Request: Mcp-Session-Id missing")
        elif session not in SESSIONS.live:
            self.json(404, {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32001, "message": "Session not found"}})
        else:
            return True
        return False

    def answer(self, request_id: object, result: dict[str, Any]) -> None:
        legacy = {key: value for key, value in result.items() if key != "resultType"}
        super().answer(request_id, legacy)

    # The legacy-only behaviours ------------------------------------------------------------

    def call_expire(self, request_id: object) -> None:
        SESSIONS.live.clear()
        self.json(404, {"jsonrpc": "2.0", "id": None,
                        "error": {"code": -32001, "message": "Session not found"}})

    def call_expire_quietly(self, request_id: object) -> None:
        SESSIONS.live.clear()
        self.call_echo(request_id)

    def call_cut_listen(self, request_id: object) -> None:
        SESSIONS.listens_cut += 1
        self.call_echo(request_id)

    def call_cut(self, request_id: object) -> None:
        event_id = SESSIONS.cut_stream(request_id)
        self.cut_stream(f"id: {event_id}\nretry: 0\ndata: {progress()}\n\n")

    def call_sessions(self, request_id: object) -> None:
        counts = {"opened": SESSIONS.opened, "resumed": SESSIONS.resumed,
                  "listens_resumed": SESSIONS.listens_resumed,
                  "listening": SESSIONS.listening[self.headers.get("Mcp-Session-Id", "")]}
        self.answer(request_id, {"content": [{"type": "text", "text": json.dumps(counts)}],
                                 "structuredContent": counts})


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), LegacyHandler).serve_forever()
