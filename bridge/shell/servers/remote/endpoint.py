"""Where the remote server is and what every request to it carries, from the settings.

Must stay cheap to import (the command line checks the headers before trio is imported, and
httpx2 must come after trio): no HTTP here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bridge.errors import ConfigError
from bridge.oauth.registration import Preregistered
from bridge.shell.settings import ShellConfig

SECRET_VARIABLE = "MCP_ROSETTA_OAUTH_CLIENT_SECRET"
_VARIABLE = r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}"  # compiled by `re` at its first use


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
    oauth: Preregistered | None = None
    """How to sign in with OAuth when the server asks; None: the user's own Authorization
    header is sent instead."""
    interactive: bool = False
    """Whether a sign-in may open the user's browser (the stdio bridge); else only stored
    sign-ins are used and refreshed (the daemon, the HTTP front)."""


def resolve(shell: ShellConfig, environ: Mapping[str, str]) -> Endpoint:
    """`shell.url` with its headers' ${VAR} taken from `environ` (ConfigError naming an unset
    one)."""
    assert shell.url is not None
    network = Network(shell.connect_timeout, shell.read_timeout, shell.max_upstream_connections)
    headers = with_environment(shell.headers, environ)
    own = any(name.lower() == "authorization" for name, _ in headers)
    return Endpoint(shell.url, headers, network,
                    None if own else oauth_client(shell, environ))


def with_environment(headers: tuple[tuple[str, str], ...],
                     environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The headers with each ${VAR} replaced by its value; ConfigError for an unset one."""
    def value(name: str, text: str) -> str:
        def variable(match: re.Match[str]) -> str:
            found = environ.get(match[1])
            if found is None:
                raise ConfigError(f"header {name}: ${{{match[1]}}} is not set in the "
                                  f"environment; export it, or give the value itself")
            return found

        return re.sub(_VARIABLE, variable, text)

    return tuple((name, value(name, text)) for name, text in headers)



def oauth_client(shell: ShellConfig, environ: Mapping[str, str]) -> Preregistered:
    """The client the user registered (--oauth-client-id, its secret from a file or the
    environment, never the command line) or the metadata document they host."""
    secret = environ.get(SECRET_VARIABLE) or None
    if shell.oauth_client_secret_file is not None:
        try:
            with open(shell.oauth_client_secret_file, encoding="utf-8") as file:
                secret = file.read().strip() or None
        except OSError as exc:
            raise ConfigError(f"cannot read the OAuth client secret from "
                              f"{shell.oauth_client_secret_file}: {exc.strerror or exc}"
                              ) from None
    if secret is not None and shell.oauth_client_id is None:
        raise ConfigError("an OAuth client secret is given without its client id: add "
                          "--oauth-client-id ID (oauth_client_id = ...)")
    if shell.oauth_client_credentials and secret is None:
        raise ConfigError("signing in with client credentials needs the client's id and "
                          "secret: --oauth-client-id ID and --oauth-client-secret-file FILE "
                          f"(or ${SECRET_VARIABLE})")
    return Preregistered(shell.oauth_client_id, secret, shell.oauth_client_metadata_url,
                         shell.oauth_client_credentials)
