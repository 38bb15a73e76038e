"""A change a tenant's server raised on one node, carried to that tenant's listen streams on
the fleet's other nodes: which notifications go, the envelope a node POSTs to each other
node, and its pass.

Must not choose the nodes nor send (the shell does, each POST on its own, briefly) nor find
the tenant (the receiving node looks up the credential the pass names, and delivers only to
that tenant's own core, which applies each stream's filter as for its own server's).

A notification is a hint a client answers by listing again (or reading the resource), so a
change is sent at most once to each node and never again: no retry, no acknowledgement
awaited, a node gone or slow misses it. A change a node received is never sent on (its core
takes it as relayed, and shares only what its own server raises), so nothing loops. The pass
is `passes.py`'s, under a key of its own (`keys.py`), over POST `PATH` and the envelope's
bytes: it cannot pass for a forwarded request, nor a forwarded request's for it, and it
names the tenant (the credential the sending node's tenant has), so no other tenant hears.
"""

from __future__ import annotations

import json

from bridge.fleet import passes
from bridge.fleet.passes import Bound, Forwarded

PATH = "/.mcp-rosetta/fleet/changes"
"""Where a node takes the changes the others send (only with their pass)."""
HEADER = passes.HEADER
METHODS = frozenset({"notifications/tools/list_changed", "notifications/resources/list_changed",
                     "notifications/prompts/list_changed", "notifications/resources/updated"})
"""What a listen stream may ask for (2026-07-28 subscriptions.mdx): the changes shared."""
MAX_BYTES = 16 * 1024
"""The largest envelope sent or taken: a list change is a few dozen bytes, an update names
one URI; a larger one is not a change a stream needs."""


def envelope(message: dict[str, object]) -> bytes | None:
    """The body that carries `message` (its method and params) to another node; None for a
    message that is no change, or too large to share."""
    if message.get("method") not in METHODS:
        return None
    carried: dict[str, object] = {"method": message["method"]}
    if isinstance(message.get("params"), dict):
        carried["params"] = message["params"]
    body = json.dumps(carried, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return body if len(body) <= MAX_BYTES else None


def opened(body: bytes) -> dict[str, object] | str:
    """The change an envelope carries, as a notification; or why it is refused."""
    if len(body) > MAX_BYTES:
        return f"a change envelope is at most {MAX_BYTES} bytes"
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return "a change envelope is one JSON object"
    if not isinstance(value, dict) or value.get("method") not in METHODS:
        return "a change envelope names one of " + ", ".join(sorted(METHODS))
    params = value.get("params")
    if params is not None and not isinstance(params, dict):
        return "a change's params are an object"
    if value["method"] == "notifications/resources/updated" \
            and not isinstance((params or {}).get("uri"), str):
        return "a resource update names its uri"
    message: dict[str, object] = {"jsonrpc": "2.0", "method": value["method"]}
    if params is not None:
        message["params"] = params
    return message


def _bound(body: bytes) -> Bound:
    return Bound("POST", PATH, "", body)


def issue(key: bytes, node: str, now: float, credential: str | None, body: bytes) -> str:
    """The pass of envelope `body`, sent by `node` at `now` for the tenant `credential`
    (None: the fleet's one tenant, when no tokens are in force)."""
    return passes.issue(key, node, now, credential, _bound(body))


def check(key: bytes, value: str, now: float, body: bytes) -> Forwarded | str:
    """Which node sent envelope `body` for which tenant; or why its pass is refused."""
    return passes.check(key, value, now, _bound(body))
