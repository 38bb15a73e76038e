"""Two modern (2026-07-28) clients (mcp 2.x `Client`) of one HTTP front, each with its own
bearer token, that report what each of them was told.

Must not share anything between the two but the front's URL: each has its own HTTP client
(its own `Authorization` header), its own roots and its own callbacks.

Usage: tenant_client.py URL TOKEN_A TOKEN_B [fleet]
Steps, in order (with `fleet`, only the last):
  roots    A (roots file:///secret-of-A) calls `list_roots`, then B, which declares no roots
           (so only roots known from elsewhere could answer it)
  listen   A opens a tools listen stream; B adds a tool (A must hear nothing of it), then A
           adds one (A hears that)
  logs     at once: A calls `chatty` asking for logs at `warning` and `slow` with progress,
           B the same at `error`; each client's logs and progress values are recorded

  fleet    (a fleet behind a round-robin balancer) A and B each open a tools listen
           stream; B adds CALLS tools one at a time, each call wherever the balancer sends
           it, then A does: after each call, what each stream heard
Prints ONE JSON object on stdout: {"A": {...}, "B": {...}}, each with `roots` (the tool's
answer), `heard` (methods heard on its listen stream per step), `logs` ([level, data]) and
`progress` (values).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
TIMEOUT = 60.0
QUIET = 1.5
"""Seconds a stream is watched for what must not come."""
CALLS = 3
"""Calls of each client in `fleet`: round-robin over three nodes takes at least two of them
to a node other than the one that holds its listen stream."""


class Peer:
    def __init__(self, name: str, url: str, token: str, has_roots: bool) -> None:
        self.name = name
        self.has_roots = has_roots
        """Declares the roots capability (answers roots/list)."""
        self.url = url
        self.token = token
        self.root = f"file:///secret-of-{name}"
        self.out: dict[str, Any] = {"logs": [], "progress": [], "heard": {}}

    def client(self) -> Client:
        async def roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=self.root, name=self.name)])

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            self.out["logs"].append([params.level, params.data])

        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {self.token}"},
                                  timeout=TIMEOUT)
        hooks: dict[str, Any] = {"logging_callback": log}
        if self.has_roots:
            hooks["list_roots_callback"] = roots
        return Client(streamable_http_client(self.url, http_client=http), mode=MODERN,
                      cache=None, read_timeout_seconds=TIMEOUT, **hooks)

    async def discover(self, client: Client) -> None:
        raw = await client.session.send_discover(MODERN)
        client.session.adopt(types.DiscoverResult.model_validate(raw))

    async def call(self, client: Client, tool: str, arguments: dict[str, Any],
                   **options: Any) -> Any:
        result = await client.call_tool(tool, arguments, **options)
        return result.structured_content or [c.text for c in result.content
                                             if isinstance(c, types.TextContent)]

    async def chatty_and_slow(self, client: Client, level: str) -> None:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.out["progress"].append(value)

        await self.call(client, "chatty", {}, meta={LOG_LEVEL_KEY: level})
        await self.call(client, "slow", {"steps": 3, "delay": 0.2}, progress_callback=progress)


async def heard_within(sub: Any, seconds: float) -> list[str]:
    """What the listen stream `sub` brought within `seconds`."""
    heard: list[str] = []
    with anyio.move_on_after(seconds):
        async for event in sub:
            heard.append(type(event).__name__)
            break
    return heard


async def run(url: str, token_a: str, token_b: str) -> dict[str, Any]:
    a, b = Peer("A", url, token_a, True), Peer("B", url, token_b, False)
    with anyio.fail_after(TIMEOUT):
        async with a.client() as ca, b.client() as cb:
            await a.discover(ca)
            await b.discover(cb)
            a.out["roots"] = await a.call(ca, "list_roots", {})
            try:
                b.out["roots"] = await b.call(cb, "list_roots", {})
            except MCPError as exc:
                b.out["roots"] = {"error": exc.error.message}
            async with ca.listen(tools_list_changed=True) as sub:
                await b.call(cb, "add_tool", {"name": "tool_of_b"})
                a.out["heard"]["b_added"] = await heard_within(sub, QUIET)
                await a.call(ca, "add_tool", {"name": "tool_of_a"})
                a.out["heard"]["a_added"] = await heard_within(sub, TIMEOUT / 4)
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.chatty_and_slow, ca, "warning")
                tg.start_soon(b.chatty_and_slow, cb, "error")
            await anyio.sleep(QUIET)  # a log line that strays would arrive by now
    return {"A": a.out, "B": b.out}


async def fleet(url: str, token_a: str, token_b: str) -> dict[str, Any]:
    a, b = Peer("A", url, token_a, False), Peer("B", url, token_b, False)
    with anyio.fail_after(TIMEOUT * 2):
        async with a.client() as ca, b.client() as cb:
            await a.discover(ca)
            await b.discover(cb)
            async with ca.listen(tools_list_changed=True) as sub_a, \
                    cb.listen(tools_list_changed=True) as sub_b:
                for peer, client, sub, other in ((b, cb, sub_b, sub_a), (a, ca, sub_a, sub_b)):
                    for number in range(CALLS):
                        await peer.call(client, "add_tool", {"name": f"{peer.name}_{number}"})
                        peer.out["heard"][f"call_{number}"] = await heard_within(
                            sub, TIMEOUT / 4)
                    quiet = a if peer is b else b
                    quiet.out["heard"][f"{peer.name}_added"] = await heard_within(other, QUIET)
    return {"A": a.out, "B": b.out}


def main() -> None:
    url, token_a, token_b = sys.argv[1:4]
    steps = fleet if sys.argv[4:5] == ["fleet"] else run
    print(json.dumps(anyio.run(steps, url, token_a, token_b)), flush=True)


if __name__ == "__main__":
    main()
