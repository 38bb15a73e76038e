"""A legacy-era (initialize handshake) MCP server over stdio, for mcp-rosetta's e2e tests.

Must not speak 2026-07-28: it is the official legacy SDK's FastMCP, as real legacy servers are.

Runs under mcp 1.x (`mcp==1.30.0`, protocol 2025-11-25 and older). Server-to-client
requests (elicitation, sampling, roots) are sent mid-call, the legacy way; a bridge in
front of it must turn them into `input_required` rounds for a modern client.

Usage: python legacy_server.py [--http PORT]
  --http PORT  serve Streamable HTTP (2025-11-25: sessions, the GET stream) at
               http://127.0.0.1:PORT/mcp, FastMCP's own `streamable-http` transport
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import NotificationOptions
from mcp.server.stdio import stdio_server
from pydantic import AnyUrl, BaseModel

LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
NAMES = ["alice", "alfred", "bob", "octocat"]

mcp = FastMCP("rosetta-legacy-server", instructions="Legacy test server for mcp-rosetta.")
# Counters a test reads back through `stats` to prove a cancellation reached us.
STATS = {"slow_started": 0, "slow_completed": 0, "slow_cancelled": 0}
# Legacy delivery rules: resources/updated only for subscribed URIs (resources.mdx), and log
# messages at or above the level the client last set (logging/setLevel).
SUBSCRIBED: set[str] = set()
LOG_STATE = {"level": "debug"}


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


# --- plain tools ----------------------------------------------------------------------------


@mcp.tool()
def echo(text: str) -> str:
    """Echo text back."""
    return text


@mcp.tool()
def add(a: float, b: float) -> dict[str, float]:
    """Add two numbers (structuredContent {"sum": ...})."""
    return {"sum": a + b}


@mcp.tool()
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


@mcp.tool()
def stats() -> dict[str, int]:
    """Counters for slow calls."""
    return dict(STATS)


@mcp.tool()
def pid() -> dict[str, int]:
    """This server's process id (a test kills the server by it)."""
    return {"pid": os.getpid()}


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Log at four levels, filtered by logging/setLevel."""
    floor = LOG_LEVELS.index(LOG_STATE["level"])
    for level in ("debug", "info", "warning", "error"):
        if LOG_LEVELS.index(level) >= floor:
            await ctx.log(level, f"chatty {level}", logger_name="legacy_server")
    return "logged"


# --- change notifications -------------------------------------------------------------------


@mcp.tool()
async def add_tool(ctx: Context, name: str) -> str:
    """Add a tool and send notifications/tools/list_changed."""

    def added() -> str:
        return f"{name} says hi"

    mcp.add_tool(added, name=name, description="Added at run time")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@mcp.tool()
async def touch(ctx: Context, uri: str) -> str:
    """Send notifications/resources/updated if the client subscribed to uri."""
    if uri in SUBSCRIBED:
        await ctx.session.send_resource_updated(AnyUrl(uri))
    return f"touched {uri}"


# --- server-to-client requests --------------------------------------------------------------


async def ask(ctx: Context, message: str, schema: type[BaseModel], field: str) -> str | None:
    answer = await ctx.elicit(message, schema)
    return getattr(answer.data, field) if answer.action == "accept" else None


async def sample_capital(ctx: Context) -> str:
    question = types.TextContent(type="text", text="What is the capital of France?")
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=question)],
        max_tokens=20,
        related_request_id=ctx.request_id,
    )
    return result.content.text if isinstance(result.content, types.TextContent) else ""


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Elicit a name."""
    name = await ask(ctx, "What is your name?", Name, "name")
    return f"hello {name}" if name else "hello stranger"


@mcp.tool()
async def ask_then_wait(ctx: Context, who: str, seconds: float = 1.0) -> dict[str, Any]:
    """Elicit a name for `who`, then work for `seconds`: the name heard, and this process."""
    name = await ask(ctx, f"Name for {who}?", Name, "name")
    await anyio.sleep(seconds)
    return {"who": who, "name": name, "pid": os.getpid()}


@mcp.tool()
async def ask_model(ctx: Context) -> str:
    """Sample the client's model."""
    return f"model said {await sample_capital(ctx)}"


@mcp.tool()
async def list_roots(ctx: Context) -> dict[str, list[str]]:
    """Ask the client for its roots."""
    result = await ctx.session.list_roots()
    return {"roots": [str(root.uri) for root in result.roots]}


@mcp.tool()
async def ask_two(ctx: Context) -> str:
    """Elicit, then sample, inside one call."""
    name = await ask(ctx, "What is your name?", Name, "name")
    return f"hello {name}, capital {await sample_capital(ctx)}"


@mcp.tool()
async def wizard(ctx: Context) -> str:
    """Elicit twice inside one call."""
    name = await ask(ctx, "What is your name?", Name, "name")
    color = await ask(ctx, "Favourite colour?", Color, "color")
    return f"{name} likes {color}"


# --- resources, prompts, completion ---------------------------------------------------------


@mcp.resource("memo://greeting", mime_type="text/plain")
def greeting() -> str:
    return "Hello from the legacy server"


@mcp.resource("memo://note/{name}", mime_type="text/plain")
def note(name: str) -> str:
    return f"Note about {name}"


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}"


@mcp.prompt()
async def intro(ctx: Context) -> str:
    """Asks who you are first (elicitation inside prompts/get)."""
    return f"Introduce {await ask(ctx, 'What is your name?', Name, 'name')}"


@mcp.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    values = [name for name in NAMES if name.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), hasMore=False)


# --- handlers FastMCP does not register, on its low-level server ----------------------------

lowlevel = mcp._mcp_server


@lowlevel.subscribe_resource()
async def subscribe(uri: AnyUrl) -> None:
    SUBSCRIBED.add(str(uri))


@lowlevel.unsubscribe_resource()
async def unsubscribe(uri: AnyUrl) -> None:
    SUBSCRIBED.discard(str(uri))


@lowlevel.set_logging_level()
async def set_level(level: types.LoggingLevel) -> None:
    LOG_STATE["level"] = level


def initialization_options() -> Any:
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
    # mcp 1.x hard-codes resources.subscribe=False even with a subscribe handler registered.
    assert options.capabilities.resources is not None
    options.capabilities.resources.subscribe = True
    return options


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, initialization_options())


def serve_http(port: int) -> None:
    mcp.settings.port = port
    mcp.settings.log_level = "WARNING"
    # FastMCP builds its own initialization options: give it ours (listChanged, subscribe).
    ours = initialization_options()
    lowlevel.create_initialization_options = lambda *_, **__: ours  # type: ignore[method-assign]
    mcp.run(transport="streamable-http")


if __name__ == "__main__":
    import sys

    if "--http" in sys.argv[1:]:
        serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        anyio.run(main)
