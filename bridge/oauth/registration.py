"""Which client identity to sign in with, in the order Client Registration gives:
pre-registered client information, a Client ID Metadata Document where the authorization
server supports them, Dynamic Client Registration (RFC 7591) where it offers it, else a
message that says what the user must register and how to give it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bridge.oauth.discovery import AuthorizationServer
from bridge.oauth.errors import OAuthError

CLIENT_NAME = "mcp-rosetta"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
"""The grant type of device authorization (RFC 8628 §3.4)."""


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """Who signs in at one authorization server (Authorization Server Binding: bound to it)."""

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    """How the token endpoint is told the secret: none, client_secret_basic, _post."""
    issuer: str = ""
    """The authorization server this identity belongs to; never offered to another one."""

    def __repr__(self) -> str:  # never the secret in a log or a traceback
        return f"ClientIdentity({self.client_id!r}, {self.auth_method!r}, {self.issuer!r})"


@dataclass(frozen=True, slots=True)
class Preregistered:
    """What the user gave: --oauth-client-id, the secret read from a file or the
    environment, --oauth-client-metadata-url."""

    client_id: str | None = None
    client_secret: str | None = None
    metadata_url: str | None = None
    client_credentials: bool = False
    """A service: the client signs in as itself (client credentials grant), never a user."""

    def __repr__(self) -> str:  # never the secret in a log or a traceback
        return (f"Preregistered({self.client_id!r}, metadata_url={self.metadata_url!r}, "
                f"client_credentials={self.client_credentials!r})")


class Register:
    """The choice to register dynamically (the request is `registration_request`)."""


def choose_identity(given: Preregistered, server: AuthorizationServer, redirect_uri: str,
                    ) -> ClientIdentity | Register:
    """The identity to use with `server`, or the decision to register dynamically."""
    if given.client_id:
        return ClientIdentity(given.client_id, given.client_secret,
                              auth_method(given.client_secret, server), server.issuer)
    if given.metadata_url and server.client_id_metadata_document_supported:
        return ClientIdentity(given.metadata_url, issuer=server.issuer)
    if server.registration_endpoint:
        return Register()
    cimd = (" or, as it supports Client ID Metadata Documents, host one and give its URL "
            "with --oauth-client-metadata-url URL"
            if server.client_id_metadata_document_supported else "")
    raise OAuthError(
        f"the authorization server {server.issuer} offers no way for mcp-rosetta to register "
        f"itself: register a client there (a native app, redirect URI {redirect_uri}, "
        "grant types authorization_code and refresh_token) and give its id with "
        "--oauth-client-id ID (and its secret, if it has one, with "
        f"--oauth-client-secret-file FILE or $MCP_ROSETTA_OAUTH_CLIENT_SECRET){cimd}")


def auth_method(secret: str | None, server: AuthorizationServer) -> str:
    """How to present `secret` at the token endpoint: client_secret_basic unless the server
    offers only client_secret_post (RFC 8414 `token_endpoint_auth_methods_supported`)."""
    if secret is None:
        return "none"
    methods = server.token_endpoint_auth_methods
    if "client_secret_basic" not in methods and "client_secret_post" in methods:
        return "client_secret_post"
    return "client_secret_basic"


def registration_request(redirect_uri: str, scope: str | None,
                         device: bool = False) -> dict[str, Any]:
    """The client metadata sent to the registration endpoint: a native application
    (`application_type`, OpenID Connect Registration §2) using a loopback redirect, wanting
    refresh tokens (grant_types), as a public client; and device authorization too where the
    server offers it (`device`), so the one client signs in either way."""
    grants = ["authorization_code", "refresh_token", *([DEVICE_GRANT] if device else [])]
    body: dict[str, Any] = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }
    if scope:
        body["scope"] = scope
    return body


def registered_identity(document: Any, server: AuthorizationServer) -> ClientIdentity:
    """The identity the registration endpoint gave (RFC 7591 §3.2.1)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("client_id"), str):
        raise OAuthError(f"the authorization server {server.issuer} answered the registration "
                         "without a client_id")
    secret = document.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    method = document.get("token_endpoint_auth_method")
    if not isinstance(method, str) or method not in (
            "none", "client_secret_basic", "client_secret_post"):
        method = auth_method(secret, server)
    if secret is None:
        method = "none"
    return ClientIdentity(document["client_id"], secret, method, server.issuer)
