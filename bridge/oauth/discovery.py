"""Where a server's authorization server is, and what it offers: the metadata documents'
URLs in the order the specification gives, and their checks.

Authorization Server Discovery §Protected Resource Metadata Discovery Requirements (RFC 9728)
and §Authorization Server Metadata Discovery (RFC 8414 §3.1, §3.3, §5 and OpenID Connect
Discovery 1.0 §4.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bridge.oauth.errors import OAuthError

PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
OAUTH_SERVER = "/.well-known/oauth-authorization-server"
OPENID = "/.well-known/openid-configuration"


def protected_resource_urls(server_url: str, from_header: str | None) -> list[str]:
    """The protected resource metadata to try, in order: the header's `resource_metadata`
    when present; else at the path of the MCP endpoint, then at the root."""
    if from_header:
        return [from_header]
    parts = urlsplit(server_url)
    path = parts.path.rstrip("/")
    urls = [urlunsplit((parts.scheme, parts.netloc, PROTECTED_RESOURCE + path, "", ""))]
    if path:
        urls.append(urlunsplit((parts.scheme, parts.netloc, PROTECTED_RESOURCE, "", "")))
    return urls


def authorization_server_urls(issuer: str) -> list[str]:
    """The metadata URLs of `issuer`, in the order the specification requires: OAuth with
    path insertion, OpenID Connect with path insertion, OpenID Connect path appending (the
    last two are one URL when the issuer has no path)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(path_: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, path_, "", ""))

    urls = [at(OAUTH_SERVER + path), at(OPENID + path)]
    if path:
        urls.append(at(path + OPENID))
    return urls


def canonical_resource(server_url: str) -> str:
    """The server's canonical URI (Canonical Server URI, RFC 8707 §2): scheme and host in
    lower case, no fragment, no trailing slash."""
    parts = urlsplit(server_url)
    path = parts.path.rstrip("/") if parts.path != "/" else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """The server's protected resource metadata, checked against the URL the client uses."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None


def protected_resource(document: Any, server_url: str) -> ProtectedResource:
    """The metadata document fetched for `server_url`, checked: it names at least one
    authorization server, and its `resource` is the server or a URL above it (RFC 9728 §3.3;
    a token for another resource must not be asked for)."""
    if not isinstance(document, Mapping):
        raise OAuthError(f"the protected resource metadata of {server_url} is not a JSON object")
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(
            isinstance(s, str) and s for s in servers):
        raise OAuthError(f"the protected resource metadata of {server_url} names no "
                         "authorization server (authorization_servers)")
    resource = document.get("resource")
    own = canonical_resource(server_url)
    if resource is None:
        resource = own
    if not isinstance(resource, str) or not covers(canonical_resource(resource), own):
        raise OAuthError(f"the protected resource metadata of {server_url} is for another "
                         f"resource ({resource!r}): not signing in for it")
    return ProtectedResource(canonical_resource(resource), tuple(servers),
                             _strings(document.get("scopes_supported")))


def covers(resource: str, server: str) -> bool:
    """Whether a token for `resource` may be used at `server`: same origin, and the server's
    path is the resource's path or below it."""
    r, s = urlsplit(resource), urlsplit(server)
    if (r.scheme, r.netloc) != (s.scheme, s.netloc):
        return False
    base = r.path.rstrip("/")
    return s.path.rstrip("/") == base or s.path.startswith(base + "/")


@dataclass(frozen=True, slots=True)
class AuthorizationServer:
    """An authorization server's metadata, its `issuer` checked and PKCE S256 offered."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods: tuple[str, ...] = ("client_secret_basic",)
    client_id_metadata_document_supported: bool = False
    iss_parameter_supported: bool = False
    device_authorization_endpoint: str | None = None
    """Where device authorization (RFC 8628 §4) starts, when the server offers it."""


def authorization_server(document: Any, issuer: str) -> AuthorizationServer:
    """The metadata fetched from one of `issuer`'s well-known URLs, checked: its `issuer` is
    identical to the one the URL was built from (else it must not be used), it has the two
    endpoints, and it offers PKCE with S256 (Authorization Code Protection: a client must
    refuse to go on when `code_challenge_methods_supported` is absent or lacks S256)."""
    if not isinstance(document, Mapping):
        raise OAuthError(f"the metadata of the authorization server {issuer} is not a JSON "
                         "object")
    if document.get("issuer") != issuer:
        raise OAuthError(f"the metadata fetched for the authorization server {issuer} names "
                         f"another issuer ({document.get('issuer')!r}): not using it")
    endpoints = [document.get(k) for k in ("authorization_endpoint", "token_endpoint")]
    if not all(isinstance(e, str) and e for e in endpoints):
        raise OAuthError(f"the authorization server {issuer} gives no authorization_endpoint "
                         "or token_endpoint")
    if "S256" not in (_strings(document.get("code_challenge_methods_supported")) or ()):
        raise OAuthError(f"the authorization server {issuer} does not offer PKCE with S256 "
                         "(code_challenge_methods_supported): signing in without it is not "
                         "safe, so mcp-rosetta does not")
    registration = document.get("registration_endpoint")
    device = document.get("device_authorization_endpoint")
    return AuthorizationServer(
        issuer=issuer, authorization_endpoint=str(endpoints[0]),
        token_endpoint=str(endpoints[1]),
        registration_endpoint=registration if isinstance(registration, str) else None,
        scopes_supported=_strings(document.get("scopes_supported")),
        token_endpoint_auth_methods=_strings(document.get(
            "token_endpoint_auth_methods_supported")) or ("client_secret_basic",),
        client_id_metadata_document_supported=document.get(
            "client_id_metadata_document_supported") is True,
        iss_parameter_supported=document.get(
            "authorization_response_iss_parameter_supported") is True,
        device_authorization_endpoint=device if isinstance(device, str) and device else None)


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(v for v in value if isinstance(v, str))
