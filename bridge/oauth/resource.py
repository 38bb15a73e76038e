"""The front as an OAuth protected resource: what it publishes, what it answers a request
without a good token, and which access tokens it takes. No I/O: the shell fetches the keys
and the metadata (bridge/shell/http/oauth_gate.py) and hands the documents in.

Authorization (2026-07-28) §Authorization Server Location: the server publishes protected
resource metadata (RFC 9728) naming its authorization server, and its 401 names that
document (`WWW-Authenticate: Bearer resource_metadata="…"`, RFC 9728 §5.1); §Token Handling:
it takes only tokens issued for itself (the audience, RFC 8707), checks their expiry, and
never passes them on; §Scope Challenge Handling: a token short of a scope is 403 with
`error="insufficient_scope"` naming the scopes (RFC 6750 §3.1).

A token names an identity: its issuer and subject. The identity, never the token, is what
the front keys a tenant by and what its logs name (by a keyed digest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from bridge.oauth.discovery import PROTECTED_RESOURCE, canonical_resource

CLOCK_SKEW = 60.0
"""Seconds an `exp` may have passed, or an `nbf` be ahead, by the front's clock: the
authorization server's clock and the front's are never quite one."""
ASYMMETRIC = {"RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA",
              "PS384": "RSA", "PS512": "RSA", "ES256": "EC", "ES384": "EC", "ES512": "EC",
              "EdDSA": "OKP"}
"""The signature algorithms taken, with the key type each needs (RFC 7518 §3.1, RFC 8037):
`none` and the symmetric HS* are not among them, so a token cannot be signed by anyone
holding the public key, or by nobody."""
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class ResourcePolicy:
    """Who the front is to its authorization server and what it asks of a token."""

    resource: str
    """The front's canonical URL: the audience its tokens must name (RFC 8707 §2)."""
    issuer: str
    scopes: tuple[str, ...] = ()
    """Every request needs all of these."""

    @property
    def metadata_url(self) -> str:
        """Where its protected resource metadata is (RFC 9728 §3.1: the well-known path
        inserted before the resource's path)."""
        parts = urlsplit(self.resource)
        return urlunsplit((parts.scheme, parts.netloc, metadata_path(parts.path), "", ""))


def policy(resource: str, issuer: str, scopes: tuple[str, ...] = ()) -> ResourcePolicy:
    """The policy of a front at `resource` (its URL, made canonical) trusting `issuer`."""
    return ResourcePolicy(canonical_resource(resource), issuer, scopes)


def metadata_path(endpoint_path: str) -> str:
    """The path of the metadata of the endpoint at `endpoint_path`."""
    return PROTECTED_RESOURCE + endpoint_path.rstrip("/")


def resource_metadata(rules: ResourcePolicy) -> dict[str, Any]:
    """The protected resource metadata document (RFC 9728 §2)."""
    document: dict[str, Any] = {"resource": rules.resource,
                                "authorization_servers": [rules.issuer],
                                "bearer_methods_supported": ["header"],
                                "resource_name": "mcp-rosetta"}
    if rules.scopes:
        document["scopes_supported"] = list(rules.scopes)
    return document


def challenge(rules: ResourcePolicy, error: str | None = None,
              description: str | None = None) -> str:
    """The `WWW-Authenticate` value of a 401 (`error` "invalid_token" once a token was
    presented) or of a 403 (`error` "insufficient_scope"); it names the metadata and the
    scopes a request needs."""
    params = [f'resource_metadata="{rules.metadata_url}"']
    if rules.scopes:
        params.append(f'scope="{" ".join(rules.scopes)}"')
    if error is not None:
        params.append(f'error="{error}"')
    if description is not None:
        params.append(f'error_description="{_quotable(description)}"')
    return "Bearer " + ", ".join(params)


def _quotable(text: str) -> str:
    """RFC 6750 §3: error_description is printable ASCII without `"` or `\\`."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "'" for c in text)


class Rejected(Exception):
    """A token the front does not take: `problem` says why (never the token itself)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a token speaks for: the tenant is its issuer and subject together."""

    issuer: str
    subject: str
    scopes: frozenset[str] = frozenset()

    @property
    def key(self) -> bytes:
        """What names the tenant (never logged as it is: a digest of it is); a JSON array,
        so no issuer and subject can run together into another pair's."""
        return orjson.dumps(["oauth", self.issuer, self.subject])


def looks_like_jwt(token: str) -> bool:
    """Whether `token` has a JWT's three parts (RFC 7519 §7.2); else it is opaque and only
    introspection can say what it is."""
    return _JWT.fullmatch(token) is not None


def checked_header(header: Mapping[str, Any]) -> str:
    """The signature algorithm of a JWT's header, if one the front takes."""
    alg = header.get("alg")
    if alg not in ASYMMETRIC:
        raise Rejected(f"the token is signed with {alg!r}: only an authorization server's "
                       f"asymmetric signature is taken ({', '.join(ASYMMETRIC)})")
    return str(alg)


