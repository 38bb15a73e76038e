"""The HTTP front's OAuth gate in process: the metadata at the discovery paths, the 401 that
names it, 403 for a missing scope, static tokens beside access tokens, one tenant per
identity, the key set fetched again (at most every 30 s) for a key it lacks, and the errors a
user meets at start. Real HTTP/1.1 over loopback (test_http_front.py's client), tokens signed
here, the authorization server's documents served by a fake `fetch`."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
import trio
from cryptography.hazmat.primitives.asymmetric import rsa

from bridge.errors import ConfigError
from bridge.oauth.resource import policy
from bridge.shell import logs
from bridge.shell.http.auth import Tokens
from bridge.shell.http.front import Access
from bridge.shell.http.oauth_gate import Gate, Introspection, IssuerLink, Unreachable
from tests.shell.test_http_elsewhere import OAUTH
from tests.shell.test_http_front import Cores, request, running

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
METADATA = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ROTATED = rsa.generate_private_key(public_exponent=65537, key_size=2048)
LIST = request(1, "tools/list")


def jwks(*keys: tuple[rsa.RSAPrivateKey, str]) -> dict[str, Any]:
    return {"keys": [{**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())),
                      "kid": kid} for key, kid in keys]}


class Server(IssuerLink):
    """The authorization server, as the gate's link reaches it: its documents, and its
    introspection of the opaque tokens in `active`."""

    def __init__(self, keys: dict[str, Any] | None = None) -> None:
        self.keys = keys or jwks((KEY, "k1"))
        self.fetched: list[str] = []
        self.down = False
        self.active: dict[str, dict[str, Any]] = {}
        self.introspected: list[str] = []
        self.metadata: dict[str, Any] = {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"}

    async def fetch(self, url: str) -> Any:
        self.fetched.append(url)
        if self.down:
            raise Unreachable("ConnectError: connection refused")
        if url == f"{ISSUER}/jwks":
            return self.keys
        if url == f"{ISSUER}/.well-known/oauth-authorization-server":
            return self.metadata
        raise Unreachable("HTTP 404")

    async def introspect(self, given: Introspection, token: str) -> Mapping[str, Any]:
        assert (given.client_id, given.client_secret) == ("front", "s3cret")
        self.introspected.append(token)
        return self.active.get(token, {"active": False})


def token(sub: str = "alice", key: rsa.RSAPrivateKey = KEY, kid: str = "k1",
          **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": RESOURCE, "sub": sub, "exp": now + 60, "scope": "mcp",
            **claims}
    return jwt.encode(body, key, "RS256", headers={"kid": kid})


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def gate(server: Server, scopes: tuple[str, ...] = ("mcp",),
               clock: Clock | None = None) -> Gate:
    opened = Gate(policy(RESOURCE, ISSUER, scopes), logs.logger(), link=server,
                  clock=clock or Clock())
    await opened.start()
    return opened


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


async def test_the_metadata_is_served_and_a_401_names_it() -> None:
    server = Server()
    async with running(access=Access(gate=await gate(server)), make_core=Cores()) as r:
        client = await r.client()
        await client.send("GET", target="/.well-known/oauth-protected-resource/mcp")
        answer = await client.whole()
        assert answer.status == 200 and answer.json == {
            "resource": RESOURCE, "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"], "resource_name": "mcp-rosetta",
            "scopes_supported": ["mcp"]}
        await client.send("GET", target="/.well-known/oauth-authorization-server")
        assert (await client.whole()).status == 404
        answer = await client.post(LIST)
        assert answer.status == 401
        assert answer.headers["www-authenticate"] == \
            f'Bearer resource_metadata="{METADATA}", scope="mcp"'
        assert answer.json["id"] == 1
        answer = await client.post(LIST, **bearer("not-a-jwt"))
        assert answer.status == 401
        assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        # Whatever the method: a client is asked to sign in before it is told what the
        # endpoint takes (mcp-remote's first request is a GET, and a 405 would not send it
        # to the metadata).
        await client.send("GET")
        answer = await client.whole()
        assert answer.status == 401
        assert answer.headers["www-authenticate"].startswith("Bearer resource_metadata=")


@pytest.mark.parametrize(("method", "target"), OAUTH)
async def test_the_metadata_is_at_its_two_paths_and_the_other_discovery_paths_are_404(
        method: str, target: str) -> None:
    async with running(access=Access(gate=await gate(Server())), make_core=Cores()) as r:
        client = await r.client()
        body = b'{"client_name":"x"}' if method == "POST" else b""
        await client.send(method, body, {"content-type": "application/json"}, target=target)
        answer = await client.whole()
    if method == "GET" and target.startswith("/.well-known/oauth-protected-resource"):
        assert (answer.status, answer.json["authorization_servers"]) == (200, [ISSUER])
    else:
        assert answer.status == 404
        assert "names the one to sign in with" in answer.json["error"]["message"]


async def test_a_missing_scope_is_403_naming_it() -> None:
    opened = await gate(Server(), ("mcp", "admin"))
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        answer = await (await r.client()).post(LIST, **bearer(token()))
        assert answer.status == 403
        assert answer.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}", scope="mcp admin", '
            'error="insufficient_scope", error_description="the token does not grant the '
            'scope admin"')


async def test_each_identity_is_a_tenant_and_static_tokens_work_beside() -> None:
    cores = Cores()
    tokens = Tokens((b"static-token",))
    opened = await gate(Server())
    async with running(access=Access(tokens=tokens, gate=opened), make_core=cores) as r:
        client = await r.client()
        for presented in (token("alice"), token("bob"), token("alice", jti="again"),
                          "static-token"):
            assert (await client.post(LIST, **bearer(presented))).status == 200
        assert [len(core.ids_of("tools/list")) for core in cores] == [2, 1, 1]
        tenants = {e["tenant"] for e in r.events("http.tenant_started")}
        assert len(tenants) == 3
        assert not any(token("alice")[:40] in json.dumps(e, default=str) for e in r.logs)


async def test_an_unknown_key_fetches_the_keys_again_at_most_every_30_seconds() -> None:
    server, clock = Server(), Clock()
    opened = await gate(server, clock=clock)
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        client = await r.client()
        assert server.fetched.count(f"{ISSUER}/jwks") == 1
        server.keys = jwks((KEY, "k1"), (ROTATED, "k2"))
        # Fetched at start, less than 30 s ago: a made-up kid cannot make it fetch again.
        assert (await client.post(LIST, **bearer(token(key=ROTATED, kid="k2")))).status \
            == 401
        clock.now += 31  # the last fetch long ago, as after a rotation
        assert (await client.post(LIST, **bearer(token(key=ROTATED, kid="k2")))).status \
            == 200
        for kid in ("k3", "k4", "k5"):
            answer = await client.post(LIST, **bearer(token(key=ROTATED, kid=kid)))
            assert answer.status == 401
        assert server.fetched.count(f"{ISSUER}/jwks") == 2


async def test_a_key_set_that_cannot_be_fetched_later_is_503_saying_so() -> None:
    server, clock = Server(), Clock()
    opened = await gate(server, clock=clock)
    server.down, clock.now = True, clock.now + 31
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        answer = await (await r.client()).post(LIST, **bearer(token(kid="other")))
        assert answer.status == 503
        assert "cannot be fetched" in answer.json["error"]["message"]
        assert r.events("oauth.keys_unreachable")


@pytest.mark.parametrize(("fail", "says"), [
    ("refused", "cannot reach it (ConnectError: refused): check the URL and that the "
                "authorization server is running"),
    ("404", "no authorization server metadata at"),
    ("issuer", "names another issuer"),
    ("no jwks", "names no jwks_uri: set [oauth] jwks_url"),
])
async def test_the_errors_at_start_name_the_cause_and_the_fix(fail: str, says: str) -> None:
    class Failing(Server):
        async def fetch(self, url: str) -> Any:
            if fail == "refused":
                raise Unreachable("ConnectError: refused")
            if fail == "404":
                raise Unreachable("HTTP 404")
            if fail == "issuer":
                return {**self.metadata, "issuer": "https://typo.example.com"}
            return {"issuer": ISSUER}

    with pytest.raises(ConfigError) as raised:
        await Gate(policy(RESOURCE, ISSUER), logs.logger(), link=Failing()).start()
    assert says in str(raised.value)


async def test_introspection_needs_the_issuer_to_offer_it() -> None:
    with pytest.raises(ConfigError, match="names no introspection_endpoint"):
        await Gate(policy(RESOURCE, ISSUER), logs.logger(), link=Server(),
                   introspection_client=("id", "secret")).start()


async def test_an_opaque_token_is_introspected_and_the_answer_kept_30_seconds() -> None:
    server = Server()
    server.metadata["introspection_endpoint"] = f"{ISSUER}/introspect"
    server.active["opaque-alice"] = {"active": True, "sub": "alice", "scope": "mcp",
                                     "aud": RESOURCE, "exp": time.time() + 3600}
    opened = Gate(policy(RESOURCE, ISSUER, ("mcp",)), logs.logger(), link=server,
                  introspection_client=("front", "s3cret"))
    await opened.start()
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        client = await r.client()
        assert (await client.post(LIST, **bearer("opaque-alice"))).status == 200
        assert (await client.post(LIST, **bearer("opaque-alice"))).status == 200
        answer = await client.post(LIST, **bearer("opaque-mallory"))
        assert answer.status == 401 and "not active" in answer.json["error"]["message"]
    assert server.introspected == ["opaque-alice", "opaque-mallory"]


async def test_every_request_of_a_burst_waits_for_one_fetch() -> None:
    server, clock = Server(), Clock()
    opened = await gate(server, clock=clock)
    clock.now += 31
    server.keys = jwks((KEY, "k1"), (ROTATED, "k2"))
    results: list[int] = []
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        async def one() -> None:
            results.append((await (await r.client()).post(
                LIST, **bearer(token(key=ROTATED, kid="k2")))).status)

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(one)
    assert results == [200] * 4
    assert server.fetched.count(f"{ISSUER}/jwks") == 2


async def test_a_token_is_checked_once_then_kept_30_seconds_and_never_past_its_expiry(
        ) -> None:
    server, clock = Server(), Clock()
    opened = await gate(server, clock=clock)
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        client = await r.client()
        short = token(exp=int(clock.now) + 10)
        assert (await client.post(LIST, **bearer(short))).status == 200
        server.keys = jwks((ROTATED, "k2"))  # the key is withdrawn...
        clock.now += 5
        assert (await client.post(LIST, **bearer(short))).status == 200  # ...kept, though
        clock.now += 6 + 60  # past its expiry and the clock skew
        answer = await client.post(LIST, **bearer(short))
        assert answer.status == 401 and "expired" in answer.json["error"]["message"]


async def test_a_withdrawn_key_stops_working_once_the_key_set_is_an_hour_old() -> None:
    server, clock = Server(), Clock()
    opened = await gate(server, clock=clock)
    async with running(access=Access(gate=opened), make_core=Cores()) as r:
        client = await r.client()
        assert (await client.post(LIST, **bearer(token(exp=int(clock.now) + 7200)))).status \
            == 200
        server.keys = jwks((ROTATED, "k2"))
        clock.now += 3601
        answer = await client.post(LIST, **bearer(token(exp=int(clock.now) + 60)))
        assert answer.status == 401, answer.json
        assert (await client.post(LIST, **bearer(token(key=ROTATED, kid="k2",
                                                       exp=int(clock.now) + 60)))).status \
            == 200
    assert server.fetched.count(f"{ISSUER}/jwks") == 2
