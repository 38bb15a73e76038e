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
class Endpoint:
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    """The user's headers (--header), `${VAR}` already taken from the environment; their
    values are never logged."""


def resolve(shell: ShellConfig, environ: Mapping[str, str]) -> Endpoint:
    """`shell.url` with its headers' ${VAR} taken from `environ` (ConfigError naming an unset
    one)."""
    assert shell.url is not None
    return Endpoint(shell.url, with_environment(shell.headers, environ))
