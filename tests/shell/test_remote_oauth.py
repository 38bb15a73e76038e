"""The OAuth provider's glue against a fake MCP server and authorization server (an httpx2
mock transport) and a real loopback redirect: what goes over the wire, what is stored, and
that a sign-in happens once where it should."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import pytest
import trio
from structlog.testing import capture_logs

from bridge.oauth.authorize import code_challenge
from bridge.oauth.registration import ClientIdentity, Preregistered
from bridge.oauth.tokens import Grant
from bridge.shell import logs
from bridge.shell.servers.remote import loopback, oauth
from bridge.shell.servers.remote.oauth import OAuth, SignIn
from bridge.shell.servers.remote.token_store import Credentials, TokenStore

MCP = "http://mcp.test/mcp"
AS = "http://as.test"
PRM = "http://mcp.test/.well-known/oauth-protected-resource/mcp"


class World:
    """The MCP server and its authorization server; each token is good once issued."""

    def __init__(self, *, rotate: bool = True) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.issued = 0
        self.valid: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.challenge: dict[str, str] = {}
        self.rotate = rotate

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url).split("?")[0]
        form = dict(parse_qsl(request.content.decode())) if request.method == "POST" else {}
        self.seen.append((request.method, url, form))
        if url == MCP:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token in self.valid:
                return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})
            return httpx2.Response(401, headers={"WWW-Authenticate": (
                f'Bearer resource_metadata="{PRM}", scope="mcp:read"')})
        if url == PRM:
            return httpx2.Response(200, json={"resource": MCP, "authorization_servers": [AS]})
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json={
                "issuer": AS, "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": f"{AS}/token", "registration_endpoint": f"{AS}/register",
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": True})
        if url == f"{AS}/register":
            body = json.loads(request.content)
            assert body["application_type"] == "native"
            return httpx2.Response(201, json={"client_id": "dyn-1"})
        if url == f"{AS}/token":
            return self._token(form)
        return httpx2.Response(404)

    def _token(self, form: dict[str, str]) -> httpx2.Response:
        if form["grant_type"] == "client_credentials":  # a service: no refresh token
            self.issued += 1
            self.valid = {f"access-{self.issued}"}
            return httpx2.Response(200, json={"access_token": f"access-{self.issued}",
                                              "token_type": "Bearer", "expires_in": 3600})
        if form["grant_type"] == "refresh_token":
            if form["refresh_token"] not in self.refresh_tokens:
                return httpx2.Response(400, json={"error": "invalid_grant"})
            if self.rotate:
                self.refresh_tokens.discard(form["refresh_token"])
        else:
            assert code_challenge(form["code_verifier"]) == self.challenge["code_challenge"]
        self.issued += 1
        access, refresh = f"access-{self.issued}", f"refresh-{self.issued}"
        self.valid = {access}
        self.refresh_tokens.add(refresh)
        return httpx2.Response(200, json={"access_token": access, "token_type": "Bearer",
                                          "expires_in": 3600, "refresh_token": refresh})

    def posts_to(self, url: str) -> list[dict[str, str]]:
        return [form for method, at, form in self.seen if method == "POST" and at == url]


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The user's browser: the authorization server approves at once and redirects."""
    opened: list[str] = []

    async def approve(url: str) -> None:
        opened.append(url)
        query = dict(parse_qsl(urlsplit(url).query))
        WORLD.challenge = query
        back = (f"{query['redirect_uri']}?code=the-code&state={query['state']}"
                f"&iss={AS}")
        async with httpx2.AsyncClient() as client:
            await client.get(back)

    monkeypatch.setattr(loopback, "open_browser", approve)
    yield opened


WORLD = World()


@pytest.fixture(autouse=True)
def world() -> World:
    global WORLD
    WORLD = World()
    return WORLD


