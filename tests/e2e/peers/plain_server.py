"""A legacy stdio server in the standard library only, for the daemon's limit tests.

Must not need an SDK: it starts in milliseconds, many at once. `silent` never answers
anything (not even the probe); `stuck` answers the probe as a legacy server does (method not
found) and `initialize`, and never answers a call. Both exit at stdin EOF, as stdio servers
are asked to (stdio.mdx, Shutdown). With `--record FILE` each appends "start PID" there when
it starts, and "call PID" when a call reaches it.

    usage: plain_server.py silent|stuck [--record FILE]
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> None:
    behaviour = argv[1]
    record = argv[argv.index("--record") + 1] if "--record" in argv else None
    note(record, "start")
    for line in sys.stdin:
        if behaviour == "stuck":
            message = json.loads(line)
            if message.get("method") == "tools/call":
                note(record, "call")
            answer(message)


def note(record: str | None, what: str) -> None:
    if record is not None:
        with open(record, "a") as file:
            file.write(f"{what} {os.getpid()}\n")


def answer(message: dict[str, object]) -> None:
    method, ident = message.get("method"), message.get("id")
    if ident is None or method is None:
        return
    if method == "initialize":
        reply: dict[str, object] = {"result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "plain", "version": "1"}}}
    elif method == "tools/call":
        return  # stuck mid-call
    else:
        reply = {"error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, **reply}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
