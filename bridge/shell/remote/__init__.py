"""The HTTP upstream: a Streamable HTTP server, to the driver one more server of JSON-RPC lines.

Must stay cheap to import (the command line reads it before trio is imported): `endpoint`
checks what a session needs before the bridge takes its fds; `opener` imports httpx2 (and so
anyio) only when called, after trio.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.config import with_environment
from bridge.shell.settings import ShellConfig

if TYPE_CHECKING:
    import trio

    from bridge.shell.logs import Logger
    from bridge.shell.remote.upstream import Feed, HttpUpstream
    from bridge.shell.session import OpenUpstream


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the server is, and what every request to it carries."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    """The user's headers (--header), `${VAR}` already taken from the environment; their
    values are never logged."""


def endpoint(shell: ShellConfig, environ: Mapping[str, str]) -> Endpoint:
    """`shell.url` with its headers' ${VAR} taken from `environ` (ConfigError naming an unset
    one)."""
    assert shell.url is not None
    return Endpoint(shell.url, with_environment(shell.headers, environ))


def opener(where: Endpoint, log: Logger, *, limit: int) -> OpenUpstream:
    """How a session opens its upstream to `where` once its nursery is open."""
    from bridge.shell.remote.upstream import HttpUpstream

    def open_upstream(driver: Feed, nursery: trio.Nursery) -> HttpUpstream:
        return HttpUpstream(where, driver, nursery, log, limit=limit)

    return open_upstream
