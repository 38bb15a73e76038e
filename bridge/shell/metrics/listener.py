"""`--metrics http://HOST:PORT/PATH`: the stdio bridge's and the Unix daemon's scrape
endpoint, one `GET` per connection over h11, answered from `exposition.Exposition`.

Must not serve anything else, nor be reachable by strangers: it binds loopback, or any other
address only with bearer tokens (`token_file`, MCP_ROSETTA_TOKEN), which each scrape then
presents (Prometheus' `authorization` setting). The HTTP front serves `/metrics` on its own
port instead. A bind that fails is logged and the bridge goes on without the endpoint: a
metrics port taken is no reason to refuse the client.
"""

from __future__ import annotations

from functools import partial

import h11
import trio

from bridge.shell.http.address import is_loopback, parse_address
from bridge.shell.http.auth import Denied, Tokens
from bridge.shell.logs import Logger
from bridge.shell.metrics.exposition import CONTENT_TYPE, Exposition

READ_AT_MOST = 16 * 1024
"""A scrape's request head; longer ones are refused."""
SCRAPE_TIMEOUT = 10.0
"""Seconds a scrape may take, from the connection to the last byte of the answer."""
_TEXT = "text/plain; charset=utf-8"
DEFAULT_PATH = "/metrics"
"""Where scrapes are served when the address names no path (Prometheus' default too)."""


class Exposed(Exception):
    """The endpoint may not be served as configured (it says why)."""


def check_reach(address: str, tokens: Tokens | None) -> None:
    """Exposed unless the address is loopback or tokens guard it."""
    host = parse_address(address, DEFAULT_PATH).host
    if tokens is None and not is_loopback(host):
        raise Exposed(f"metrics on {host} would be open to anyone who can reach it: "
                          "bind 127.0.0.1, or set token_file or MCP_ROSETTA_TOKEN")


async def serve_scrapes(address: str, exposition: Exposition, tokens: Tokens | None,
                        log: Logger, *,
                        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve scrapes until cancelled; `task_status` hears the bound port (0 if none)."""
    where = parse_address(address, DEFAULT_PATH)
    try:
        check_reach(address, tokens)
        listeners = await trio.open_tcp_listeners(where.port, host=where.host)
    except (Exposed, OSError) as exc:
        log.error("metrics.unavailable", address=address, reason=str(exc))
        task_status.started(0)
        return
    port = listeners[0].socket.getsockname()[1]
    log.info("metrics.listening", host=where.host, port=port, path=where.path)
    task_status.started(port)
    await trio.serve_listeners(partial(_scrape, path=where.path, exposition=exposition,
                                       tokens=tokens), listeners)


async def _scrape(stream: trio.SocketStream, *, path: str, exposition: Exposition,
                  tokens: Tokens | None) -> None:
    async with stream:
        with trio.move_on_after(SCRAPE_TIMEOUT):
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=READ_AT_MOST)
            request = await _request(stream, conn)
            if request is None:
                return
            status, body, kind = _answer(request, path, exposition, tokens)
            headers = [("content-type", kind), ("content-length", str(len(body))),
                       ("connection", "close")]
            if status == 401:
                headers.append(("www-authenticate", "Bearer"))
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers))
                                  + conn.send(h11.Data(data=body))
                                  + conn.send(h11.EndOfMessage()))


async def _request(stream: trio.SocketStream, conn: h11.Connection) -> h11.Request | None:
    """The connection's request head, or None for a client that sends none (or garbage)."""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(READ_AT_MOST))
                continue
            return event if isinstance(event, h11.Request) else None
    except (h11.RemoteProtocolError, trio.BrokenResourceError):
        return None


def _answer(request: h11.Request, path: str, exposition: Exposition,
            tokens: Tokens | None) -> tuple[int, bytes, str]:
    """Status, body and content type of a scrape's answer."""
    if request.target.decode("latin-1").split("?", 1)[0] != path:
        return 404, b"not found: metrics are at " + path.encode() + b"\n", _TEXT
    if request.method not in (b"GET", b"HEAD"):
        return 405, b"GET only\n", _TEXT
    if tokens is not None:
        authorization = dict(request.headers).get(b"authorization")
        try:
            tokens.check(None if authorization is None else authorization.decode("latin-1"))
        except Denied as denied:
            return 401, denied.problem.encode() + b"\n", _TEXT
    body = exposition.render()
    return 200, b"" if request.method == b"HEAD" else body, CONTENT_TYPE
