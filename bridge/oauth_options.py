"""`[oauth]` and serve's --oauth-* flags: the HTTP front as an OAuth resource server.

Must not start or fetch anything: the table's keys are checked (a bad value is a ValueError
naming the key, as every key of bridge/config.py), the flags added to serve's parser, and
the two merged into the shell's `OAuthResource`. Imported only when the table or a flag is
there, or serve's parser is built.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from bridge.errors import ConfigError
from bridge.shell.settings import OAuthResource

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def secure_url(value: Any) -> str:
    """An https URL, or http on a loopback host (a test's, or a local setup's): the keys
    and the identities of the front's users travel on it (Authorization, Communication
    Security: every authorization server endpoint is https)."""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or not parts.hostname or parts.fragment or not (
            parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)):
        raise ValueError('expected an https:// URL (http:// on loopback only), e.g. '
                         '"https://auth.example.com"')
    return str(value)


def issuer_url(value: Any) -> str:
    """An authorization server's issuer identifier (RFC 8414 §2): a secure URL without
    query or fragment."""
    secure_url(value)
    if urlsplit(value).query:
        raise ValueError("an issuer has no query: give the authorization server's issuer, "
                         'e.g. "https://auth.example.com/realms/mcp"')
    return str(value)


def client_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\r\n\0"):
        raise ValueError("expected a client id, a one-line string")
    return value.strip()


def secret_file(value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError("expected a file path")
    return os.path.abspath(os.path.expanduser(value))


def scope_name(value: Any) -> str:
    """An OAuth scope token (RFC 6749 §3.3): printable ASCII without space, " or \\."""
    if not isinstance(value, str) or not value or not all(
            "!" <= c <= "~" and c not in '"\\' for c in value):
        raise ValueError('expected a scope, e.g. "mcp" (no spaces: one scope each)')
    return value


def scope_names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise ValueError('expected an array of scopes, e.g. ["mcp"]')
    return tuple(scope_name(v) for v in value)


TABLE_KEYS: dict[str, Callable[[Any], Any]] = {
    "issuer": issuer_url,
    "audience": secure_url,
    "jwks_url": secure_url,
    "scopes": scope_names,
    "introspection_client_id": client_id,
    "introspection_secret_file": secret_file,
}
"""The keys of the `[oauth]` table; serve's flag of each is --oauth-KEY (with dashes;
--oauth-scope, repeated, for `scopes`)."""


def checked_table(value: Any) -> dict[str, Any]:
    """`[oauth]`'s keys, each known and good."""
    if not isinstance(value, dict):
        raise ValueError('expected a table, e.g. [oauth] issuer = "https://auth.example.com"')
    checked = {}
    for key, item in value.items():
        check = TABLE_KEYS.get(key)
        if check is None:
            import difflib  # only for a key that is not known

            near = difflib.get_close_matches(key, list(TABLE_KEYS), n=1)
            raise ValueError(f"unknown key {key!r}" + (f"; did you mean {near[0]}?"
                                                        if near else ""))
        try:
            checked[key] = check(item)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return checked


def oauth_resource(table: Mapping[str, Any]) -> OAuthResource:
    """The table (the file's, the flags' on top) as the front's settings."""
    if "issuer" not in table:
        raise ConfigError('[oauth]: no issuer: set issuer = "https://auth.example.com" (or '
                          "--oauth-issuer), the authorization server whose tokens the front "
                          "takes")
    if ("introspection_client_id" in table) != ("introspection_secret_file" in table):
        raise ConfigError("[oauth]: introspection_client_id and introspection_secret_file "
                          "go together: give both, or neither")
    return OAuthResource(**{**table, "scopes": tuple(table.get("scopes", ()))})


def add_oauth_options(p: argparse.ArgumentParser,
                      checked: Callable[[Callable[[Any], Any]], Any]) -> None:
    """serve's --oauth-* flags; `checked` makes a check a flag's type."""
    oauth = p.add_argument_group("the HTTP front as an OAuth resource server ([oauth])")
    oauth.add_argument("--oauth-issuer", type=checked(issuer_url), metavar="URL",
                       help="take access tokens of this authorization server: each identity "
                            "(issuer and subject) is a tenant")
    oauth.add_argument("--oauth-audience", type=checked(secure_url), metavar="URL",
                       help="the front's URL as clients reach it, which tokens must name "
                            "(the --listen URL)")
    oauth.add_argument("--oauth-jwks-url", type=checked(secure_url), metavar="URL",
                       help="the issuer's key set (the one its metadata names)")
    oauth.add_argument("--oauth-scope", type=checked(scope_name), action="append",
                       dest="oauth_scopes", metavar="SCOPE",
                       help="a scope every request's token must grant; repeatable")
    oauth.add_argument("--oauth-introspection-client-id", type=checked(client_id),
                       metavar="ID", help="check opaque tokens by introspection (RFC 7662) "
                                          "as this client")
    oauth.add_argument("--oauth-introspection-secret-file", type=checked(secret_file),
                       metavar="FILE", help="that client's secret (never on the command line)")


def oauth_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The `oauth` table the flags give ({} for none)."""
    table = {key: getattr(args, f"oauth_{key}") for key in TABLE_KEYS
             if getattr(args, f"oauth_{key}", None) is not None}
    if "scopes" in table:
        table["scopes"] = tuple(table["scopes"])
    return {"oauth": table} if table else {}
