"""`mcp-rosetta auth login|status|logout URL`: a user's sign-ins to remote servers.

`login` signs in now, where a browser can be opened (or, with `--device`, by a code entered
on another device), so the daemon and the HTTP front (which
never open one) find the tokens stored; `status` says what is stored (never a token);
`logout` forgets it. Says what it did through the logger, on stderr: stdout is the bridge's
protocol wire everywhere in the package, this command's included.
"""

from __future__ import annotations

import datetime
import os
import time

import httpx2
import trio

from bridge.oauth.challenge import Challenge, parse_challenge
from bridge.oauth.errors import OAuthError
from bridge.oauth.registration import Preregistered
from bridge.shell import logs
from bridge.shell.servers.remote.oauth import SignIn
from bridge.shell.servers.remote.token_store import Credentials, TokenStore, config_root

PROBE = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def run_auth(action: str, url: str, given: Preregistered, *, device: bool = False) -> int:
    """Exit status 0 when done (`status`: when signed in), 1 otherwise."""
    store = TokenStore(config_root(os.environ))
    log = logs.configure("info")
    if action == "logout":
        forgot = store.forget(url)
        log.info("auth.signed_out" if forgot else "auth.none_stored", url=url)
        return 0
    if action == "status":
        found = store.load(url)
        if found is None:
            log.info("auth.not_signed_in", url=url)
            return 1
        log.info("auth.signed_in", url=url, sign_in=describe(found, time.time()))
        return 0
    try:
        signed = trio.run(_login, url, given, store, log, device)
    except (OAuthError, httpx2.HTTPError) as exc:
        log.error("auth.sign_in_failed", url=url, error=str(exc))
        return 1
    log.info("auth.signed_in", url=url, sign_in=describe(signed, time.time()))
    return 0


async def _login(url: str, given: Preregistered, store: TokenStore,
                 log: logs.Logger, device: bool) -> Credentials:
    return await SignIn(url, given, store, log, interactive=True).sign_in(
        await _challenge(url), device=device)


async def _challenge(url: str) -> Challenge | None:
    """What the server asks of a request without credentials (its 401's challenge)."""
    async with httpx2.AsyncClient(timeout=30.0) as http:
        response = await http.post(url, json=PROBE, headers={
            "Accept": "application/json, text/event-stream"})
    if response.status_code != 401:
        return None
    return parse_challenge(response.headers.get("www-authenticate"))


def describe(found: Credentials, now: float) -> str:
    """What is stored, without a token: issuer, client, scope, expiry, refresh."""
    expires = "no expiry given"
    if found.grant.expires_at is not None:
        when = datetime.datetime.fromtimestamp(found.grant.expires_at, tz=datetime.UTC)
        left = found.grant.expires_at - now
        expires = (f"expires {when:%Y-%m-%d %H:%M:%S} UTC" if left > 0
                   else f"expired {when:%Y-%m-%d %H:%M:%S} UTC")
    refresh = "a refresh token" if found.grant.refresh_token else "no refresh token"
    return (f"  authorization server: {found.issuer}\n  resource: {found.resource}\n"
            f"  client: {found.client.client_id}\n"
            f"  scope: {' '.join(found.grant.scope) or '(none)'}\n"
            f"  access token: {expires}; {refresh} (refreshed before expiry)")