def sign_in(tmp_path: Path, *, interactive: bool = True) -> SignIn:
    return SignIn(MCP, Preregistered(), TokenStore(tmp_path / "oauth"), logs.logger(),
                  interactive=interactive, transport=httpx2.MockTransport(WORLD))


async def call(provider: OAuth) -> httpx2.Response:
    async with httpx2.AsyncClient(auth=provider, transport=httpx2.MockTransport(WORLD)) as c:
        return await c.post(MCP, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})


async def test_a_401_signs_in_and_the_request_is_sent_again(tmp_path, browser):
    provider = OAuth((("X-Team", "blue"),), sign_in(tmp_path))
    with capture_logs() as logged:
        response = await call(provider)
    assert response.status_code == 200
    (opened,) = browser
    query = dict(parse_qsl(urlsplit(opened).query))
    assert (query["client_id"], query["resource"], query["scope"]) == ("dyn-1", MCP, "mcp:read")
    (exchange,) = WORLD.posts_to(f"{AS}/token")
    assert (exchange["grant_type"], exchange["code"], exchange["resource"]) == (
        "authorization_code", "the-code", MCP)
    assert "access-1" not in repr(logged) and "the-code" not in repr(logged)


async def test_the_sign_in_is_stored_privately_and_used_by_the_next_run(tmp_path, browser):
    await call(OAuth((), sign_in(tmp_path)))
    files = [p for p in (tmp_path / "oauth").rglob("*") if p.is_file()]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    dirs = [p for p in (tmp_path / "oauth").rglob("*") if p.is_dir()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in [tmp_path / "oauth", *dirs])
    response = await call(OAuth((), sign_in(tmp_path, interactive=False)))
    assert response.status_code == 200 and len(browser) == 1


def stored(tmp_path: Path, expires_at: float, refresh: str = "refresh-0") -> TokenStore:
    store = TokenStore(tmp_path / "oauth")
    store.save(Credentials(MCP, AS, MCP, ClientIdentity("dyn-1", issuer=AS),
                           Grant("access-0", refresh, expires_at, ("mcp:read",))))
    return store


async def test_a_token_about_to_expire_is_refreshed_before_the_request(tmp_path, browser):
    stored(tmp_path, time.time() + 10)
    WORLD.refresh_tokens.add("refresh-0")
    response = await call(OAuth((), sign_in(tmp_path, interactive=False)))
    assert response.status_code == 200 and browser == []
    (refresh,) = WORLD.posts_to(f"{AS}/token")
    assert refresh == {"grant_type": "refresh_token", "refresh_token": "refresh-0",
                       "resource": MCP, "client_id": "dyn-1", "scope": "mcp:read"}
    assert TokenStore(tmp_path / "oauth").load(MCP).grant.refresh_token == "refresh-1"


async def test_two_processes_use_a_rotating_refresh_token_once(tmp_path, browser):
    stored(tmp_path, time.time() + 10)
    WORLD.refresh_tokens.add("refresh-0")
    first, second = sign_in(tmp_path, interactive=False), sign_in(tmp_path, interactive=False)
    tokens = []
    async with trio.open_nursery() as nursery:
        for one in (first, second):
            nursery.start_soon(lambda s=one: _token_into(s, tokens))
    assert tokens == ["access-1", "access-1"]
    assert len(WORLD.posts_to(f"{AS}/token")) == 1


async def _token_into(sign: SignIn, out: list[Any]) -> None:
    out.append(await sign.token())


async def test_a_refused_refresh_token_leads_to_one_new_sign_in(tmp_path, browser):
    stored(tmp_path, time.time() - 1)  # refresh-0 is unknown to the server: revoked
    response = await call(OAuth((), sign_in(tmp_path)))
    assert response.status_code == 200
    assert len(browser) == 1
    grants = [f["grant_type"] for f in WORLD.posts_to(f"{AS}/token")]
    assert grants == ["refresh_token", "authorization_code"]