def key_for(keys: Any, kid: object, alg: str) -> Mapping[str, Any] | None:
    """The JWK of the key set `keys` that signed a token (its `kid`, of the type `alg`
    needs); None when the set has none such (a refreshed set may)."""
    found = keys.get("keys") if isinstance(keys, Mapping) else None
    usable = [k for k in found or () if isinstance(k, Mapping)
              and k.get("kty") == ASYMMETRIC[alg] and k.get("use", "sig") == "sig"
              and k.get("alg", alg) == alg]
    if kid is None:
        return usable[0] if len(usable) == 1 else None
    return next((k for k in usable if k.get("kid") == kid), None)


def identity_of_claims(claims: Mapping[str, Any], rules: ResourcePolicy,
                       now: float) -> Identity:
    """The identity of a JWT access token whose signature was verified (RFC 9068 §4):
    issued by the front's issuer, for the front, current within CLOCK_SKEW, naming a
    subject."""
    if claims.get("iss") != rules.issuer:
        raise Rejected(f"the token was issued by {claims.get('iss')!r}, not by "
                       f"{rules.issuer}")
    _check_audience(claims.get("aud"), rules, required=True)
    _check_times(claims, now, required=True)
    return _identity(claims, rules)


def identity_of_introspection(answer: Mapping[str, Any], rules: ResourcePolicy,
                              now: float) -> Identity:
    """The identity of an opaque token from its introspection answer (RFC 7662 §2.2):
    active, and where the answer says so, of the front's issuer and for the front."""
    if answer.get("active") is not True:
        raise Rejected("the authorization server says the token is not active (expired, "
                       "revoked or never issued)")
    if "iss" in answer and answer["iss"] != rules.issuer:
        raise Rejected(f"the token was issued by {answer['iss']!r}, not by {rules.issuer}")
    _check_audience(answer.get("aud"), rules, required=False)
    _check_times(answer, now, required=False)
    return _identity(answer, rules)


def _check_audience(aud: object, rules: ResourcePolicy, *, required: bool) -> None:
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
    if audiences is None:
        if required:
            raise Rejected("the token names no audience (aud): it is for no server")
        return
    if not any(isinstance(a, str) and canonical_resource(a) == rules.resource
               for a in audiences):
        raise Rejected(f"the token is for another server (aud {aud!r}), not "
                       f"{rules.resource}")


def _check_times(claims: Mapping[str, Any], now: float, *, required: bool) -> None:
    exp, nbf = _seconds(claims.get("exp")), _seconds(claims.get("nbf"))
    if exp is None:
        if required or "exp" in claims:
            raise Rejected("the token has no expiry (exp)")
    elif now > exp + CLOCK_SKEW:
        raise Rejected("the token has expired: the client is to get a new one")
    if "nbf" in claims and (nbf is None or now < nbf - CLOCK_SKEW):
        raise Rejected("the token is not valid yet (nbf)")


def _seconds(value: object) -> float | None:
    """A NumericDate (RFC 7519 §2), or None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _identity(claims: Mapping[str, Any], rules: ResourcePolicy) -> Identity:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise Rejected("the token names no subject (sub): it speaks for nobody")
    return Identity(rules.issuer, subject, _scopes(claims))


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """RFC 9068 §2.2.3 `scope` (space-separated), or the `scp` array some servers send."""
    scope, scp = claims.get("scope"), claims.get("scp")
    if isinstance(scope, str):
        return frozenset(scope.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


def missing_scopes(identity: Identity, rules: ResourcePolicy) -> tuple[str, ...]:
    """The scopes a request needs that the token does not grant: 403 when any."""
    return tuple(s for s in rules.scopes if s not in identity.scopes)


def server_endpoints(document: Any, issuer: str) -> tuple[str, str | None]:
    """From the authorization server's metadata (RFC 8414 §2): its `jwks_uri` and its
    `introspection_endpoint` (None when it has none). The document must be `issuer`'s own
    (§3.3), else the keys could be anyone's."""
    if not isinstance(document, Mapping):
        raise Rejected(f"the metadata of {issuer} is not a JSON object")
    if document.get("issuer") != issuer:
        raise Rejected(f"the metadata fetched for {issuer} names another issuer "
                       f"({document.get('issuer')!r}): set the issuer to exactly the "
                       "authorization server's own")
    jwks, introspection = document.get("jwks_uri"), document.get("introspection_endpoint")
    if not isinstance(jwks, str) or not jwks:
        raise Rejected(f"the metadata of {issuer} names no jwks_uri: set [oauth] jwks_url")
    return jwks, introspection if isinstance(introspection, str) and introspection else None
