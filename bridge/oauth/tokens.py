"""The token endpoint: the forms of the code exchange and the refresh (with RFC 8707
`resource`), the client's authentication, the answers, and when to refresh.

Must not put a token, a code or a secret in an error's text.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from bridge.oauth.errors import GrantRefused, OAuthError
from bridge.oauth.registration import ClientIdentity

REFRESH_MARGIN = 60.0
"""Seconds before expiry a token is refreshed, so a request never leaves with a token that
expires on the way."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What the token endpoint gave, and when the access token expires (None: not said)."""

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: tuple[str, ...] = ()

    def __repr__(self) -> str:  # never a token in a log or a traceback
        return f"Grant(expires_at={self.expires_at!r}, scope={self.scope!r})"

    def due(self, now: float, margin: float = REFRESH_MARGIN) -> bool:
        """Whether the access token is expired or about to be."""
        return self.expires_at is not None and now >= self.expires_at - margin


def code_form(client: ClientIdentity, code: str, verifier: str, redirect_uri: str,
              resource: str) -> dict[str, str]:
    """The authorization code grant (OAuth 2.1 §4.1.3) with the PKCE verifier."""
    return {"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
            "redirect_uri": redirect_uri, "resource": resource,
            "client_id": client.client_id}


def refresh_form(client: ClientIdentity, refresh_token: str, resource: str,
                 scope: tuple[str, ...]) -> dict[str, str]:
    """The refresh token grant (OAuth 2.1 §4.3), `resource` included (RFC 8707 §2.2)."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token,
            "resource": resource, "client_id": client.client_id}
    if scope:
        form["scope"] = " ".join(scope)
    return form


def client_credentials_form(client: ClientIdentity, resource: str,
                            scope: str | None) -> dict[str, str]:
    """The client credentials grant (OAuth 2.1 §4.2): a service acting for itself, no user
    and no refresh token (a new grant is asked for when the token is due), `resource`
    included (RFC 8707 §2.2)."""
    form = {"grant_type": "client_credentials", "resource": resource,
            "client_id": client.client_id}
    if scope:
        form["scope"] = scope
    return form


def authenticate(client: ClientIdentity, form: dict[str, str],
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """The headers and form that present the client at the token endpoint: HTTP Basic with
    the form-encoded id and secret (RFC 6749 §2.3.1), or both in the form, or the id alone."""
    if client.client_secret is None or client.auth_method == "none":
        return {}, form
    if client.auth_method == "client_secret_post":
        return {}, {**form, "client_secret": client.client_secret}
    pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
    basic = base64.b64encode(pair.encode()).decode("ascii")
    rest = {k: v for k, v in form.items() if k != "client_id"}
    return {"Authorization": f"Basic {basic}"}, rest


def token_answer(status: int, document: Any, now: float, issuer: str,
                 previous: Grant | None = None) -> Grant:
    """The grant in a token endpoint's answer (OAuth 2.1 §3.2.3), or the refusal as an
    error: GrantRefused for `invalid_grant` (the code or refresh token is dead). A refresh
    answer without a new refresh token keeps the previous one."""
    if not isinstance(document, Mapping):
        raise OAuthError(f"the token endpoint of {issuer} answered {status} without JSON")
    if status != 200 or "error" in document:
        error = document.get("error")
        described = document.get("error_description")
        text = f"the token endpoint of {issuer} refused ({status} {error or 'no error code'}" \
               + (f": {described})" if isinstance(described, str) else ")")
        raise (GrantRefused if error == "invalid_grant" else OAuthError)(text)
    token, kind = document.get("access_token"), document.get("token_type")
    if not isinstance(token, str) or not token:
        raise OAuthError(f"the token endpoint of {issuer} gave no access_token")
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise OAuthError(f"the token endpoint of {issuer} gave a {kind!r} token, not Bearer")
    lifetime = document.get("expires_in")
    expires_at = now + float(lifetime) if isinstance(lifetime, int | float) else None
    refresh = document.get("refresh_token")
    scope = document.get("scope")
    grant = Grant(token, refresh if isinstance(refresh, str) and refresh else None,
                  expires_at, tuple(scope.split()) if isinstance(scope, str) else ())
    if previous is not None:
        if grant.refresh_token is None:
            grant = replace(grant, refresh_token=previous.refresh_token)
        if not grant.scope:
            grant = replace(grant, scope=previous.scope)
    return grant
