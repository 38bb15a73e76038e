"""A modern-only (2026-07-28) MCP server over stdio, for mcp-rosetta's end-to-end tests.

Must not speak the legacy era: `initialize` is refused with -32022 naming the versions it
serves, and any request without the 2026-07-28 `_meta` envelope is refused with -32602.

Runs under mcp 2.x (`mcp==2.3.0`). The SDK has no switch for a modern-only stdio server:
`Server.run` serves both eras and lets the client's first request pick one. So this uses
the SDK's low-level `Server` and `Server.run` unchanged and adds one piece of documented
public API, a `Server.middleware` entry, that vetoes the legacy era (see `modern_only`).
Everything else on the wire (envelope checks, -32022 on an unknown version, `resultType`,
cache fields, the `serverInfo` stamp, progress, per-request log gating, cancellation and
the `subscriptions/listen` stream) is the SDK's own behaviour.

Handlers return plain wire dicts rather than SDK models, so what a test sees is what this
file says, and input requests (`input_required`, SEP-2322) are built by hand so their keys
and `requestState` are known to the tests.

Usage: python modern_server.py [--undeclared-logging] [--http PORT]
  --undeclared-logging  leave `logging` out of the capabilities, as the SDK itself does, while
                        `chatty` still logs (per request, at the level the request asks for)
  --http PORT           serve Streamable HTTP at http://127.0.0.1:PORT/mcp (the SDK's own
                        `streamable_http_app` under uvicorn) instead of stdio
"""

from __future__ import annotations

import os
import secrets
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# Logging is deprecated in 2026-07-28 but still normative; the SDK warns on every use.
warnings.simplefilter("ignore", MCPDeprecationWarning)

MODERN = "2026-07-28"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
NAMES = ["alice", "alfred", "bob", "octocat"]
LOG_LEVELS = ["debug", "info", "warning", "error"]
DECLARES_LOGGING = "--undeclared-logging" not in sys.argv[1:]

BUS = InMemorySubscriptionBus()
# Counters a test reads back through the `stats` tool to prove a cancellation reached us.
STATS = {"slow_started": 0, "slow_completed": 0, "slow_cancelled": 0}
# Tools created at run time by `add_tool`.
ADDED_TOOLS: list[str] = []
# requestState values we minted and not yet seen back: token -> (binding, answers so far).
ISSUED_STATES: dict[str, tuple[str, dict[str, Any]]] = {}

Handler = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]


# --- wire helpers -------------------------------------------------------------------------


def complete(result: dict[str, Any]) -> dict[str, Any]:
    # The SDK validates handler dicts against the 2026-07-28 schema, where resultType is required.
    return {"resultType": "complete", **result}


def cacheable(result: dict[str, Any]) -> dict[str, Any]:
    # caching.mdx: list and read results MUST carry ttlMs and cacheScope; 0 keeps tests honest.
    return complete({"ttlMs": 0, "cacheScope": "private", **result})


def text_result(text: str, structured: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = complete({"content": [{"type": "text", "text": text}]})
    if structured is not None:
        result["structuredContent"] = structured
    return result


def raw_params(ctx: Any) -> dict[str, Any]:
    return dict(ctx.params or {})


def elicit_request(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    # "mode" is optional for form mode; sending it makes a bridge strip it for 2025-06-18.
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


SAMPLE_CAPITAL = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}
        ],
        "maxTokens": 20,
    },
}
LIST_ROOTS = {"method": "roots/list"}

# The client capability each input request needs (mrtr.mdx: MUST NOT send undeclared ones).
NEEDED_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


# --- multi round-trip (input_required) ------------------------------------------------------


def resume(params: dict[str, Any], binding: str) -> dict[str, Any]:
    """Answers gathered so far: those carried by our requestState plus this round's.

    The requestState check is the point of this peer: a retry must echo exactly a value we
    minted for this same request (mrtr.mdx: attacker-controlled, bound to the request).
    """
    responses = params.get("inputResponses") or {}
    state = params.get("requestState")
    if state is None:
        if responses:
            raise MCPError(types.INVALID_PARAMS, "inputResponses without the requestState we sent")
        return {}
    issued = ISSUED_STATES.pop(state, None)
    if issued is None or issued[0] != binding:
        raise MCPError(types.INVALID_PARAMS, f"requestState {state!r} was not minted for {binding}")
    return {**issued[1], **responses}


