"""A legacy stdio server in the standard library only, for the HTTP front's hostile-input tests.

Must not need an SDK: it starts in milliseconds and answers at once. Tools: `echo` (its
`text`), `flood` (`count` progress notifications of `size` bytes of text each on the call's
progressToken, written as fast as the pipe takes them, then the answer unless `hang` is true)
and `hang` (never answered). Every `notifications/cancelled` it reads is appended to the
`--record` file as "cancelled REQUEST_ID" (a test reads it to see the cancellation reached
the server), as is "start PID" when it starts. Exits at stdin EOF (stdio.mdx, Shutdown).

    usage: flood_server.py --record FILE
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object",
                                     "properties": {"text": {"type": "string"}}}},
    {"name": "flood", "inputSchema": {"type": "object", "properties": {
        "count": {"type": "integer"}, "size": {"type": "integer"},
        "hang": {"type": "boolean"}}}},
    {"name": "hang", "inputSchema": {"type": "object", "properties": {}}},
]


def main(argv: list[str]) -> None:
    record = argv[argv.index("--record") + 1]
    note(record, f"start {os.getpid()}")
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method == "notifications/cancelled":
            note(record, f"cancelled {message['params']['requestId']}")
        elif "id" in message and method is not None:
            answer(message)


def note(record: str, what: str) -> None:
    with open(record, "a") as file:
        file.write(what + "\n")


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(message: dict[str, Any]) -> None:
    method, ident, params = message["method"], message["id"], message.get("params") or {}
    if method == "initialize":
        write({"id": ident, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        write({"id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call(ident, params)
    else:
        write({"id": ident, "error": {"code": -32601, "message": "Method not found"}})


def call(ident: object, params: dict[str, Any]) -> None:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if name == "hang":
        return
    if name == "flood":
        token = (params.get("_meta") or {}).get("progressToken")
        count, text = int(arguments["count"]), "x" * int(arguments["size"])
        for step in range(1, count + 1):
            write({"method": "notifications/progress", "params": {
                "progressToken": token, "progress": step, "total": count, "message": text}})
        if arguments.get("hang"):
            return
        result = f"flooded {count}"
    else:
        result = str(arguments.get("text", ""))
    write({"id": ident, "result": {"content": [{"type": "text", "text": result}]}})


if __name__ == "__main__":
    main(sys.argv)
