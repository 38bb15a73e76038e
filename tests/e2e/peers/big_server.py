"""A server of either era with one tool, `big`, that returns `size` bytes of text: `python
big_server.py legacy|modern`.

Must not use an SDK (so it runs in the bridge's own environment): it answers just enough of
each era for a tools/call, with the text written as compact JSON, as most servers write it.
`kind` "plain" is ASCII with no character JSON escapes; "mixed" has quotes, newlines and
non-ASCII characters on every line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODERN = "2026-07-28"
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "big", "version": "1.0"}}
DISCOVER = {"resultType": "complete", "supportedVersions": [MODERN],
            "capabilities": {"tools": {}}, "_meta": SERVER_INFO}


def text_of(size: int, kind: str) -> str:
    unit = "line %08d of plain text. " if kind == "plain" else 'line %08d: "é", ünï 日本\n\t'
    pieces, total, index = [], 0, 0
    while total < size:
        piece = unit % index
        pieces.append(piece)
        total += len(piece)
        index += 1
    return "".join(pieces)[:size]


def answer(era: str, message: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    if era == "modern" and method == "server/discover":
        return {"jsonrpc": "2.0", "id": ident, "result": DISCOVER}
    if era == "legacy" and method == "initialize":
        return {"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1.0"}}}
    if era == "legacy" and method == "ping":
        return {"jsonrpc": "2.0", "id": ident, "result": {}}
    if method == "tools/call":
        arguments = message["params"]["arguments"]
        result: dict[str, Any] = {"content": [{"type": "text", "text": text_of(
            arguments["size"], arguments["kind"])}], "isError": False}
        if era == "modern":
            result = {"resultType": "complete", **result, "_meta": SERVER_INFO}
        return {"jsonrpc": "2.0", "id": ident, "result": result}
    return {"jsonrpc": "2.0", "id": ident,
            "error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    era = sys.argv[1]
    for line in sys.stdin:
        reply = answer(era, json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
