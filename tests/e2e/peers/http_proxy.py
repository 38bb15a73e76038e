"""A minimal HTTP proxy, for the tests of `mcp-rosetta --url` behind HTTP_PROXY / HTTPS_PROXY.

Must not be used as a model of a proxy: it reads the first request head of each connection,
prints its request line (one line to stdout, flushed: what the test checks), connects to the
host it names and from then on relays bytes both ways until either side closes. `CONNECT
host:port` (HTTPS_PROXY: a tunnel) is answered 200 first; an absolute-form request
(HTTP_PROXY: `POST http://host:port/path`) is passed on as it is, which an origin server must
accept (RFC 9112 §3.2.2), and so is every later request on that connection.

Runs under the test's interpreter (the standard library only).
Usage: python http_proxy.py PORT
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from socketserver import StreamRequestHandler, ThreadingTCPServer
from urllib.parse import urlsplit

HEAD_AT_MOST = 65536


class Relay(StreamRequestHandler):
    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < HEAD_AT_MOST:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        print(request_line, flush=True)
        method, target, _ = request_line.split(" ", 2)
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            upstream = socket.create_connection((host, int(port)))
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            head = head.split(b"\r\n\r\n", 1)[1]
        else:
            parts = urlsplit(target)
            upstream = socket.create_connection((parts.hostname, parts.port or 80))
        with upstream:
            if head:
                upstream.sendall(head)
            back = threading.Thread(target=pipe, args=(upstream, self.request), daemon=True)
            back.start()
            pipe(self.request, upstream)
            back.join()


def pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


if __name__ == "__main__":
    ThreadingTCPServer.daemon_threads = True
    ThreadingTCPServer.allow_reuse_address = True
    ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), Relay).serve_forever()
