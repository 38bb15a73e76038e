"""A modern (2026-07-28) client (mcp 2.x `Client`) before a modern server through a fleet's
balancer: calls that the server asks for input, whose retries round-robin spreads over the
nodes, then one call held across a restart of the node that holds it.

Must not look inside a requestState: it echoes what it was given (mrtr.mdx §Client
Requirements); the test reads which node holds the call from the nodes' logs and the file
the state is written to.

Usage: fleet_modern_client.py URL TOKEN DIR CALLS
  1. CALLS calls of `wizard` (two rounds of elicitation each), the SDK driving the rounds;
  2. `ask_name` by hand: its input_required's requestState is written to DIR/state, then the
     client waits for DIR/restarted (the test restarts the node that holds the call) and
     retries with it.
Prints ONE JSON line: {"wizard": [texts], "state": str, "retry": {code, message, data} or
the result, "again": text of ask_name made anew}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from peer_common import dump, error_info, fill_form, publish

MODERN = "2026-07-28"
TIMEOUT = 60.0


def answered(request: Any) -> Any:
    return types.ElicitResult(action="accept",
                              content=fill_form(getattr(request.params, "requested_schema",
                                                        None)))


async def main(url: str, token: str, shared: Path, count: int) -> None:
    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=fill_form(params.requested_schema))

    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    report: dict[str, Any] = {}
    async with Client(streamable_http_client(url, http_client=http), mode=MODERN, cache=None,
                      read_timeout_seconds=TIMEOUT, elicitation_callback=elicit) as client:
        texts = []
        for _ in range(count):
            result = await client.call_tool("wizard", {})
            texts.append(result.content[0].text)
        report["wizard"] = texts
        first = await client.session.call_tool("ask_name", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), dump(first)
        state = first.request_state
        report["state"] = state
        publish(shared / "state", state or "")
        deadline = time.monotonic() + TIMEOUT
        while not (shared / "restarted").exists():
            assert time.monotonic() < deadline, "the test never restarted the node"
            await anyio.sleep(0.05)
        responses = {key: answered(request)
                     for key, request in (first.input_requests or {}).items()}
        try:
            retried = await client.session.call_tool(
                "ask_name", {}, input_responses=responses, request_state=state,
                allow_input_required=True)
            report["retry"] = dump(retried)
        except Exception as exc:  # the expected end: the call ended with its node's life
            report["retry"] = error_info(exc)
        again = await client.call_tool("ask_name", {})
        report["again"] = again.content[0].text
    print(json.dumps(report))


if __name__ == "__main__":
    url, token, shared, count = sys.argv[1:5]
    anyio.run(main, url, token, Path(shared), int(count))
