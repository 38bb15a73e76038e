"""Signing in to a remote server with OAuth, as basic/authorization says: the async glue that
moves the bytes for the rules in bridge/oauth/ (discovery, registration, the authorization
code flow with PKCE, refresh), and the `AuthProvider` that the upstream's requests go
through.

Written here rather than taken from a library: Authlib's and the MCP SDK's OAuth clients are
built on httpx (not httpx2) and asyncio or anyio task groups, and none follows this
specification's discovery order, issuer checks, `resource` parameter and step-up together;
the rules themselves are small and pure (bridge/oauth/), so the glue is only I/O.

Must never log or put in an error a token, a code or a secret: the logs name the server, the
issuer and what happened.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import httpx2
import trio

from bridge.oauth.authorize import (
    SIGN_IN_TIMEOUT,
    STEP_UPS,
    PendingAuthorization,
    authorization_code,
    authorization_url,
    select_scope,
)
from bridge.oauth.challenge import Challenge, parse_challenge
from bridge.oauth.device import Wait, device_answer, device_form, poll_answer, poll_form
from bridge.oauth.discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_server,
    authorization_server_urls,
    protected_resource,
    protected_resource_urls,
)
from bridge.oauth.errors import GrantRefused, OAuthError
from bridge.oauth.registration import (
    ClientIdentity,
    Preregistered,
    Register,
    choose_identity,
    registered_identity,
    registration_request,
)
from bridge.oauth.tokens import (
    Grant,
    authenticate,
    client_credentials_form,
    code_form,
    refresh_form,
    token_answer,
)
from bridge.shell.logs import Logger
from bridge.shell.servers.remote import loopback
from bridge.shell.servers.remote.token_store import Credentials, TokenStore

EXCHANGE_TIMEOUT = httpx2.Timeout(30.0)


class SignIn:
    """One server's sign-in: the stored credentials, their refresh, and a new sign-in when
    they are missing, refused or too narrow. One at a time (a lock): concurrent requests
    refused together wait for one renewal and share it."""

    def __init__(self, server: str, given: Preregistered, store: TokenStore, log: Logger, *,
                 interactive: bool, transport: httpx2.AsyncBaseTransport | None = None,
                 ) -> None:
        """`transport`: only tests give one (the exchanges with the servers go through it)."""
        self.server = server
        self._transport = transport
        self._given = given
        self._store = store
        self._log = log.bind(url=server)
        self._interactive = interactive
        self._lock = trio.Lock()
        self._credentials: Credentials | None = None
        self._loaded = False
        self.problem: str | None = None
        """Why the last renewal failed, for the user (never a secret)."""

    async def token(self) -> str | None:
        """The access token to send, refreshed first when it is about to expire."""
        found = self._credentials
        if self._loaded and (found is None or not found.grant.due(time.time())):
            return found.grant.access_token if found is not None else None  # no wait
        async with self._lock:
            if not self._loaded:
                self._credentials, self._loaded = self._store.load(self.server), True
            found = self._credentials
            if found is not None and found.grant.due(time.time()):
                # On a failure that is not a refusal the old token still goes: it may
                # have a moment left, and its 401 leads to a renewal.
                await self._guarded(self._refresh(found))
                found = self._credentials
            return found.grant.access_token if found is not None else None

    async def renew(self, challenge: Challenge | None, refused: str | None) -> str | None:
        """A token to retry with after the server refused `refused` (None: no token was
        sent), or None when there is none to be had. A 401 refreshes, else signs in; an
        `insufficient_scope` signs in again for the union of the scopes, only when that
        asks for more than the refused token had."""
        async with self._lock:
            current = self._credentials
            if current is not None and current.grant.access_token != refused:
                return current.grant.access_token  # another request renewed it meanwhile
            granted = current.grant.scope if current is not None else ()
            step_up = challenge is not None and challenge.insufficient_scope
            if challenge is not None and step_up and set(challenge.scope or ()) <= set(granted):
                self.problem = "the server refuses the scopes it asked for; not asking again"
                return None
            if current is not None and not step_up and current.grant.refresh_token:
                await self._guarded(self._refresh(current))
                fresh = self._credentials
                if fresh is not None and fresh.grant.access_token != refused:
                    return fresh.grant.access_token
            signed = await self._guarded(self._sign_in(challenge, granted))
            return signed.grant.access_token if signed is not None else None

    async def sign_in(self, challenge: Challenge | None, *, device: bool = False,
                      ) -> Credentials:
        """A new sign-in now (`mcp-rosetta auth login`), whatever is stored; `device`: by
        device authorization (a code entered on another device), for a machine with no
        browser."""
        async with self._lock:
            return await self._sign_in(challenge, (), device=device)

    async def _guarded(self, work: Any) -> Credentials | None:
        try:
            found: Credentials = await work
        except (OAuthError, httpx2.HTTPError, OSError) as exc:
            self.problem = _problem(exc)
            self._log.warning("oauth.failed", problem=self.problem)
            return None
        self.problem = None
        return found

    async def _refresh(self, current: Credentials) -> Credentials:
        """The grant refreshed under the store's lock: another process may have refreshed
        it (a rotating refresh token is used once), so what the file holds is read first.
        A refused refresh token (GrantRefused) is forgotten: the caller signs in anew."""
        c = current
        fd = await trio.to_thread.run_sync(self._store.lock, c.issuer, c.resource,
                                           c.client.client_id)
        try:
            stored = self._store.load(self.server)
            if stored is not None and stored.grant != c.grant and not stored.grant.due(
                    time.time()):
                self._credentials = stored
                return stored
            if c.grant.refresh_token is None and self._given.client_credentials:
                return await self._sign_in(None, c.grant.scope)
            if c.grant.refresh_token is None:
                raise GrantRefused("the access token expired and there is no refresh token")
            server = await self._authorization_server(c.issuer)
            form = refresh_form(c.client, c.grant.refresh_token, c.resource, c.grant.scope)
            grant = await self._token_request(server, c.client, form, c.grant)
            renewed = replace(c, grant=grant)
            self._store.save(renewed)
            self._credentials = renewed
            self._log.info("oauth.refreshed", issuer=c.issuer)
            return renewed
        except GrantRefused:
            self._store.drop_grant(c)
            self._credentials = None
            self._log.info("oauth.grant_refused", issuer=c.issuer)
            raise
        finally:
            self._store.unlock(fd)

    async def _sign_in(self, challenge: Challenge | None, granted: tuple[str, ...], *,
                       device: bool = False) -> Credentials:
        """Discovery, registration, the browser's authorization and the code's exchange; a
        service's client credentials instead of the last three."""
        resource = await self._protected_resource(challenge)
        issuer = resource.authorization_servers[0]
        server = await self._authorization_server(issuer)
        port = loopback.redirect_port(self.server)
        redirect = loopback.redirect_uri(port)
        scope = select_scope(challenge, resource, server, granted)
        if self._given.client_credentials:
            return await self._as_service(server, resource.resource, redirect, scope)
        if not self._interactive:
            raise OAuthError(f"not signed in to {self.server}: run `mcp-rosetta auth login "
                             f"{self.server}` once, where a browser can be opened")
        client = await self._identity(server, redirect, scope)
        if device:
            grant = await self._by_device(server, client, resource.resource, scope)
            return self._signed(server, resource.resource, client, grant, scope)
        pending = PendingAuthorization(
            issuer=server.issuer, iss_required=server.iss_parameter_supported,
            state=secrets.token_urlsafe(24), verifier=secrets.token_urlsafe(48),
            redirect_uri=redirect, resource=resource.resource, scope=scope)
        answer = await self._authorize(authorization_url(server, client.client_id, pending),
                                       port)
        code = authorization_code(pending, answer)
        form = code_form(client, code, pending.verifier, redirect, resource.resource)
        grant = await self._token_request(server, client, form, None)
        return self._signed(server, resource.resource, client, grant, scope)

    async def _as_service(self, server: AuthorizationServer, resource: str, redirect: str,
                          scope: str | None) -> Credentials:
        """The client credentials grant: the pre-registered client signs in as itself, with
        no browser (so the daemon and the HTTP front may do it too)."""
        client = await self._identity(server, redirect, scope)
        form = client_credentials_form(client, resource, scope)
        grant = await self._token_request(server, client, form, None)
        return self._signed(server, resource, client, grant, scope)

    def _signed(self, server: AuthorizationServer, resource: str, client: ClientIdentity,
                grant: Grant, scope: str | None) -> Credentials:
        """The new grant stored and used from now on."""
        if not grant.scope and scope:
            grant = replace(grant, scope=tuple(scope.split()))
        signed = Credentials(self.server, server.issuer, resource, client, grant)
        self._store.save(signed)
        self._credentials = signed
        self._log.info("oauth.signed_in", issuer=server.issuer, scope=scope)
        return signed

    async def _protected_resource(self, challenge: Challenge | None) -> ProtectedResource:
        header = challenge.resource_metadata if challenge is not None else None
        for url in protected_resource_urls(self.server, header):
            document = await self._get_json(url)
            if document is not None:
                return protected_resource(document, self.server)
        raise OAuthError(f"{self.server} asks for credentials but publishes no protected "
                         "resource metadata (RFC 9728) saying where to sign in")

    async def _authorization_server(self, issuer: str) -> AuthorizationServer:
        for url in authorization_server_urls(issuer):
            document = await self._get_json(url)
            if document is not None:
                return authorization_server(document, issuer)
        raise OAuthError(f"the authorization server {issuer} publishes no metadata "
                         "(RFC 8414 or OpenID Connect Discovery)")

    async def _identity(self, server: AuthorizationServer, redirect: str,
                        scope: str | None) -> ClientIdentity:
        chosen = choose_identity(self._given, server, redirect)
        if isinstance(chosen, ClientIdentity):
            return chosen
        assert isinstance(chosen, Register) and server.registration_endpoint is not None
        known = self._store.registered(server.issuer, redirect)
        if known is not None:
            return known
        async with self._client() as http:
            response = await http.post(server.registration_endpoint, json=registration_request(
                redirect, scope, server.device_authorization_endpoint is not None))
        if response.status_code not in (200, 201):
            raise OAuthError(f"the authorization server {server.issuer} refused to register "
                             f"mcp-rosetta ({response.status_code})")
        client = registered_identity(_json(response), server)
        self._store.remember_client(redirect, client)
        self._log.info("oauth.registered", issuer=server.issuer)
        return client

    async def _by_device(self, server: AuthorizationServer, client: ClientIdentity,
                         resource: str, scope: str | None) -> Grant:
        """Device authorization (RFC 8628): the user code shown on stderr, then the token
        endpoint polled at the interval the server asks for until the user answered."""
        if server.device_authorization_endpoint is None:
            raise OAuthError(f"the authorization server {server.issuer} offers no device "
                             "authorization (device_authorization_endpoint): sign in where "
                             "a browser can be opened")
        headers, body = authenticate(client, device_form(client, resource, scope))
        async with self._client() as http:
            response = await http.post(server.device_authorization_endpoint, data=body,
                                       headers=headers)
        started = device_answer(response.status_code, _json(response), server.issuer)
        sys.stderr.write(started.instructions(self.server) + "\n")
        sys.stderr.flush()
        outcome: Grant | Wait = Wait(started.interval)
        with trio.move_on_after(started.expires_in):
            while isinstance(outcome, Wait):
                await trio.sleep(outcome.interval)
                headers, body = authenticate(client, poll_form(
                    client, started.device_code, resource))
                async with self._client() as http:
                    response = await http.post(server.token_endpoint, data=body,
                                               headers=headers)
                outcome = poll_answer(response.status_code, _json(response), time.time(),
                                      server.issuer, outcome.interval)
            return outcome
        raise OAuthError(f"the code to sign in to {self.server} was not entered in time")

    async def _authorize(self, url: str, port: int) -> dict[str, str]:
        """Open `url` in the user's browser (and print it) and wait for the redirect."""
        try:
            listener = await loopback.open_listener(port)
        except OSError as exc:
            raise OAuthError(f"cannot listen for the sign-in's redirect on 127.0.0.1:{port} "
                             f"({exc.strerror or exc}): is another sign-in running?") from None
        sys.stderr.write(f"mcp-rosetta: sign in to {self.server} in your browser; if none "
                         f"opens, open this URL:\n  {url}\n")
        sys.stderr.flush()
        async with listener, trio.open_nursery() as nursery:
            nursery.start_soon(loopback.open_browser, url)
            with trio.move_on_after(SIGN_IN_TIMEOUT) as scope:
                answer = await loopback.wait_for_redirect(listener)
            nursery.cancel_scope.cancel()
        if scope.cancelled_caught:
            raise OAuthError(f"the sign-in to {self.server} was not finished within "
                             f"{SIGN_IN_TIMEOUT:g}s")
        return answer

    async def _token_request(self, server: AuthorizationServer, client: ClientIdentity,
                             form: dict[str, str], previous: Grant | None) -> Grant:
        headers, body = authenticate(client, form)
        async with self._client() as http:
            response = await http.post(server.token_endpoint, data=body, headers=headers)
        return token_answer(response.status_code, _json(response), time.time(), server.issuer,
                            previous)

    def _client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=EXCHANGE_TIMEOUT, follow_redirects=False,
                                  transport=self._transport)

    async def _get_json(self, url: str) -> Any:
        """The JSON document at `url`, None when it is not there (4xx)."""
        async with self._client() as http:
            response = await http.get(url, headers={"Accept": "application/json"})
        if response.status_code != 200:
            return None
        document = _json(response)
        return document if isinstance(document, dict) else None


