"""The client's era, learnt from its first request, and the legacy ping the bridge answers
itself while no server can.

Must not hold the client's messages or choose a mode: the lifecycle (bridge.py) asks these
functions what a message shows before any handler can take it, and holds or releases it.
"""

from __future__ import annotations

from bridge.core import errors
from bridge.core.context import Context
from bridge.core.eras import LATEST_LEGACY_VERSION, Era, legacy_request
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import Inbound


def first_request_era(ctx: Context, inbound: Inbound) -> Era | None:
    """The era the client's first message shows (logged), or None: then it was answered
    here (a legacy request before `initialize`) or dropped (not a request)."""
    message = inbound.message
    if inbound.kind != "request":
        ctx.log("info", "message.dropped", side=CLIENT, reason="before the first request")
        return None
    # Until initialize negotiates one, a legacy client is taken to speak the latest revision.
    era: Era = "modern" if legacy_request(LATEST_LEGACY_VERSION, message) is None else "legacy"
    if era == "legacy" and message["method"] != "initialize":
        if message["method"] == "ping":  # lifecycle.mdx: ping is allowed before initialize
            ctx.reply(CLIENT, message["id"], {})
        else:
            ctx.fail(CLIENT, message["id"], errors.no_era_named())
        return None
    ctx.log("info", "era.detected", side=CLIENT, era=era)
    return era


def answered_ping(ctx: Context, era: Era, inbound: Inbound) -> bool:
    """Whether this is a legacy client's ping, answered here. lifecycle.mdx (2025-11-25)
    §Operation: either side may ping at any time; the bridge is alive, and a ping must not
    wait out a restart. (The modern era has no ping: a modern client's waits for the server
    like any request.)"""
    if era != "legacy" or inbound.kind != "request" or inbound.message["method"] != "ping":
        return False
    ctx.reply(CLIENT, inbound.message["id"], {})
    return True
