"""Two modern (2026-07-28) clients (mcp 2.x `Client`) of one HTTP front, each with its own
bearer token, that report what each of them was told.

Must not share anything between the two but the front's URL: each has its own HTTP client
(its own `Authorization` header), its own roots and its own callbacks.

Usage: tenant_client.py URL TOKEN_A TOKEN_B [fleet|pool]
Steps, in order (with `fleet` or `pool`, only that one):
  roots    A (roots file:///secret-of-A) calls `list_roots`, then B, which declares no roots
           (so only roots known from elsewhere could answer it)
  listen   A opens a tools listen stream; B adds a tool (A must hear nothing of it), then A
           adds one (A hears that)
  logs     at once: A calls `chatty` asking for logs at `warning` and `slow` with progress,
           B the same at `error`; each client's logs and progress values are recorded

  fleet    (a fleet behind a round-robin balancer) A and B each open a tools listen
           stream; B adds CALLS tools one at a time, each call wherever the balancer sends
           it, then A does: after each call, what each stream heard
  pool     A declares elicitation (each of its calls runs alone at a server process of its
           pool) and opens a tools listen stream; while `ask_then_wait` holds one process,
           A adds a tool (at another); what the stream heard, and whether the first
           process's tools list has the new tool
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
    def __init__(self, name: str, url: str, token: str, has_roots: bool,
                 elicits: bool = False) -> None:
        self.name = name
        self.has_roots = has_roots
        """Declares the roots capability (answers roots/list)."""
        self.elicits = elicits
        """Declares elicitation (answers "Name for W?" with "name-of-W")."""
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
        async def elicit(context: Any, params: Any) -> types.ElicitResult:
            who = params.message.removeprefix("Name for ").removesuffix("?")
            return types.ElicitResult(action="accept", content={"name": f"name-of-{who}"})

        hooks: dict[str, Any] = {"logging_callback": log}
        if self.has_roots:
            hooks["list_roots_callback"] = roots
        if self.elicits:
            hooks["elicitation_callback"] = elicit
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


async def pool(url: str, token_a: str, token_b: str) -> dict[str, Any]:
    a = Peer("A", url, token_a, False, elicits=True)
    with anyio.fail_after(TIMEOUT):
        async with a.client() as ca:
            await a.discover(ca)
            async with ca.listen(tools_list_changed=True) as sub, \
                    anyio.create_task_group() as group:
                group.start_soon(a.call, ca, "ask_then_wait", {"who": "w", "seconds": 4})
                await anyio.sleep(1.0)  # it holds the first process: asked, then working
                await a.call(ca, "add_tool", {"name": "A_pool"})
                a.out["heard"]["added"] = await heard_within(sub, TIMEOUT / 4)
                listed = await ca.list_tools()
                a.out["first_lists_it"] = any(t.name == "A_pool" for t in listed.tools)
    return {"A": a.out}


def main() -> None:
    url, token_a, token_b = sys.argv[1:4]
    steps = {"fleet": fleet, "pool": pool}.get(sys.argv[4] if len(sys.argv) > 4 else "", run)
    print(json.dumps(anyio.run(steps, url, token_a, token_b)), flush=True)


if __name__ == "__main__":
    main()
