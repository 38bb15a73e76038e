"""A tiny MCP server that speaks only 2026-07-28 over stdio (stdlib only), for the demo.

Must not accept the legacy era: `initialize` is refused with an error naming the versions it
supports, and a request without the `_meta` envelope is rejected with -32602 (basic/index.mdx).
Run it alone with `mcp-rosetta demo --server`; if MCP_ROSETTA_DEMO_TRANSCRIPT names
a file, every line it receives ("in") and sends ("out") is appended there.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

VERSION = "2026-07-28"
META = "io.modelcontextprotocol/"
SERVER_INFO = {"name": "demo-modern-server", "version": "1.0.0"}
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
Message = dict[str, Any]


class ErrorAnswer(Exception):
    """A request's JSON-RPC error answer, raised where the server finds it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


TOOLS = [
    {"name": "greet", "title": "Greeter", "description": "Say hello to someone",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                     "required": ["name"]},
     "outputSchema": {"type": "object", "properties": {"greeting": {"type": "string"}}}},
    {"name": "add", "title": "Adder", "description": "Add two numbers",
     "inputSchema": {"type": "object", "required": ["a", "b"],
                     "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}}},
]
RESOURCE = {"uri": "demo://readme", "name": "readme", "title": "About this server",
            "mimeType": "text/plain"}
README = "A modern-only MCP server: no initialize, _meta on every request."
PROMPT = {"name": "haiku", "title": "Haiku", "description": "Write a haiku about a topic",
          "arguments": [{"name": "topic", "required": True}]}


def discover(params: Message) -> Message:
    # server/discover.mdx §Response
    return {"supportedVersions": [VERSION], "instructions": "Try the greet tool.",
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
            **cacheable()}


def cacheable() -> Message:
    # server/utilities/caching.mdx: list and read results carry ttlMs and cacheScope.
    return {"ttlMs": 60000, "cacheScope": "public"}


def call_tool(params: Message) -> Message:
    args = params.get("arguments") or {}
    if params.get("name") == "greet" and isinstance(args.get("name"), str):
        data: Message = {"greeting": f"Hello, {args['name']}!"}
        log(params, "info", f"greeted {args['name']}")
    elif params.get("name") == "add" and all(isinstance(args.get(k), int | float) for k in "ab"):
        data = {"sum": args["a"] + args["b"]}
    else:
        raise ErrorAnswer(-32602, f"Unknown tool or bad arguments: {params.get('name')!r}")
    return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}


def read_resource(params: Message) -> Message:
    if params.get("uri") != RESOURCE["uri"]:
        # 2026-07-28 server/resources.mdx §Error Handling: not found is -32602.
        raise ErrorAnswer(-32602, "Resource not found", {"uri": params.get("uri")})
    return {"contents": [{"uri": RESOURCE["uri"], "mimeType": "text/plain", "text": README}],
            **cacheable()}


def get_prompt(params: Message) -> Message:
    if params.get("name") != "haiku":
        raise ErrorAnswer(-32602, f"Unknown prompt: {params.get('name')!r}")
    topic = (params.get("arguments") or {}).get("topic", "bridges")
    text = f"Write a haiku about {topic}."
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}


METHODS: dict[str, Callable[[Message], Message]] = {
    "server/discover": discover,
    "tools/list": lambda _: {"tools": TOOLS, **cacheable()},
    "tools/call": call_tool,
    "resources/list": lambda _: {"resources": [RESOURCE], **cacheable()},
    "resources/read": read_resource,
    "prompts/list": lambda _: {"prompts": [PROMPT], **cacheable()},
    "prompts/get": get_prompt,
}


def check_envelope(method: str, params: Any) -> Message:
    """The request's params once its envelope is known good; else the error to answer it with."""
    if method == "initialize":
        # versioning.mdx §Compatibility Matrix: a modern-only server SHOULD name its versions.
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        raise ErrorAnswer(-32022, f"Unsupported protocol version: this server speaks only {VERSION}"
                      " (no initialize handshake)", {"supported": [VERSION], "requested": asked})
    body: Message = params if isinstance(params, dict) else {}
    meta = body.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get(META + "protocolVersion"), str) \
            or not isinstance(meta.get(META + "clientCapabilities"), dict):
        # basic/index.mdx §_meta: a request missing a required field is rejected with -32602.
        raise ErrorAnswer(-32602,
                          "Missing required _meta fields: protocolVersion, clientCapabilities")
    if meta[META + "protocolVersion"] != VERSION:
        raise ErrorAnswer(-32022, "Unsupported protocol version",
                      {"supported": [VERSION], "requested": meta[META + "protocolVersion"]})
    level = meta.get(META + "logLevel")
    if level is not None and level not in LEVELS:
        raise ErrorAnswer(-32602, f"Invalid log level: {level!r}")
    return body


def answer(request: Message) -> Message:
    method = request["method"]
    try:
        params = check_envelope(method, request.get("params"))
        handler = METHODS.get(method)
        if handler is None:
            raise ErrorAnswer(-32601, f"Method not found: {method}")
        result = {"resultType": "complete", **handler(params),
                  "_meta": {META + "serverInfo": SERVER_INFO}}
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}
    except ErrorAnswer as exc:
        error: Message = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}


def log(params: Message, level: str, text: str) -> None:
    # logging.mdx: notifications/message only when the request asked via _meta logLevel.
    wanted = params["_meta"].get(META + "logLevel")
    if wanted is not None and LEVELS.index(level) >= LEVELS.index(wanted):
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": level, "logger": "demo", "data": text}})


def record(direction: str, line: str) -> None:
    path = os.environ.get("MCP_ROSETTA_DEMO_TRANSCRIPT")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(f"{direction} {line}\n")


def send(message: Message) -> None:
    # stdout is this server's wire: one JSON-RPC message per line, flushed at once.
    line = json.dumps(message, separators=(",", ":"))
    record("out", line)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def handle(line: str) -> None:
    record("in", line)
    try:
        message = json.loads(line)
    except ValueError:
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        return
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        if "id" in message:
            send(answer(message))
        return  # notifications need no answer; this server has none it cares about
    send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}})


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            handle(line.strip())


if __name__ == "__main__":
    main()
