"""The browser's side of a sign-in: the loopback listener the authorization server's
redirect comes back to, and the opening of the authorization URL. What the browser is shown
is `bridge.oauth.authorize`'s (`redirect_landing`); this module only moves the bytes.

The redirect URI is http://127.0.0.1:PORT/callback (OAuth 2.1 §8.4.2, loopback redirect for
native apps) with a PORT that stays the same for a given server URL, so a redirect URI
registered once (by hand or dynamically) keeps matching. The URL is printed to stderr for a
user without a browser, and opened as Python's `webbrowser` does (`BROWSER` honoured) in a
process of its own whose stdout goes to stderr: the bridge's stdout carries only protocol.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from urllib.parse import parse_qsl, urlsplit

import h11
import trio

from bridge.oauth.authorize import redirect_landing

CALLBACK = "/callback"
PORTS = (20000, 32000)
"""The range the port is taken from: below Linux's ephemeral ports, so an outgoing
connection rarely holds it."""
MAX_REQUEST = 64 * 1024


def redirect_port(server_url: str) -> int:
    """The loopback port of `server_url`'s sign-ins: the same on every run."""
    low, high = PORTS
    number = int.from_bytes(hashlib.sha256(server_url.encode()).digest()[:4], "big")
    return low + number % (high - low)


def redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}{CALLBACK}"


async def open_listener(port: int) -> trio.SocketListener:
    """The listener on 127.0.0.1:`port` (OSError with the port when it is taken)."""
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    return listeners[0]


async def wait_for_redirect(listener: trio.SocketListener) -> dict[str, str]:
    """The query of the first request to the callback path (other paths get 404)."""
    while True:
        stream = await listener.accept()
        async with stream:
            query = await _serve_one(stream)
        if query is not None:
            return query


async def _serve_one(stream: trio.SocketStream) -> dict[str, str] | None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST)
    with trio.move_on_after(30):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(MAX_REQUEST)
                conn.receive_data(data)
                if not data:
                    return None
                continue
            if isinstance(event, h11.Request):
                target = urlsplit(event.target.decode("ascii", "replace"))
                found = target.path == CALLBACK
                status, body = redirect_landing(found)
                await stream.send_all(conn.send(h11.Response(
                    status_code=status,
                    headers=[("Content-Type", "text/html; charset=utf-8"),
                             ("Content-Length", str(len(body))), ("Connection", "close"),
                             ("Cache-Control", "no-store")])) or b"")
                await stream.send_all(conn.send(h11.Data(data=body)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                return dict(parse_qsl(target.query)) if found else None
            return None
    return None


async def open_browser(url: str) -> None:
    """Open `url` as `python -m webbrowser` does (BROWSER first, else the desktop's
    browser), its output on stderr, never on the protocol's stdout."""
    await trio.run_process([sys.executable, "-m", "webbrowser", "-t", url],
                           stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                           stderr=sys.stderr.fileno(), check=False)
