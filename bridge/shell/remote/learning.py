"""What the answers teach the upstream's next requests, and what of them the client must not
see: the tools' `x-mcp-header` annotations, and a legacy server's protocol version.

Must not send or feed anything: the exchange and the event-stream reader call it on each
answer they read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bridge.core.codec import encode
from bridge.streamable.outbound import ServerBound, invalid_annotation

if TYPE_CHECKING:
    from bridge.shell.remote.conduit import Conduit
    from bridge.shell.remote.link import Link


def learn(conduit: Conduit, link: Link, out: ServerBound, answer: object) -> None:
    """What an answer teaches the next requests: the tools' `x-mcp-header` annotations
    (a modern tools/list), or the protocol version a legacy server's `initialize` result
    names, sent on every later request (transports.mdx §Protocol Version Header)."""
    if out.method == "tools/list" and out.version is not None and isinstance(answer, dict):
        conduit.param_headers.learn(answer.get("result"))
        return
    if out.method != "initialize" or link.legacy is None or not isinstance(answer, dict):
        return
    result = answer.get("result")
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if isinstance(version, str):
        link.legacy = replace(link.legacy, protocol_version=version)


def screened(conduit: Conduit, out: ServerBound, answer: object) -> bytes | None:
    """A modern tools/list answer without the tools whose `x-mcp-header` annotations are
    invalid (§Schema Extension: the client MUST exclude them, SHOULD log why); None when
    it has none."""
    if out.method != "tools/list" or out.version is None or not isinstance(answer, dict):
        return None
    result = answer.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return None
    kept = []
    for tool in tools:
        why = invalid_annotation(tool.get("inputSchema")) if isinstance(tool, dict) else None
        if why is None:
            kept.append(tool)
        else:
            conduit.log.warning("upstream.tool_excluded", tool=tool.get("name"), reason=why)
    if len(kept) == len(tools):
        return None
    assert isinstance(result, dict)
    return encode({**answer, "result": {**result, "tools": kept}})
