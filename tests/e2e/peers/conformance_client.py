"""The client the conformance suite's client scenarios drive: a legacy stdio client (mcp 1.x
`ClientSession`) whose server is `mcp-rosetta --url URL`, so the bridge is the HTTP client
under test.

Must not know the scenarios' answers: it does what a host does with any server, a tour. It
initializes, lists the tools and calls each one with arguments made from its input schema
(numbers 1 and 2, strings "x", booleans true; or the calls the scenario's context names, as
a user's choice would), lists and reads the resources, lists and gets
the prompts, and answers elicitation (accept, the schema's defaults) and sampling. Each
step's failure is printed to stderr and the tour goes on; at the end one JSON line on stdout
gives each step's outcome.

Runs under mcp 1.x. Usage (the suite appends the URL):
  conformance_client.py URL   with $ROSETTA_BRIDGE (the bridge command, JSON array; `--url URL`
                              is appended, unless an argument is "{url}": the URL goes there,
                              for another relay such as mcp-remote)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def value_for(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if "default" in (schema or {}):
        return schema["default"]
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    if kind == "object":
        return arguments_for(schema)
    if kind == "array":
        return []
    if isinstance(schema, dict) and schema.get("enum"):
        return schema["enum"][0]
    return "x"


def arguments_for(schema: Any) -> dict[str, Any]:
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    numbers = iter(range(1, 1000))
    args = {}
    for name, sub in properties.items():
        value = value_for(sub)
        args[name] = next(numbers) if value == 1 and sub.get("type") in ("number",
                                                                          "integer") else value
    return args


def tool_calls(tools: list[types.Tool]) -> list[tuple[str, dict[str, Any]]]:
    """The calls the scenario's context names ($MCP_CONFORMANCE_CONTEXT `toolCalls`: as a user
    would choose them), else one per listed tool with arguments made from its schema."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    named = context.get("toolCalls") if isinstance(context, dict) else None
    if isinstance(named, list) and named:
        return [(call["name"], call.get("arguments") or {}) for call in named]
    return [(tool.name, arguments_for(tool.inputSchema)) for tool in tools]


async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    schema = getattr(params, "requestedSchema", None) or {}
    content = {k: v["default"] for k, v in schema.get("properties", {}).items() if "default" in v}
    return types.ElicitResult(action="accept", content=content)


async def on_sample(context: Any, params: types.CreateMessageRequestParams
                    ) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", model="conformance",
                                     content=types.TextContent(type="text", text="ok"))


REPORT: dict[str, Any] = {}
"""Each step's outcome ("ok", or the error), printed as one JSON line at the end."""


async def step(what: str, action: Any) -> Any:
    try:
        result = await action()
    except Exception as exc:  # the tour goes on: the suite judges what reached it
        print(f"conformance_client: {what}: {exc!r}", file=sys.stderr)
        REPORT[what] = {"error": str(exc)[:500]}
        return None
    REPORT[what] = "ok" if not getattr(result, "isError", False) else {"isError": True}
    return result


def relay_command(url: str) -> list[str]:
    command = json.loads(os.environ["ROSETTA_BRIDGE"])
    if "{url}" in command:
        return [url if arg == "{url}" else arg for arg in command]
    return [*command, "--url", url]


async def tour(url: str) -> None:
    command = relay_command(url)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(
            read, write, elicitation_callback=on_elicit, sampling_callback=on_sample) as session:
        await session.initialize()
        tools = await step("tools/list", session.list_tools)
        for name, arguments in tool_calls(tools.tools if tools else []):
            await step(f"tools/call {name}",
                       lambda n=name, a=arguments: session.call_tool(n, a))
        resources = await step("resources/list", session.list_resources)
        for resource in resources.resources if resources else []:
            await step(f"resources/read {resource.uri}",
                       lambda r=resource: session.read_resource(r.uri))
        prompts = await step("prompts/list", session.list_prompts)
        for prompt in prompts.prompts if prompts else []:
            args = {a.name: "x" for a in prompt.arguments or []}
            await step(f"prompts/get {prompt.name}",
                       lambda p=prompt, a=args: session.get_prompt(p.name, a))


async def main(url: str) -> None:
    with anyio.fail_after(60):
        await tour(url)
    print(json.dumps(REPORT))


if __name__ == "__main__":
    anyio.run(main, sys.argv[-1])
