"""A tiny legacy-era MCP server (stdlib only) that reports the environment it was started in.

Must stay standard-library only and speak only the legacy era: it answers initialize, ping
and tools/call `env` (whose text is JSON: {"env": {...}, "cwd": "..."}), and refuses
anything else (server/discover included) with -32601. On start it writes to stderr a plain
line, a line that is not UTF-8 and a line of 20000 bytes, so tests see how they are logged.

Usage: env_server.py
"""

from __future__ import annotations

import json
import os
import sys

LONG_LINE = 20000


def answer(request: dict) -> dict | None:
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None  # a notification
    if method == "initialize":
        result = {"protocolVersion": request["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "env-server", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/call" and request["params"]["name"] == "env":
        report = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()})
        result = {"content": [{"type": "text", "text": report}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    err = sys.stderr.buffer
    err.write(b"env server starting\n" + b"caf\xc3\xa9 \xff\xfe not utf-8\n"
              + b"y" * LONG_LINE + b"\n")
    err.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
