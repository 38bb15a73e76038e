"""The front's OAuth gate as the configuration describes it: the URL its tokens must name
and the introspection client's secret, read before the front starts.

Must not check tokens (`oauth_gate.py`) nor fetch anything (the gate does once the front
runs). A secret is read from its file, never from the command line, and never logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.errors import ConfigError
from bridge.shell.http.address import Address
from bridge.shell.logs import Logger
from bridge.shell.settings import OAuthResource

if TYPE_CHECKING:
    from bridge.shell.http.oauth_gate import Gate

WILDCARDS = ("0.0.0.0", "::", "")


def read_secret(oauth: OAuthResource | None) -> str | None:
    """The introspection client's secret, the file's first line; None without one."""
    if oauth is None or oauth.introspection_secret_file is None:
        return None
    where = oauth.introspection_secret_file
    try:
        with open(where, encoding="utf-8") as file:
            secret = file.readline().strip()
    except OSError as exc:
        raise ConfigError(f"[oauth] introspection_secret_file {where}: cannot read it "
                          f"({exc.strerror or exc}): write the introspection client's secret "
                          "there (one line, chmod 600)") from None
    if not secret:
        raise ConfigError(f"[oauth] introspection_secret_file {where} is empty: write the "
                          "introspection client's secret there (one line, chmod 600)")
    return secret


def front_url(oauth: OAuthResource, address: Address, port: int) -> str:
    """The URL access tokens must name: `audience`, else the front's own --listen URL."""
    if oauth.audience is not None:
        return oauth.audience
    if address.host in WILDCARDS:
        raise ConfigError(f"the front listens on every address ({address.host or '*'}), so "
                          "its URL is not known: set [oauth] audience (--oauth-audience) to "
                          "the URL clients reach it at, e.g. https://mcp.example.com/mcp")
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"http://{host}:{port}{address.path}"


def oauth_gate(oauth: OAuthResource, secret: str | None, address: Address, port: int,
               log: Logger) -> Gate:
    """The gate of the front (its keys not fetched yet: `Gate.start`)."""
    from bridge.oauth.resource import policy
    from bridge.shell.http.oauth_gate import Gate

    rules = policy(front_url(oauth, address, port), oauth.issuer, oauth.scopes)
    client = None
    if oauth.introspection_client_id is not None and secret is not None:
        client = (oauth.introspection_client_id, secret)
    log.info("oauth.resource", resource=rules.resource, issuer=rules.issuer,
             scopes=list(rules.scopes), introspection=client is not None)
    return Gate(rules, log, jwks_url=oauth.jwks_url, introspection_client=client)
