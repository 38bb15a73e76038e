"""The authorization request and its redirect: PKCE S256, `state`, RFC 8707 `resource`, the
scope selection, and the checks of the answer (RFC 9207 `iss`).

Authorization Flow Steps, Authorization Response Validation, Resource Parameter
Implementation, Scope Selection Strategy and Authorization Code Protection.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from bridge.oauth.challenge import Challenge
from bridge.oauth.discovery import AuthorizationServer, ProtectedResource
from bridge.oauth.errors import OAuthError

OFFLINE_ACCESS = "offline_access"
SIGN_IN_TIMEOUT = 300.0
"""Seconds the user has to finish signing in in the browser."""


def code_challenge(verifier: str) -> str:
    """PKCE S256 (RFC 7636 §4.2): BASE64URL(SHA256(verifier)), unpadded."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def select_scope(challenge: Challenge | None, resource: ProtectedResource,
                 server: AuthorizationServer, granted: tuple[str, ...] = ()) -> str | None:
    """The scope to ask for: the challenge's `scope` when it names one (authoritative for
    the operation), else every `scopes_supported` of the resource, else none (the parameter
    is left out); with the scopes granted before (a step-up keeps them), and
    `offline_access` where the authorization server lists it (a refresh token is wanted)."""
    if challenge is not None and challenge.scope is not None:
        wanted = list(challenge.scope)
    elif resource.scopes_supported is not None:
        wanted = list(resource.scopes_supported)
    else:
        wanted = []
    scopes = list(dict.fromkeys([*granted, *wanted]))
    if OFFLINE_ACCESS in (server.scopes_supported or ()) and OFFLINE_ACCESS not in scopes:
        scopes.append(OFFLINE_ACCESS)
    return " ".join(scopes) or None


@dataclass(frozen=True, slots=True)
class PendingAuthorization:
    """What the client records before sending the user to the authorization server, to
    check and finish the answer: the PKCE verifier, the state, and the issuer recorded from
    the validated metadata (Authorization Response Validation)."""

    issuer: str
    iss_required: bool
    state: str
    verifier: str
    redirect_uri: str
    resource: str
    scope: str | None


def authorization_url(server: AuthorizationServer, client_id: str,
                      pending: PendingAuthorization) -> str:
    """The URL the user's browser opens: an authorization code request with PKCE S256,
    `state`, `resource` (RFC 8707) and the selected scope."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": pending.redirect_uri,
        "state": pending.state,
        "code_challenge": code_challenge(pending.verifier),
        "code_challenge_method": "S256",
        "resource": pending.resource,
    }
    if pending.scope:
        query["scope"] = pending.scope
    joiner = "&" if urlsplit(server.authorization_endpoint).query else "?"
    return server.authorization_endpoint + joiner + urlencode(query)


LANDING = (b"<!doctype html><title>mcp-rosetta</title><p>Signed in: mcp-rosetta has what it "
           b"needs. You can close this window.</p>")


def redirect_landing(is_callback: bool) -> tuple[int, bytes]:
    """What the loopback listener answers the browser (status, HTML body): the landing page
    at the redirect URI's path, 404 anywhere else (a favicon, a stray request)."""
    return (200, LANDING) if is_callback else (404, b"not found")


def authorization_code(pending: PendingAuthorization, answer: Mapping[str, str]) -> str:
    """The code from the redirect's query `answer`, after its checks: the `iss` as RFC 9207
    §2.4 and the specification's table say (compared as strings, before anything else is
    read; on a mismatch nothing of the answer is acted on or shown), then the `state`."""
    iss = answer.get("iss")
    if iss is None and pending.iss_required:
        raise OAuthError(f"the authorization server {pending.issuer} advertises the iss "
                         "parameter but its answer has none: rejected (RFC 9207)")
    if iss is not None and iss != pending.issuer:
        raise OAuthError(f"the authorization answer names the issuer {iss!r}, not "
                         f"{pending.issuer!r}: rejected (RFC 9207)")
    if answer.get("state") != pending.state:
        raise OAuthError("the authorization answer's state is not the one sent: rejected")
    if "error" in answer:
        described = answer.get("error_description")
        raise OAuthError(f"the authorization server {pending.issuer} refused: "
                         f"{answer['error']}" + (f" ({described})" if described else ""))
    code = answer.get("code")
    if not code:
        raise OAuthError("the authorization answer has no code")
    return code


STEP_UPS = 2
"""Sign-ins one request may cause after `insufficient_scope` answers before its refusal is
final (Scope Challenge Handling: a client must not loop on a server that keeps asking)."""
