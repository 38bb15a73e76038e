"""The cost of HTTP itself in Python: `python httpfloor.py PORT`, a minimal h11-on-trio server.

Must not do more than the front must: one task per keep-alive connection, h11 parsing every
request, the body decoded as JSON (the front does that too) and answered with the same
`tools/call` result the front gives for the benchmark's echo tool, with the request's id. No
MCP checks, no routing, no server child: what is left of the front's time over this is the
bridge's.
"""

from __future__ import annotations

import sys

import h11
import orjson
import trio

READ_SIZE = 64 * 1024
# What the front answers a modern client's echo call in front of servers.py (mode P).
RESULT = {"content": [{"type": "text", "text": "hello, bridge"}], "isError": False,
          "resultType": "complete",
          "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-server",
                                                            "version": "1.0.0"}}}


LISTED = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


def answer(body: bytes) -> bytes:
    request = orjson.loads(body)
    result = LISTED if request.get("method") == "tools/list" else RESULT
    return orjson.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result})


async def serve(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    body = bytearray()
    async with stream:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(READ_SIZE)
                if not data:
                    return
                conn.receive_data(bytes(data))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                out = answer(bytes(body))
                body.clear()
                head = h11.Response(status_code=200, headers=[
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(out)).encode())])
                await stream.send_all(conn.send(head) + conn.send(h11.Data(data=out))
                                      + conn.send(h11.EndOfMessage()))
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return


async def main(port: int) -> None:
    await trio.serve_tcp(serve, port, host="127.0.0.1")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