async def test_without_a_browser_the_refusal_says_how_to_sign_in(tmp_path, browser):
    provider = OAuth((), sign_in(tmp_path, interactive=False))
    response = await call(provider)
    assert response.status_code == 401 and browser == []
    assert f"mcp-rosetta auth login {MCP}" in provider.remedy(401)


async def test_a_server_that_keeps_refusing_does_not_loop(tmp_path, browser, monkeypatch):
    def refuse(request: httpx2.Request) -> httpx2.Response:
        if str(request.url) == MCP:
            return httpx2.Response(401, headers={
                "WWW-Authenticate": f'Bearer resource_metadata="{PRM}"'})
        return WORLD(request)

    monkeypatch.setattr(oauth, "SIGN_IN_TIMEOUT", 5.0)
    async with httpx2.AsyncClient(auth=OAuth((), SignIn(
            MCP, Preregistered(), TokenStore(tmp_path / "oauth"), logs.logger(),
            interactive=True, transport=httpx2.MockTransport(refuse))),
            transport=httpx2.MockTransport(refuse)) as client:
        response = await client.post(MCP, json={})
    assert response.status_code == 401 and len(browser) == 1


def test_the_store_forgets_a_sign_in(tmp_path):
    store = stored(tmp_path, 0.0)
    assert store.load(MCP) is not None
    assert store.forget(MCP) and store.load(MCP) is None and not store.forget(MCP)
    assert not [p for p in (tmp_path / "oauth" / "credentials").glob("*.json")]
    assert os.listdir(tmp_path / "oauth" / "servers") == []


