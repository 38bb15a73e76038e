"""The front's listen address (`http://HOST:PORT/PATH`) and the Host and Origin values it
accepts: its own names, and those the allowlist adds (`allowed_hosts`, `allowed_origins`).

Must not bind or serve: `front.py` does. A DNS-rebinding page reaches a loopback port under a
name of its own (streamable-http.mdx §Security & Endpoint), so only the front's own names,
with its port, and the names the operator allowed pass the Host check, and an Origin naming
one of them (or allowed as an origin) passes the Origin check.
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


def parse_address(text: str, default_path: str = "/mcp") -> Address:
    """`http://HOST:PORT/PATH` as an Address (`default_path` if it names none); ValueError
    naming what is wrong."""
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
    path = parts.path or default_path
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


def _split_hostport(text: str) -> tuple[str, str | None]:
    """`name:port`, `[v6]:port`, `name` or `[v6]` as (name, port or None); the name keeps an
    IPv6 address's brackets, as a Host header writes it."""
    if text.startswith("["):
        name, _, rest = text.partition("]")
        return f"{name}]", rest[1:] if rest.startswith(":") else None
    name, colon, port = text.rpartition(":")
    return (name, port) if colon else (text, None)


def allowed_host(value: object) -> str:
    """An `allowed_hosts` entry (`mcp.example.com`, `mcp.example.com:443`, `[::1]:8808`) in
    lower case; ValueError naming the form expected."""
    expected = "expected a host name, with or without :PORT (mcp.example.com:443)"
    if not isinstance(value, str) or not value or any(c in value for c in "/@ \t"):
        raise ValueError(expected)
    name, port = _split_hostport(value.lower())
    bad_name = not name or name == "[]" or (":" in name and not name.startswith("["))
    bad_port = port is not None and not (port.isdigit() and int(port) <= 65535)
    if bad_name or bad_port:
        raise ValueError(expected)
    return value.lower()


def allowed_origin(value: object) -> str:
    """An `allowed_origins` entry (`https://app.example.com`) as the front compares it:
    `scheme://host:port`, lower case, the default port explicit; ValueError otherwise."""
    expected = "expected an origin: http:// or https://, a host and an optional :PORT"
    if not isinstance(value, str):
        raise ValueError(expected)
    parts = urlsplit(value)
    hostport = origin_host(value)
    if hostport is None or parts.path not in ("", "/") or parts.query or parts.fragment \
            or parts.username or parts.password:
        raise ValueError(expected)
    return f"{parts.scheme.lower()}://{hostport}"


@dataclass(frozen=True, slots=True)
class Names:
    """The Host and Origin values the front accepts (all lower case)."""

    hosts: frozenset[str]
    """`host:port` exactly: the front's own names, and allowed hosts given with a port."""
    any_port: frozenset[str] = frozenset()
    """Allowed hosts given without a port: with any port, or none (a proxy's `Host`)."""
    origins: frozenset[str] = frozenset()
    """Allowed origins, `scheme://host:port`."""

    def admits_host(self, host: str) -> bool:
        return host in self.hosts or (bool(self.any_port)
                                      and _split_hostport(host)[0] in self.any_port)

    def admits_origin(self, origin: str) -> bool:
        """An Origin naming an admitted host, or one allowed as an origin."""
        hostport = origin_host(origin)
        if hostport is None:
            return False
        if self.admits_host(hostport):
            return True
        scheme = origin.partition(":")[0].lower()
        return bool(self.origins) and f"{scheme}://{hostport}" in self.origins


def front_names(host: str, port: int, allowed_hosts: tuple[str, ...] = (),
                allowed_origins: tuple[str, ...] = ()) -> Names:
    """The front's own names (`own_hosts`) with the allowlist's on top (normalised again:
    the settings' are already, entries given in code may not be)."""
    hosts = {allowed_host(entry) for entry in allowed_hosts}
    exact = {entry for entry in hosts if _split_hostport(entry)[1] is not None}
    return Names(own_hosts(host, port) | exact, frozenset(hosts - exact),
                 frozenset(allowed_origin(entry) for entry in allowed_origins))
