"""A node's address, and which addresses are the fleet's: a node forwards a request only to
an address its own settings name as the fleet's, whatever a session id says.

Must not resolve names (the shell resolves `fleet_dns` and tells which hosts are its own).

A fleet is given one of two ways: `fleet_nodes`, every node's address (the node's own among
them), or `fleet_dns`, a name that resolves to every node's IP address (a Kubernetes
headless Service's name). An address is `http://HOST:PORT` (https too), with no path: the
nodes serve the same path.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

EXAMPLE = '"http://10.0.0.2:8808"'


def address(value: object) -> str:
    """`value` as a node address, `scheme://host:port` in lower case; ValueError saying what
    one looks like otherwise."""
    parts = urlsplit(value) if isinstance(value, str) else None
    try:
        port = parts.port if parts is not None else None
    except ValueError:
        port = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or port is None or parts.path not in ("", "/") or parts.query or parts.username:
        raise ValueError(f"expected a node's address as http://HOST:PORT, e.g. {EXAMPLE}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host.lower()}:{port}"


def node_name(value: object) -> str:
    """A node's name: visible ASCII, as it goes into log lines and headers."""
    if not isinstance(value, str) or not value or not all("!" <= c <= "~" for c in value):
        raise ValueError('expected a name of visible ASCII characters, e.g. "node-a"')
    return value


def dns_name(value: object) -> str:
    """A host name that resolves to every node (`fleet_dns`), in lower case."""
    if not isinstance(value, str) or not re.fullmatch(
            r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", value):
        raise ValueError('expected a host name, e.g. "mcp-rosetta.default.svc.cluster.local"')
    return value.lower()


def host_of(node: str) -> str:
    """The host of an address `address` gave (an IPv6 one without its brackets)."""
    return urlsplit(node).hostname or ""


def port_of(node: str) -> int:
    return urlsplit(node).port or 0


def peers(own: str, nodes: tuple[str, ...], resolved: frozenset[str] | None) -> tuple[str, ...]:
    """The other nodes' addresses: `nodes` but `own`; with `fleet_dns`, each address the
    name `resolved` to, on `own`'s scheme and port (every node serves the same)."""
    if resolved is None:
        return tuple(node for node in nodes if node != own)
    scheme, port = own.split("://", 1)[0], port_of(own)
    found = (address(f"{scheme}://{f'[{ip}]' if ':' in ip else ip}:{port}")
             for ip in sorted(resolved))
    return tuple(node for node in found if node != own)


def listed(node: str, nodes: tuple[str, ...], resolved: frozenset[str] | None) -> bool:
    """Whether `node` is the fleet's: one of `nodes`, or (`fleet_dns`) an address whose host
    is one of the IP addresses the fleet's name `resolved` to."""
    if node in nodes:
        return True
    return resolved is not None and host_of(node) in resolved
