"""The keys one fleet secret gives: one per use, so a value signed for one use (a session id)
is never accepted for another (a forwarded request's pass).

Must not read the secret (the shell reads `fleet_key_file` or MCP_ROSETTA_FLEET_KEY) nor
print it: no key is in a repr.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

MIN_SECRET = 16
"""Bytes a fleet secret holds at least (`openssl rand -base64 32` gives 44)."""


@dataclass(frozen=True, slots=True)
class FleetKeys:
    ids: bytes = field(repr=False)
    """Tags each legacy session id (`ids.py`)."""
    passes: bytes = field(repr=False)
    """Signs each forwarded request (`passes.py`)."""
    credentials: bytes = field(repr=False)
    """Keys the digest that names a bearer token, so every node names it alike (a session is
    bound to the credential that opened it, whichever node checks)."""
    states: bytes = field(repr=False)
    """Signs the envelope of each requestState a node gives a modern client (`states.py`)."""
    changes: bytes = field(repr=False)
    """Signs each change a node sends the others for a tenant's listen streams
    (`changes.py`)."""


def derive(secret: bytes) -> FleetKeys:
    """The keys of `secret` (at least MIN_SECRET bytes, surrounding whitespace ignored)."""
    secret = secret.strip()
    if len(secret) < MIN_SECRET:
        raise ValueError(f"the fleet key is {len(secret)} bytes; it needs at least "
                         f"{MIN_SECRET} (make one with `openssl rand -base64 32`)")

    def key(use: bytes) -> bytes:
        return hmac.digest(secret, b"mcp-rosetta fleet " + use, hashlib.sha256)

    return FleetKeys(key(b"session ids"), key(b"forwarded requests"), key(b"credentials"),
                     key(b"request states"), key(b"change notifications"))
