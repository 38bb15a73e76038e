"""The front's listen address (`http://HOST:PORT/PATH`) and the Host and Origin values it
accepts as its own.

Must not bind or serve: `front.py` does. A DNS-rebinding page reaches a loopback port under a
name of its own (streamable-http.mdx §Security & Endpoint), so only the front's own names,
with its port, pass the Host check, and an Origin naming one of them passes the Origin check.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    """As written, without brackets for IPv6."""
    port: int
    """0: any free port (the tests' way); the bound one is the socket's."""
    path: str


def parse_address(text: str) -> Address:
    """`http://HOST:PORT/PATH` as an Address; ValueError naming what is wrong."""
    parts = urlsplit(text)
    if parts.scheme != "http":
        raise ValueError("expected http://HOST:PORT/PATH (TLS is a reverse proxy's job)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r}: the port is not a number from 0 to 65535") from None
    if not parts.hostname or port is None:
        raise ValueError("expected http://HOST:PORT/PATH, with a host and a port")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("the address takes no user, query or fragment")
    path = parts.path or "/mcp"
    return Address(parts.hostname, port, path)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def own_hosts(host: str, port: int) -> frozenset[str]:
    """The Host header values (lower case) naming this front: the bound host with its port,
    and, on loopback, every loopback name with it."""
    bound = f"[{host}]" if ":" in host else host
    names = {bound.lower()}
    if is_loopback(host):
        names.update(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in names)


def origin_host(origin: str) -> str | None:
    """The `host:port` an Origin names (its scheme's default port made explicit), or None
    for one that names no host (`null`, garbage)."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host.lower()}:{port}"
