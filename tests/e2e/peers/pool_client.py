"""A modern (2026-07-28) client (mcp 2.x `Client`) that makes N calls at once, each declaring
elicitation, through an HTTP front: how long they took, and what each call was asked.

Must not answer one call's question with another's: the elicitation callback answers from
the question's own text ("Name for W?" gets "name-of-W"), so a question attributed to the
wrong call shows in that call's result.

Usage: pool_client.py URL TOKEN N SECONDS ROUNDS
       pool_client.py stdio - N SECONDS ROUNDS -- COMMAND ARGS...   (the client launches it)
Each round makes N concurrent calls of `ask_then_wait` (who = "R-I"); prints ONE JSON line:
{"rounds": [{"seconds": wall time, "results": [{"who", "name", "pid"}, ...]}, ...]}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

MODERN = "2026-07-28"
TIMEOUT = 60.0


async def main(url: str, token: str, count: int, seconds: float, rounds: int,
               command: list[str]) -> None:
    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        who = params.message.removeprefix("Name for ").removesuffix("?")
        return types.ElicitResult(action="accept", content={"name": f"name-of-{who}"})

    target: Any
    if url == "stdio":
        target = StdioServerParameters(command=command[0], args=command[1:],
                                       env=dict(os.environ))
    else:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"},
                                  timeout=TIMEOUT)
        target = streamable_http_client(url, http_client=http)
    report: list[dict[str, Any]] = []
    async with Client(target, mode=MODERN, cache=None, read_timeout_seconds=TIMEOUT,
                      elicitation_callback=elicit) as client:
        for round_ in range(rounds):
            results: list[Any] = []

            async def one(index: int, round_: int = round_, results: list[Any] = results) -> None:
                answer = await client.call_tool("ask_then_wait",
                                                {"who": f"{round_}-{index}", "seconds": seconds})
                results.append(answer.structured_content)

            began = time.monotonic()
            async with anyio.create_task_group() as group:
                for index in range(count):
                    group.start_soon(one, index)
            report.append({"seconds": time.monotonic() - began, "results": results})
    print(json.dumps({"rounds": report}))


if __name__ == "__main__":
    url, token, count, seconds, rounds = sys.argv[1:6]
    command = sys.argv[7:] if sys.argv[6:7] == ["--"] else []
    anyio.run(main, url, token, int(count), float(seconds), int(rounds), command)