async def test_a_401_without_metadata_names_what_is_missing_and_the_header(tmp_path, browser):
    def bare(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(401 if str(request.url) == MCP else 404)

    provider = OAuth((), SignIn(MCP, Preregistered(), TokenStore(tmp_path / "oauth"),
                                logs.logger(), interactive=True,
                                transport=httpx2.MockTransport(bare)))
    async with httpx2.AsyncClient(auth=provider, transport=httpx2.MockTransport(bare)) as c:
        assert (await c.post(MCP, json={})).status_code == 401
    assert browser == []
    assert provider.remedy(401) == (
        f"{MCP} asks for credentials but publishes no protected resource metadata (RFC 9728) "
        'saying where to sign in; or give credentials with --header "Authorization: Bearer '
        '${TOKEN}"')


async def test_insufficient_scope_steps_up_with_the_union_and_stops_when_nothing_is_new(
        tmp_path, browser):
    scopes_of: dict[str, set[str]] = {}

    def server(request: httpx2.Request) -> httpx2.Response:
        url = str(request.url).split("?")[0]
        if url == MCP:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in WORLD.valid:
                return httpx2.Response(401, headers={"WWW-Authenticate": (
                    f'Bearer resource_metadata="{PRM}", scope="read"')})
            if "write" not in scopes_of[token] or "admin" in json.loads(request.content):
                return httpx2.Response(403, headers={"WWW-Authenticate": (
                    'Bearer error="insufficient_scope", scope="write"'
                    if "admin" not in json.loads(request.content) else
                    'Bearer error="insufficient_scope", scope="read"')})
            return httpx2.Response(200, json={})
        response = WORLD(request)
        if url == f"{AS}/token":
            scopes_of[f"access-{WORLD.issued}"] = set(WORLD.challenge["scope"].split())
        return response

    provider = OAuth((), SignIn(MCP, Preregistered(), TokenStore(tmp_path / "oauth"),
                                logs.logger(), interactive=True,
                                transport=httpx2.MockTransport(server)))
    async with httpx2.AsyncClient(auth=provider, transport=httpx2.MockTransport(server)) as c:
        assert (await c.post(MCP, json={"write": 1})).status_code == 200
        asked = [dict(parse_qsl(urlsplit(u).query))["scope"] for u in browser]
        assert asked == ["read", "read write"]
        assert (await c.post(MCP, json={"admin": 1})).status_code == 403
    assert len(browser) == 2
    assert "not asking again" in provider.remedy(403)


SERVICE = Preregistered("svc", "svc-secret", client_credentials=True)


def service(tmp_path: Path) -> SignIn:
    return SignIn(MCP, SERVICE, TokenStore(tmp_path / "oauth"), logs.logger(),
                  interactive=False, transport=httpx2.MockTransport(WORLD))


async def test_a_service_signs_in_with_client_credentials_and_no_browser(tmp_path, browser):
    with capture_logs() as logged:
        response = await call(OAuth((), service(tmp_path)))
    assert response.status_code == 200 and browser == []
    # Its secret goes in HTTP Basic (the server's default method), not in the form.
    (grant,) = WORLD.posts_to(f"{AS}/token")
    assert grant == {"grant_type": "client_credentials", "resource": MCP, "scope": "mcp:read"}
    assert not WORLD.posts_to(f"{AS}/register")
    assert "svc-secret" not in repr(logged) and "access-1" not in repr(logged)
    assert TokenStore(tmp_path / "oauth").load(MCP).client.client_id == "svc"


async def test_a_services_due_token_is_replaced_by_a_new_grant_not_refreshed(tmp_path, browser):
    store = TokenStore(tmp_path / "oauth")
    store.save(Credentials(MCP, AS, MCP, ClientIdentity("svc", "svc-secret",
                                                        "client_secret_basic", AS),
                           Grant("access-0", None, time.time() + 10, ("mcp:read",))))
    assert await service(tmp_path).token() == "access-1"
    grants = [f["grant_type"] for f in WORLD.posts_to(f"{AS}/token")]
    assert grants == ["client_credentials"] and browser == []


class DeviceWorld(World):
    """The authorization server offers device authorization; the user approves after the
    first poll."""

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url).split("?")[0]
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json={
                "issuer": AS, "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": f"{AS}/token", "registration_endpoint": f"{AS}/register",
                "device_authorization_endpoint": f"{AS}/device",
                "code_challenge_methods_supported": ["S256"]})
        if url == f"{AS}/device":
            self.seen.append(("POST", url, dict(parse_qsl(request.content.decode()))))
            return httpx2.Response(200, json={
                "device_code": "dev-secret", "user_code": "WDJB-MJHT",
                "verification_uri": f"{AS}/device", "expires_in": 60, "interval": 0.01})
        if url == f"{AS}/register":
            self.registered = json.loads(request.content)
        if url == f"{AS}/token" and len(self.posts_to(f"{AS}/token")) == 0:
            self.seen.append(("POST", url, dict(parse_qsl(request.content.decode()))))
            return httpx2.Response(400, json={"error": "authorization_pending"})
        return super().__call__(request)

    def _token(self, form: dict[str, str]) -> httpx2.Response:
        assert form["device_code"] == "dev-secret"
        self.issued += 1
        return httpx2.Response(200, json={"access_token": "access-d", "token_type": "Bearer",
                                          "expires_in": 3600, "refresh_token": "refresh-d"})


async def test_a_device_sign_in_polls_until_the_user_approves(tmp_path, browser, capsys):
    world = DeviceWorld()
    sign = SignIn(MCP, Preregistered(), TokenStore(tmp_path / "oauth"), logs.logger(),
                  interactive=True, transport=httpx2.MockTransport(world))
    signed = await sign.sign_in(None, device=True)
    assert signed.grant.access_token == "access-d" and browser == []
    assert "urn:ietf:params:oauth:grant-type:device_code" in world.registered["grant_types"]
    (started,) = world.posts_to(f"{AS}/device")
    assert started == {"client_id": "dyn-1", "resource": MCP}
    polls = world.posts_to(f"{AS}/token")
    assert len(polls) == 2 and polls[1]["grant_type"].endswith("device_code")
    told = capsys.readouterr().err
    assert "WDJB-MJHT" in told and "dev-secret" not in told
