"""Benchmark MCP servers over stdio, one per era, with no SDK: `python servers.py modern|legacy`.

Must not be slow or clever: each answers one line at a time with canned results, so the
process in front of it, not the server, is the bottleneck. Tools: `echo` (returns its text),
`blob` (returns `size` bytes of text), `ask` (one elicitation round: an `input_required`
result in the modern era, an `elicitation/create` request to the client in the legacy era),
and, legacy only, `flood` (`total` bytes of log notifications before its answer).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

try:
    import orjson

    loads = orjson.loads

    def dumps(message: Any) -> bytes:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)

except ImportError:  # pragma: no cover - the stdlib is the fallback, not the benchmark
    import json

    loads = json.loads

    def dumps(message: Any) -> bytes:
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"


Message = dict[str, Any]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SERVER_INFO = {"name": "bench-server", "version": "1.0.0"}
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [{"name": name, "description": f"The {name} tool", "inputSchema": SCHEMA}
         for name in ("echo", "blob", "ask")]
QUESTION = {"mode": "form", "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
_BLOBS: dict[int, str] = {}


def text_result(text: str) -> Message:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def blob(size: int) -> Message:
    if size not in _BLOBS:
        _BLOBS[size] = "x" * size
    return text_result(_BLOBS[size])


class Server:
    """Reads requests from stdin, writes answers to stdout; subclasses know their era."""

    def __init__(self) -> None:
        self.out = sys.stdout.buffer

    def send(self, message: Message) -> None:
        self.out.write(dumps(message))
        self.out.flush()

    def reply(self, id_: Any, result: Message) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    def error(self, id_: Any, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": text}})

    def serve(self) -> None:
        for line in sys.stdin.buffer:
            if line.strip():
                self.on_message(loads(line))

    def on_message(self, message: Message) -> None:
        method = message.get("method")
        if method is None:
            self.on_response(message)
        elif "id" in message:
            handler = self.methods().get(method)
            if handler is None:
                self.error(message["id"], -32601, f"Method not found: {method}")
            else:
                handler(message["id"], message.get("params") or {})

    def on_response(self, message: Message) -> None:
        """A response to a request of ours; only the legacy server sends any."""

    def methods(self) -> dict[str, Callable[[Any, Message], None]]:
        raise NotImplementedError


class ModernServer(Server):
    """2026-07-28: answers server/discover; every result carries resultType."""

    def methods(self) -> dict[str, Callable[[Any, Message], None]]:
        return {"server/discover": self.discover, "tools/list": self.tools_list,
                "tools/call": self.tools_call}

    def complete(self, id_: Any, result: Message) -> None:
        result["resultType"] = "complete"
        result["_meta"] = {SERVER_INFO_KEY: SERVER_INFO}
        self.reply(id_, result)

    def discover(self, id_: Any, params: Message) -> None:
        # server/discover.mdx §Response
        self.complete(id_, {"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                            "ttlMs": 60000, "cacheScope": "public"})

    def tools_list(self, id_: Any, params: Message) -> None:
        self.complete(id_, {"tools": TOOLS, "ttlMs": 60000, "cacheScope": "public"})

    def tools_call(self, id_: Any, params: Message) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            self.complete(id_, text_result(args.get("text", "")))
        elif name == "blob":
            self.complete(id_, blob(int(args.get("size", 0))))
        elif name == "ask" and params.get("inputResponses"):
            self.complete(id_, text_result("asked"))
        elif name == "ask":  # mrtr.mdx: ask for input, keep our state with the client
            self.reply(id_, {"resultType": "input_required", "requestState": "bench-state",
                             "inputRequests": {"q": {"method": "elicitation/create",
                                                     "params": QUESTION}}})
        else:
            self.error(id_, -32602, f"Unknown tool: {name!r}")


class LegacyServer(Server):
    """2025-11-25: initialize handshake; server/discover is an unknown method (-32601)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: dict[Any, Any] = {}  # our elicitation id -> the tools/call id behind it
        self.next_id = 0

    def methods(self) -> dict[str, Callable[[Any, Message], None]]:
        return {"initialize": self.initialize, "ping": lambda i, p: self.reply(i, {}),
                "tools/list": lambda i, p: self.reply(i, {"tools": TOOLS}),
                "tools/call": self.tools_call}

    def initialize(self, id_: Any, params: Message) -> None:
        version = params.get("protocolVersion", LEGACY)
        self.reply(id_, {"protocolVersion": version, "capabilities": {"tools": {}},
                         "serverInfo": SERVER_INFO})

    def tools_call(self, id_: Any, params: Message) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            self.reply(id_, text_result(args.get("text", "")))
        elif name == "blob":
            self.reply(id_, blob(int(args.get("size", 0))))
        elif name == "flood":
            self.flood(int(args.get("total", 0)))
            self.reply(id_, text_result("flooded"))
        elif name == "ask":  # the legacy way: a request to the client during the call
            self.next_id += 1
            ask_id = f"ask-{self.next_id}"
            self.asked[ask_id] = id_
            self.send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                       "params": QUESTION})
        else:
            self.error(id_, -32602, f"Unknown tool: {name!r}")

    def flood(self, total: int) -> None:
        line = dumps({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "x" * 8000}})
        for _ in range(max(1, total // len(line))):
            self.out.write(line)
        self.out.flush()

    def on_response(self, message: Message) -> None:
        call_id = self.asked.pop(message.get("id"), None)
        if call_id is not None:
            self.reply(call_id, text_result("asked"))


def main(argv: list[str]) -> int:
    era = argv[0] if argv else "modern"
    server = ModernServer() if era == "modern" else LegacyServer()
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
