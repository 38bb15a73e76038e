"""A tenant's home: the one node of the fleet that serves all of its 2026-07-28 requests,
so a server that keeps state between requests sees every one of them, and the tenant runs
its server processes at one node rather than at each.

Must not know which node is reachable now (the shell skips one it could not reach and
takes the next in `ranked`'s order).

Every node ranks the fleet's nodes alike for a tenant, without telling the others anything:
rendezvous (highest random weight) hashing, each node weighed by SHA-256 of the tenant's
name and the node's address. The tenant's name is its credential's digest, which the fleet
key already keys (`keys.FleetKeys.credentials`), so the weights are the fleet's own; the
tenant of a front that asks no token is named by a fixed label. A node that joins or
leaves moves only the tenants it ranks first: every other tenant keeps its home.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from enum import Enum
from typing import Final, Literal

Affinity = Literal["tenant", "none"]
"""`fleet_affinity`: "tenant", each tenant's modern requests served at its home; "none",
each served at the node the balancer hands it to."""
AFFINITIES: Final = ("tenant", "none")


class Local(Enum):
    """What the shell answers for a request this node is to serve itself."""

    HOME = "this node is the tenant's home, or the first of its order that can be reached"


TOKENLESS: Final = "mcp-rosetta: the tenant of a front without tokens"
"""The name of the one tenant every client is when the front asks no token."""


def weight(tenant: str | None, node: str) -> bytes:
    """How much `node` weighs for `tenant` (a credential's digest; None: the token-less
    tenant): the highest weight is the tenant's home."""
    name = TOKENLESS if tenant is None else tenant
    return hashlib.sha256(f"{name}\n{node}".encode()).digest()


def ranked(tenant: str | None, nodes: Iterable[str]) -> tuple[str, ...]:
    """`nodes` (addresses, each once) in `tenant`'s order: its home first, then the node
    that takes its requests while the home cannot be reached, and so on."""
    return tuple(sorted(set(nodes), key=lambda node: weight(tenant, node), reverse=True))