def require_capabilities(params: dict[str, Any], requests: dict[str, dict[str, Any]]) -> None:
    declared = (params.get("_meta") or {}).get(CAPS_KEY) or {}
    missing = {NEEDED_CAPABILITY[r["method"]] for r in requests.values()} - set(declared)
    if missing:
        raise MCPError(
            types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"client did not declare {sorted(missing)}",
            {"requiredCapabilities": {name: {} for name in sorted(missing)}},
        )


def input_required(
    binding: str, answers: dict[str, Any], requests: dict[str, dict[str, Any]] | None
) -> dict[str, Any]:
    token = f"{binding}#{secrets.token_urlsafe(8)}"
    ISSUED_STATES[token] = (binding, answers)
    result: dict[str, Any] = {"resultType": "input_required", "requestState": token}
    if requests:
        result["inputRequests"] = requests
    return result


async def gather(
    ctx: Any, binding: str, stages: list[dict[str, dict[str, Any]]]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Ask for each stage's inputs in its own round; (answers, None) once all are in.

    Returns (None, input_required_result) while something is still missing. A stage with two
    keys asks two things in one round; two stages ask in two rounds.
    """
    params = raw_params(ctx)
    answers = resume(params, binding)
    for stage in stages:
        missing = {key: request for key, request in stage.items() if key not in answers}
        if missing:
            require_capabilities(params, missing)
            return None, input_required(binding, answers, missing)
    return answers, None


def accepted(answer: Any, field: str) -> str | None:
    if isinstance(answer, dict) and answer.get("action") == "accept":
        value = (answer.get("content") or {}).get(field)
        return None if value is None else str(value)
    return None


def sampled_text(answer: Any) -> str:
    content = (answer or {}).get("content") or {}
    if isinstance(content, list):  # 2025-11-25+ allows an array of blocks
        content = content[0] if content else {}
    return str(content.get("text", ""))


# --- tools ----------------------------------------------------------------------------------


async def tool_echo(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    return text_result(str(args.get("text", "")))


async def tool_add(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    total = args["a"] + args["b"]
    return text_result(str(total), {"sum": total})


async def tool_squares(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    values = [i * i for i in range(1, int(args.get("n", 3)) + 1)]
    return text_result(str(values), values)


async def tool_slow(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    steps, delay = int(args.get("steps", 3)), float(args.get("delay", 0.05))
    STATS["slow_started"] += 1
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            # A no-op unless the request carried a progressToken (progress.mdx).
            await ctx.session.report_progress(step, steps, f"step {step}/{steps}")
    except anyio.get_cancelled_exc_class():
        STATS["slow_cancelled"] += 1
        raise
    STATS["slow_completed"] += 1
    return text_result(f"done {steps}")


async def tool_stats(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    return text_result(str(STATS), dict(STATS))


async def tool_pid(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    return text_result(str(os.getpid()), {"pid": os.getpid()})


async def tool_chatty(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    # The SDK drops levels below the request's `_meta` logLevel, and all of them if absent.
    for level in LOG_LEVELS:
        await ctx.session.send_log_message(level, f"chatty {level}", logger="modern_server")
    return text_result("logged")


async def tool_add_tool(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    ADDED_TOOLS.append(str(args["name"]))
    await BUS.publish(ToolsListChanged())
    return text_result(f"added {args['name']}")


async def tool_touch(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    await BUS.publish(ResourceUpdated(uri=str(args["uri"])))
    return text_result(f"touched {args['uri']}")


async def tool_ask_name(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    stages = [{"name": elicit_request("What is your name?", "name")}]
    answers, pending = await gather(ctx, "tools/call:ask_name", stages)
    if pending is not None:
        return pending
    name = accepted(answers["name"], "name")
    return text_result(f"hello {name}" if name else "hello stranger")


async def tool_ask_model(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    answers, pending = await gather(ctx, "tools/call:ask_model", [{"capital": SAMPLE_CAPITAL}])
    if pending is not None:
        return pending
    return text_result(f"model said {sampled_text(answers['capital'])}")


async def tool_list_roots(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    answers, pending = await gather(ctx, "tools/call:list_roots", [{"roots": LIST_ROOTS}])
    if pending is not None:
        return pending
    uris = [root["uri"] for root in (answers["roots"] or {}).get("roots", [])]
    return text_result("roots: " + ",".join(uris), {"roots": uris})


async def tool_ask_two(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    stage = {"name": elicit_request("What is your name?", "name"), "capital": SAMPLE_CAPITAL}
    answers, pending = await gather(ctx, "tools/call:ask_two", [stage])
    if pending is not None:
        return pending
    name = accepted(answers["name"], "name")
    return text_result(f"hello {name}, capital {sampled_text(answers['capital'])}")


async def tool_wizard(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    stages = [
        {"name": elicit_request("What is your name?", "name")},
        {"color": elicit_request("Favourite colour?", "color")},
    ]
    answers, pending = await gather(ctx, "tools/call:wizard", stages)
    if pending is not None:
        return pending
    name, color = accepted(answers["name"], "name"), accepted(answers["color"], "color")
    return text_result(f"{name} likes {color}")


async def tool_patience(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    # A requestState-only round (load shedding): no inputRequests, the client just retries.
    params = raw_params(ctx)
    if params.get("requestState") is None:
        return input_required("tools/call:patience", {}, None)
    resume(params, "tools/call:patience")
    return text_result("thanks for waiting")


async def tool_dawdle(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    # A requestState-only round, then a retry it takes `seconds` to answer.
    params = raw_params(ctx)
    if params.get("requestState") is None:
        return input_required("tools/call:dawdle", {}, None)
    resume(params, "tools/call:dawdle")
    await anyio.sleep(float(args.get("seconds", 10)))
    return text_result("done dawdling")


def _added_tool_handler(name: str) -> Handler:
    async def handler(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
        return text_result(f"{name} says hi")

    return handler


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": kind} for key, kind in props.items()},
        "required": list(props),
    }


def tool(
    handler: Handler, description: str, inputs: dict[str, Any], output: Any = None
) -> tuple[dict[str, Any], Handler]:
    spec = {"description": description, "inputSchema": inputs}
    if output is not None:
        spec["outputSchema"] = output
    return spec, handler


# An array outputSchema (like structuredContent) is legal only from 2026-07-28 on.
SQUARES_SCHEMA = {"type": "array", "items": {"type": "integer"}}

TOOLS: dict[str, tuple[dict[str, Any], Handler]] = {
    "echo": tool(tool_echo, "Echo text back", _schema(text="string")),
    "add": tool(
        tool_add, "Add two numbers", _schema(a="number", b="number"), _schema(sum="number")
    ),
    "squares": tool(tool_squares, "Squares 1..n", _schema(n="integer"), SQUARES_SCHEMA),
    "slow": tool(tool_slow, "Sleep in steps, reporting progress", _schema(steps="integer")),
    "stats": tool(tool_stats, "Counters for slow calls", _schema()),
    "pid": tool(tool_pid, "This server's process id (a test kills the server by it)", _schema()),
    "chatty": tool(tool_chatty, "Log at four levels", _schema()),
    "add_tool": tool(tool_add_tool, "Add a tool (tools list_changed)", _schema(name="string")),
    "touch": tool(tool_touch, "Mark a resource updated", _schema(uri="string")),
    "ask_name": tool(tool_ask_name, "Elicit a name", _schema()),
    "ask_model": tool(tool_ask_model, "Sample the client's model", _schema()),
    "list_roots": tool(tool_list_roots, "Ask for the client's roots", _schema()),
    "ask_two": tool(tool_ask_two, "Elicit and sample in one round", _schema()),
    "wizard": tool(tool_wizard, "Elicit in two rounds", _schema()),
    "patience": tool(tool_patience, "A requestState-only round", _schema()),
    "dawdle": tool(tool_dawdle, "A requestState-only round, then a slow answer",
                   _schema(seconds="number")),
}


def all_tools() -> dict[str, tuple[dict[str, Any], Handler]]:
    added = {
        name: tool(_added_tool_handler(name), "Added at run time", _schema())
        for name in ADDED_TOOLS
    }
    return {**TOOLS, **added}


async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
    return cacheable({"tools": [{"name": name, **spec} for name, (spec, _) in all_tools().items()]})


async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
    entry = all_tools().get(params.name)
    if entry is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    return await entry[1](ctx, dict(params.arguments or {}))


# --- resources ------------------------------------------------------------------------------

NOTE_TEMPLATE = "memo://note/{name}"


def resource_text(uri: str, text: str) -> dict[str, Any]:
    return cacheable({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})


async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
    resources = [
        {"uri": "memo://greeting", "name": "greeting", "mimeType": "text/plain"},
        {"uri": "memo://private", "name": "private", "mimeType": "text/plain"},
    ]
    return cacheable({"resources": resources})


async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
    template = {"uriTemplate": NOTE_TEMPLATE, "name": "note", "mimeType": "text/plain"}
    return cacheable({"resourceTemplates": [template]})


async def read_resource(ctx: Any, params: Any) -> dict[str, Any]:
    uri = str(params.uri)
    if uri == "memo://greeting":
        return resource_text(uri, "Hello from the modern server")
    if uri == "memo://private":
        return await read_private(ctx, uri)
    if uri.startswith("memo://note/"):
        return resource_text(uri, f"Note about {uri.removeprefix('memo://note/')}")
    # resources.mdx §Error Handling: not found is -32602 in 2026-07-28.
    raise MCPError(types.INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})


async def read_private(ctx: Any, uri: str) -> dict[str, Any]:
    stages = [{"who": elicit_request("Who is reading?", "name")}]
    answers, pending = await gather(ctx, f"resources/read:{uri}", stages)
    if pending is not None:
        return pending
    return resource_text(uri, f"secret for {accepted(answers['who'], 'name')}")


# --- prompts and completion -----------------------------------------------------------------


def user_prompt(text: str) -> dict[str, Any]:
    return complete({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})


async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
    name_arg = {"name": "name", "description": "Who to greet", "required": True}
    prompts = [
        {"name": "greet", "description": "Greet someone", "arguments": [name_arg]},
        {"name": "intro", "description": "Asks who you are first"},
    ]
    return cacheable({"prompts": prompts})


async def get_prompt(ctx: Any, params: Any) -> dict[str, Any]:
    if params.name == "greet":
        return user_prompt(f"Please greet {(params.arguments or {}).get('name', 'nobody')}")
    if params.name == "intro":
        stages = [{"name": elicit_request("What is your name?", "name")}]
        answers, pending = await gather(ctx, "prompts/get:intro", stages)
        return pending or user_prompt(f"Introduce {accepted(answers['name'], 'name')}")
    raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")


async def complete_argument(ctx: Any, params: Any) -> dict[str, Any]:
    prefix = params.argument.value
    values = [name for name in NAMES if name.startswith(prefix)]
    return complete({"completion": {"values": values, "total": len(values), "hasMore": False}})


# --- discovery and the era gate -------------------------------------------------------------


async def discover(ctx: Any, params: Any) -> types.DiscoverResult:
    # The SDK derives `logging` from a logging/setLevel handler, which 2026-07-28 no longer
    # has; logging.mdx says a server that emits notifications/message MUST declare it.
    capabilities = SERVER.get_capabilities(protocol_version=ctx.protocol_version)
    if DECLARES_LOGGING:
        capabilities.logging = types.LoggingCapability()
    return types.DiscoverResult(
        supported_versions=[MODERN],
        capabilities=capabilities,
        instructions="Modern-only test server for mcp-rosetta.",
        ttl_ms=0,
        cache_scope="private",
    )


async def modern_only(ctx: Any, call_next: Any) -> Any:
    """Veto the legacy era that `Server.run` would otherwise serve.

    versioning.mdx §Compatibility Matrix: a modern-only server SHOULD name its versions in
    the error it returns to `initialize`. A first request without the envelope makes the SDK
    pick its legacy loop; every request there is refused the way its modern loop would.
    """
    if ctx.request_id is None:
        return await call_next(ctx)
    if ctx.method == "initialize":
        requested = (ctx.params or {}).get("protocolVersion")
        data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}
        raise MCPError(
            types.UNSUPPORTED_PROTOCOL_VERSION,
            "this server speaks only 2026-07-28; initialize is not accepted",
            data,
        )
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        route = classify_inbound_request({"method": ctx.method, "params": ctx.params})
        if isinstance(route, InboundLadderRejection):
            raise MCPError(route.code, route.message, route.data)
        raise MCPError(types.INVALID_REQUEST, "legacy-era connection refused")
    return await call_next(ctx)


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "rosetta-modern-server",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete_argument,
        on_subscriptions_listen=ListenHandler(BUS),
    )
    server.add_request_handler("server/discover", types.RequestParams, discover)
    server.middleware.append(modern_only)
    return server


SERVER = build_server()


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await SERVER.run(read_stream, write_stream, SERVER.create_initialization_options())


def http_port() -> int | None:
    args = sys.argv[1:]
    return int(args[args.index("--http") + 1]) if "--http" in args else None


async def tool_regional(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    return text_result(f"weather in {args.get('region')}")


REGIONAL_SCHEMA = {"type": "object", "required": ["region"],
                   "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


def serve_http(port: int) -> None:
    """Over HTTP, one tool more: `regional`, whose `region` argument the client must mirror in
    an Mcp-Param-Region header (streamable-http.mdx §Custom Headers; the SDK checks it)."""
    import uvicorn

    TOOLS["regional"] = tool(tool_regional, "Weather of a region (Mcp-Param-Region)",
                             REGIONAL_SCHEMA)

    uvicorn.run(SERVER.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if (port := http_port()) is not None:
        serve_http(port)
    else:
        anyio.run(main)
