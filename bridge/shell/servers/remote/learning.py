"""What the upstream keeps of each answer it reads, by what `bridge/streamable/learned.py`
decides: the tools' `x-mcp-header` annotations, a legacy server's protocol version, and the
tools the client must not see, logged.

Must not send or feed anything: the exchange and the event-stream reader call it on each
answer they read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bridge.streamable.learned import legacy_version, lists_tools, screen_tools
from bridge.streamable.outbound import ServerBound

if TYPE_CHECKING:
    from bridge.shell.servers.remote.conduit import Conduit
    from bridge.shell.servers.remote.link import Link


def learn(conduit: Conduit, link: Link, out: ServerBound, answer: object) -> None:
    """Keep what `answer` teaches the next requests: the annotations a modern tools/list
    names, or the protocol version a legacy server's `initialize` result names."""
    if lists_tools(out) and isinstance(answer, dict):
        conduit.param_headers.learn(answer.get("result"))
    elif link.legacy is not None and (version := legacy_version(out, answer)) is not None:
        link.legacy = replace(link.legacy, protocol_version=version)


def screened(conduit: Conduit, out: ServerBound, answer: object) -> bytes | None:
    """`answer` without the tools the client must not see, each logged with why; None when
    it has none."""
    screen = screen_tools(out, answer)
    if screen is None:
        return None
    for name, why in screen.excluded:
        conduit.log.warning("upstream.tool_excluded", tool=name, reason=why)
    return screen.line
