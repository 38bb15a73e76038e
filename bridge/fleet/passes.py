"""The pass a node puts on a request it forwards to the node holding its session: a header
signed with the fleet's key, so the holder takes the request as the fleet's and trusts what
the sending node checked.

Must not check the request itself (the sending node did: its Host, its Origin, its bearer
token) nor read the clock (the shell gives `now`, seconds since the epoch).

The node a client reached checks the client's bearer token, as for any request; the holder
cannot (the token is not forwarded: it never travels further than it must), so the pass
carries the Credential digest the check gave (fleet nodes key it alike: `keys.py`), and the
holder binds and finds sessions by it as by its own check. The tag covers the sending node,
the time, the credential, the method, the target, the session id and a SHA-256 of the body,
so a pass copied off the fleet's network cannot carry another request, and is refused
`FRESH_S` seconds after it was made (the nodes' clocks must agree within that: NTP).
A forwarded request is never forwarded again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

HEADER = "mcp-rosetta-fleet"
FRESH_S = 30
"""Seconds a pass is good for, either way (a node whose clock runs ahead too)."""
NO_CREDENTIAL = "-"
TAG_BYTES = 16


@dataclass(frozen=True, slots=True)
class Forwarded:
    """What a good pass says: the node that forwarded the request, and the credential it
    found (None: no tokens are in force)."""

    node: str
    credential: str | None


@dataclass(frozen=True, slots=True)
class Bound:
    """The parts of a request a pass is bound to."""

    method: str
    target: str
    session_id: str
    body: bytes


def _tag(key: bytes, node: str, stamp: int, credential: str, request: Bound) -> str:
    fields = (node, str(stamp), credential, request.method, request.target, request.session_id,
              hashlib.sha256(request.body).hexdigest())
    message = "\n".join(f"{len(part)}:{part}" for part in fields).encode("utf-8")
    digest = hmac.digest(key, message, hashlib.sha256)[:TAG_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def issue(key: bytes, node: str, now: float, credential: str | None,
          request: Bound) -> str:
    """The header value for `request`, forwarded by `node` at `now` for `credential`."""
    stamp = int(now)
    given = credential or NO_CREDENTIAL
    name = base64.urlsafe_b64encode(node.encode("utf-8")).rstrip(b"=").decode("ascii")
    return f"{name}.{stamp}.{given}.{_tag(key, node, stamp, given, request)}"


def check(key: bytes, value: str, now: float, request: Bound) -> Forwarded | str:
    """What a pass says, or why it is refused (for the log and the 403)."""
    parts = value.strip().split(".")
    if len(parts) != 4 or not value.isascii():
        return "the fleet pass is malformed"
    name, stamp_text, given, tag = parts
    try:
        node = base64.b64decode(name + "=" * (-len(name) % 4), altchars=b"-_",
                                validate=True).decode("utf-8")
        stamp = int(stamp_text)
    except (binascii.Error, ValueError):
        return "the fleet pass is malformed"
    if not hmac.compare_digest(tag.encode("ascii"),
                               _tag(key, node, stamp, given, request).encode("ascii")):
        return ("the fleet pass is not signed with this node's fleet key, or not for this "
                "request: every node needs the same fleet_key_file (MCP_ROSETTA_FLEET_KEY)")
    if abs(now - stamp) > FRESH_S:
        return (f"the fleet pass from {node} is {now - stamp:+.0f} s old (good for "
                f"{FRESH_S} s): the nodes' clocks disagree; keep them in time (NTP)")
    return Forwarded(node, None if given == NO_CREDENTIAL else given)