def _json(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _problem(exc: BaseException) -> str:
    if isinstance(exc, OAuthError):
        return str(exc)
    if isinstance(exc, httpx2.HTTPError):
        return f"signing in failed: {type(exc).__name__} ({exc})"
    return f"signing in failed: {exc}"


class OAuth(httpx2.Auth):
    """The provider that signs in: the user's headers (--header) on every request, and the
    access token of `sign_in`; a 401 renews it once, an `insufficient_scope` 403 steps up
    at most STEP_UPS times, then the refusal goes to the upstream."""

    def __init__(self, headers: tuple[tuple[str, str], ...], sign_in: SignIn) -> None:
        self._headers = headers
        self._sign_in = sign_in

    def auth(self) -> httpx2.Auth:
        return self

    def remedy(self, status: int) -> str:
        url = self._sign_in.server
        header = 'give credentials with --header "Authorization: Bearer ${TOKEN}"'
        if self._sign_in.problem is not None:
            return f"{self._sign_in.problem}; or {header}"
        if status == 403:
            return (f"the account signed in is not allowed this: to sign in as another, "
                    f"`mcp-rosetta auth logout {url}` then `mcp-rosetta auth login {url}`")
        return f"sign in again with `mcp-rosetta auth login {url}`, or {header}"

    async def async_auth_flow(self, request: httpx2.Request,
                              ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        for name, value in self._headers:
            request.headers[name] = value
        token = await self._sign_in.token()
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        signed_in, step_ups = False, 0
        while True:
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if response.status_code == 401 and not signed_in:
                signed_in = True
            elif response.status_code == 403 and challenge is not None \
                    and challenge.insufficient_scope and step_ups < STEP_UPS:
                step_ups += 1
            else:
                return
            token = await self._sign_in.renew(challenge, token)
            if token is None:
                return
            request.headers["Authorization"] = f"Bearer {token}"
            response = yield request
