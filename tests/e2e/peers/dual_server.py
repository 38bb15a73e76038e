"""A dual-era MCP server over stdio, built the ordinary way with mcp 2.x's `MCPServer`.

Must not customise the era handling: it is here to show how the official SDK's dual-era
servers really behave (the client's first request picks the era for the whole process).

Runs under mcp 2.x (`mcp==2.3.0`). `ask_name` uses the SDK's resolver injection, which
elicits with a server-to-client request on a legacy connection and with an
`input_required` result on a 2026-07-28 one.

Usage: python dual_server.py
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import Completion, CompletionArgument, CompletionContext
from pydantic import BaseModel

NAMES = ["alice", "alfred", "bob", "octocat"]

server = MCPServer("rosetta-dual-server", version="1.0.0", instructions="Dual-era test server.")
# Counters a test reads back through `stats` to prove a cancellation reached us.
STATS = {"slow_started": 0, "slow_completed": 0, "slow_cancelled": 0}


class Name(BaseModel):
    name: str


@server.tool()
def echo(text: str) -> str:
    """Echo text back."""
    return text


@server.tool()
def add(a: float, b: float) -> dict[str, float]:
    """Add two numbers (structuredContent {"sum": ...})."""
    return {"sum": a + b}


@server.tool()
async def slow(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
    """Sleep in steps, reporting progress."""
    STATS["slow_started"] += 1
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
    except anyio.get_cancelled_exc_class():
        STATS["slow_cancelled"] += 1
        raise
    STATS["slow_completed"] += 1
    return f"done {steps}"


@server.tool()
def stats() -> dict[str, int]:
    """Counters for slow calls."""
    return dict(STATS)


def who() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def ask_name(person: Annotated[Name, Resolve(who)]) -> str:
    """Elicit a name (era-appropriate transport chosen by the SDK)."""
    return f"hello {person.name}"


@server.resource("memo://greeting", mime_type="text/plain")
def greeting() -> str:
    return "Hello from the dual-era server"


@server.resource("memo://note/{name}", mime_type="text/plain")
def note(name: str) -> str:
    return f"Note about {name}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}"


@server.completion()
async def complete(
    ref: object, argument: CompletionArgument, context: CompletionContext | None
) -> Completion:
    values = [name for name in NAMES if name.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


if __name__ == "__main__":
    server.run("stdio")
