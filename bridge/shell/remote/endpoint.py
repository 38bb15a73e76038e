"""Where the remote server is and what every request to it carries, from the settings.

Must stay cheap to import (the command line checks the headers before trio is imported, and
httpx2 must come after trio): no HTTP here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bridge.config import with_environment
from bridge.shell.settings import ShellConfig


@dataclass(frozen=True, slots=True)
class Network:
    """How the upstream treats the connections to the endpoint (ShellConfig's fields)."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    connections: int = 16
    """Requests in flight at once; the pool holds a few more (streams, one-way POSTs)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    """The user's headers (--header), `${VAR}` already taken from the environment; their
    values are never logged."""
    network: Network = Network()


def resolve(shell: ShellConfig, environ: Mapping[str, str]) -> Endpoint:
    """`shell.url` with its headers' ${VAR} taken from `environ` (ConfigError naming an unset
    one)."""
    assert shell.url is not None
    network = Network(shell.connect_timeout, shell.read_timeout, shell.max_upstream_connections)
    return Endpoint(shell.url, with_environment(shell.headers, environ), network)
