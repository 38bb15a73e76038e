"""The front's OAuth gate: a request's bearer token checked as an access token of the
configured authorization server, and the tenant it names.

Must not decide what a good token is (bridge/oauth/resource.py does) nor word an answer
(`replies.py`): this module fetches the authorization server's metadata and key set
(httpx2), keeps the keys, asks the introspection endpoint about an opaque token, and turns
an identity into the `Credential` tenants are keyed by. The key set is fetched at start and
again when a token names a key it lacks (a rotation), at most once per `REFRESH_EVERY`
seconds, so tokens naming made-up keys cannot make the front hammer the server. Imported
only when OAuth is configured: httpx2 and PyJWT load with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import trio

from bridge.errors import ConfigError
from bridge.oauth import signed
from bridge.oauth.discovery import authorization_server_urls
from bridge.oauth.resource import (
    Identity,
    Rejected,
    ResourcePolicy,
    challenge,
    checked_header,
    identity_of_claims,
    identity_of_introspection,
    key_for,
    looks_like_jwt,
    missing_scopes,
    resource_metadata,
    server_endpoints,
)
from bridge.shell.http.auth import SCHEME, Credential
from bridge.shell.logs import Logger
from bridge.streamable import replies

FETCH_TIMEOUT = 10.0
REFRESH_EVERY = 30.0
"""Seconds between two fetches of the key set for unknown keys."""
KEYS_MAX_AGE = 3600.0
"""Seconds after which a request fetches the key set again first (a key the server stopped
publishing stops working)."""
KEPT_FOR = 30.0
"""Seconds a good token's identity is kept (never past its expiry): a client sends the same
token with every request, and is checked once, not each time (RFC 7662 §4 lets a resource
keep an introspection answer so; a revocation takes effect within it)."""
TOKENS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class Introspection:
    """RFC 7662 §2.1: where opaque tokens are asked about, as which client (its secret
    read from a file, never given on the command line)."""

    endpoint: str
    client_id: str
    client_secret: str


class Refused(Exception):
    """A request the gate does not let in: 401 (no token, or one not taken), 403 (a scope
    missing) or 503 (the authorization server cannot be asked); `challenge` is the
    `WWW-Authenticate` value."""

    def __init__(self, status: int, problem: str, challenge: str | None) -> None:
        super().__init__(problem)
        self.status = status
        self.problem = problem
        self.challenge = challenge


class Gate:
    """Checks access tokens for one front (`rules`), with the keys at `jwks_url`."""

    def __init__(self, rules: ResourcePolicy, log: Logger, *, jwks_url: str | None = None,
                 introspection_client: tuple[str, str] | None = None,
                 link: IssuerLink | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """`jwks_url` None: the one the issuer's metadata names; `introspection_client`:
        the client id and secret to introspect opaque tokens with (None: JWTs only);
        `link`: how the authorization server is reached; `clock`: the time (Unix seconds,
        as a token's `exp`)."""
        self.rules = rules
        self._link = link or IssuerLink()
        self._clock = clock
        self._jwks_url = jwks_url
        self._client = introspection_client
        self._introspection: Introspection | None = None
        self._kept: dict[bytes, tuple[Identity, float]] = {}
        """Good tokens' identities by their SHA-256, and until when each is trusted."""
        self._log = log
        self._keys: Any = {"keys": []}
        self._fetched = -math.inf
        self._fetching = trio.Lock()
        self._digest_key = os.urandom(32)
        self.metadata = replies.oauth_metadata(resource_metadata(rules))
        """The answer at the front's protected resource metadata paths."""

    async def start(self) -> None:
        """The authorization server's metadata and keys fetched: a ConfigError naming the
        cause and the fix when they cannot be."""
        issuer = self.rules.issuer
        endpoint = None
        if self._jwks_url is None or self._client is not None:
            found_jwks, endpoint = await _server_endpoints(issuer, self._link)
            self._jwks_url = self._jwks_url or found_jwks
        if self._client is not None:
            if endpoint is None:
                raise ConfigError(f"[oauth] issuer {issuer}: its metadata names no "
                                  "introspection_endpoint, so opaque tokens cannot be "
                                  "checked; remove introspection_client_id, or use an "
                                  "authorization server that offers introspection (RFC 7662)")
            self._introspection = Introspection(endpoint, *self._client)
        try:
            await self.refresh()
        except Refused as refused:
            raise ConfigError(f"[oauth] jwks_url {self._jwks_url}: "
                              f"{refused.problem.split(';')[0]}: check that the "
                              "authorization server runs and the URL is its key set") from None

    async def admit(self, authorization: str | None) -> Credential:
        """The Credential of the identity a good token names; Refused otherwise."""
        if authorization is None:
            raise Refused(401, "no Authorization header: sign in with the authorization "
                          "server this server's metadata names", challenge(self.rules))
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != SCHEME or not token:
            raise Refused(401, "the Authorization header is not Bearer <token>",
                          challenge(self.rules))
        try:
            identity = await self._identity(token)
        except Rejected as rejected:
            raise Refused(401, rejected.problem, challenge(
                self.rules, "invalid_token", rejected.problem)) from None
        missing = missing_scopes(identity, self.rules)
        if missing:
            problem = f"the token does not grant the scope {' '.join(missing)}"
            raise Refused(403, problem, challenge(self.rules, "insufficient_scope", problem))
        return self.credential(identity)

    def credential(self, identity: Identity) -> Credential:
        """A keyed digest of the identity: one tenant per issuer and subject."""
        return Credential(hmac.digest(self._digest_key, identity.key, "sha256").hex()[:16])

    async def _identity(self, token: str) -> Identity:
        """The identity of `token`, from what was kept of it or checked now."""
        digest = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        kept = self._kept.get(digest)
        if kept is not None and now < kept[1]:
            return kept[0]
        if looks_like_jwt(token):
            identity, expiry = await self._verified(token, now)
        elif self._introspection is None:
            raise Rejected("the token is not a JWT, and no introspection is configured to "
                           "ask the authorization server about it")
        else:
            answer = await self._link.introspect(self._introspection, token)
            identity, expiry = identity_of_introspection(answer, self.rules, now), \
                _seconds(answer.get("exp"))
        if len(self._kept) >= TOKENS_KEPT:
            self._kept.clear()  # a flood of tokens: start again, bounded
        self._kept[digest] = (identity, min(now + KEPT_FOR, expiry))
        return identity

    async def _verified(self, token: str, now: float) -> tuple[Identity, float]:
        """A JWT's identity, its signature checked with the issuer's key, and its expiry."""
        if self._clock() > self._fetched + KEYS_MAX_AGE:
            with contextlib.suppress(Refused):  # unreachable (logged): the keys held do
                await self.refresh()
        header = signed.header_of(token)
        alg = checked_header(header)
        key = key_for(self._keys, header.get("kid"), alg)
        if key is None and await self.refresh():
            key = key_for(self._keys, header.get("kid"), alg)
        if key is None:
            raise Rejected("the token is signed by a key the authorization server does not "
                           "publish")
        claims = signed.verified_claims(token, key, alg)
        return identity_of_claims(claims, self.rules, now), _seconds(claims.get("exp"))

    async def refresh(self) -> bool:
        """Fetch the key set again unless it was fetched within REFRESH_EVERY s; True if
        it was (a request waiting on another's fetch uses that one)."""
        fetched = self._fetched
        async with self._fetching:
            if self._fetched != fetched:
                return True
            if self._clock() < self._fetched + REFRESH_EVERY:
                return False
            self._fetched = self._clock()
            assert self._jwks_url is not None
            try:
                self._keys = await self._link.fetch(self._jwks_url)
            except Unreachable as exc:
                self._log.warning("oauth.keys_unreachable", url=self._jwks_url,
                                  error=exc.problem)
                raise Refused(503, f"the authorization server's keys cannot be fetched "
                              f"({exc.problem}); try again in a moment", None) from None
            self._log.info("oauth.keys_fetched", url=self._jwks_url,
                           keys=len(self._keys.get("keys") or ())
                           if isinstance(self._keys, dict) else 0)
            return True


class Unreachable(Exception):
    """A document that could not be fetched: `problem` says why (HTTP 404, refused...)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class IssuerLink:
    """How the gate reaches the authorization server over HTTP (a test's fake stands in)."""

    async def fetch(self, url: str) -> Any:
        """The JSON document at `url`; Unreachable when it cannot be fetched."""
        try:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT, trust_env=False) as http:
                response = await http.get(url, headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise Unreachable(f"HTTP {response.status_code}")
        return _json(response)

    async def introspect(self, given: Introspection, token: str) -> Mapping[str, Any]:
        """The introspection endpoint's answer about `token` (RFC 7662 §2.1, the client
        authenticated with HTTP Basic); Refused (503) when there is none."""
        try:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT, trust_env=False) as http:
                response = await http.post(
                    given.endpoint, data={"token": token, "token_type_hint": "access_token"},
                    auth=(given.client_id, given.client_secret),
                    headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise Refused(503, f"the introspection endpoint cannot be reached "
                          f"({type(exc).__name__}); try again in a moment", None) from None
        if response.status_code != 200:
            raise Refused(503, f"the introspection endpoint answered {response.status_code}: "
                          "check [oauth] introspection_client_id and its secret file", None)
        answer = _json(response)
        if not isinstance(answer, Mapping):
            raise Refused(503, "the introspection endpoint's answer is not JSON", None)
        return answer


def _seconds(value: object) -> float:
    """An expiry (NumericDate), or infinity for none (introspection may leave it out)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return math.inf


def _json(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


async def _server_endpoints(issuer: str, link: IssuerLink) -> tuple[str, str | None]:
    """The authorization server's key set URL and introspection endpoint, from the first
    of its metadata documents found (RFC 8414 §3, then OpenID Connect Discovery)."""
    tried = []
    for url in authorization_server_urls(issuer):
        try:
            document = await link.fetch(url)
        except Unreachable as exc:
            if not exc.problem.startswith("HTTP 4"):
                raise ConfigError(f"[oauth] issuer {issuer}: cannot reach it ({exc.problem}): "
                                  "check the URL and that the authorization server is "
                                  "running") from None
            tried.append(url)
            continue
        try:
            return server_endpoints(document, issuer)
        except Rejected as rejected:
            raise ConfigError(f"[oauth] issuer: {rejected.problem}") from None
    raise ConfigError(f"[oauth] issuer {issuer}: no authorization server metadata at "
                      f"{' nor '.join(tried)}: set issuer to exactly the authorization "
                      "server's issuer (its tokens' iss), or give jwks_url")
