"""A legacy session's id in a fleet: it names the node that holds the session, so any node
that receives a request for it knows where to send it.

Must not decide what to do with an id of another node (the shell forwards it) nor draw the
random part (the shell does, from the operating system's CSPRNG).

The id is three parts, each base64url without padding, joined by dots: the holding node's
address (`http://10.0.0.2:8080`), 32 random bytes (what makes the id unguessable, as a
single node's id is), and a 16-byte HMAC-SHA256 tag over both under the fleet's id key. A
node accepts an id's address only with its tag: an id forged, altered, or minted by another
fleet names no node and is not forwarded anywhere (it is unknown: 404). Every character is
visible ASCII (2025-11-25 transports.mdx §Session Management: 0x21 to 0x7E).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

TAG_BYTES = 16
SEPARATOR = "."


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def _tag(key: bytes, node: bytes, random: bytes) -> bytes:
    message = b"%d:%s%s" % (len(node), node, random)  # the length keeps the parts apart
    return hmac.digest(key, message, hashlib.sha256)[:TAG_BYTES]


def mint(key: bytes, node: str, random: bytes) -> str:
    """A new session id held by the node at address `node`."""
    raw = node.encode("utf-8")
    return SEPARATOR.join((_b64(raw), _b64(random), _b64(_tag(key, raw, random))))


def holder(key: bytes, session_id: str) -> str | None:
    """The address of the node holding `session_id`; None for an id this fleet did not mint
    (its tag does not match, or it is no fleet id at all)."""
    parts = session_id.split(SEPARATOR)
    if len(parts) != 3 or not session_id.isascii():
        return None
    try:
        node, random, tag = (_unb64(part) for part in parts)
        address = node.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(tag, _tag(key, node, random)):
        return None
    return address
