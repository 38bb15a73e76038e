"""The HTTP front as an OAuth protected resource, before a real authorization server: panva's
oidc-provider (peers/oauth_server.mjs: dynamic registration, PKCE, resource indicators with
JWT access tokens for the front), its signing key made here so that this test can sign tokens
the server would never issue (expired, for another audience...) and see the front refuse them.

Must not fake a peer: the front is `python -m bridge serve --listen http://… --oauth-issuer …`
before the real legacy (mcp 1.x) or modern (mcp 2.x) stdio server (or env_server.py, or, with
--url, guarded_server.py, which records the tokens it is presented); the clients sign in by
themselves: the modern SDK's client with its OAuth provider (peers/oauth_client.py), in both
eras, and mcp-remote under the legacy SDK's stdio client; a bad token is sent as plain
HTTP/1.1, and tenant_client.py's many-clients tour runs with two identities' tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import checks
import conformance_suite as cs
import jwt
import pytest
import venvs
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from remote_peers import wait_listening

WAIT = 90.0
KID = "e2e-signing-key"
SCOPE = "mcp"
TTL = 300


@dataclass
class Setup:
    issuer: str
    url: str
    key: rsa.RSAPrivateKey
    log: Path
    as_log: Path

    def granted(self) -> list[str]:
        """The grant types the authorization server granted, in order."""
        lines = [json.loads(line) for line in self.as_log.read_text().splitlines()
                 if line.startswith("{")]
        return [e["grant_type"] for e in lines if e["event"] == "granted"]

    def token(self, **changed: Any) -> str:
        """An access token as the authorization server signs them, with `changed` claims
        (None: left out); `key`, `alg`, `kid` sign it otherwise."""
        key, alg = changed.pop("key", self.key), changed.pop("alg", "RS256")
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.url, "sub": "crafted-user", "exp": now + 60,
                  "iat": now, "scope": SCOPE, "client_id": "e2e", "jti": str(now)}
        claims.update(changed)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode(claims, key, alg, headers={"kid": KID, "typ": "at+jwt"})


def private_jwks(key: rsa.RSAPrivateKey) -> dict[str, Any]:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}


@contextmanager
def authorization_server(tmp_path: Path, resource: str, key: rsa.RSAPrivateKey,
                         token_format: str = "jwt") -> Iterator[str]:
    port = cs.free_port()
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(private_jwks(key)))
    script = venvs.npm_peer("oidc-provider", "oauth_server.mjs")
    with open(tmp_path / "as.log", "w") as out:
        server = subprocess.Popen([cs.node(), str(script), str(port), resource, str(TTL),
                                   str(keys), token_format], stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        wait_listening(port, server, 30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def oauth_front(tmp_path: Path, signing_key: rsa.RSAPrivateKey, legacy_python: venvs.SdkPython,
                modern_python: venvs.SdkPython) -> Callable[..., Any]:
    """Starts the authorization server and a front trusting it, before the `server` peer."""

    @contextmanager
    def start(server: str = "legacy", opaque: bool = False) -> Iterator[Setup]:
        """`server`: "legacy", "modern", "env" (peers/env_server.py), or "upstream": the
        front's server is guarded_server.py's, at its own URL (--url), which the front signs
        in to as the authorization server's service client. `opaque`: the access tokens
        are opaque, and the front introspects them as the service client."""
        port, upstream_port = cs.free_port(), cs.free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        upstream = f"http://127.0.0.1:{upstream_port}/mcp"
        log = tmp_path / "front.log"
        resources = url if server != "upstream" else f"{url},{upstream}"
        token_format = "opaque" if opaque else "jwt"
        with authorization_server(tmp_path, resources, signing_key, token_format) as issuer, \
                ExitStack() as stack:
            served = {"legacy": legacy_python.peer("legacy_server"),
                      "modern": modern_python.peer("modern_server"),
                      "env": [sys.executable, str(venvs.PEERS_DIR / "env_server.py")]}
            if server == "upstream":
                guarded = modern_python.peer("guarded_server", str(upstream_port), issuer,
                                             str(tmp_path / "accepted.log"),
                                             str(tmp_path / "presented.log"))
                stack.enter_context(cs.http_server(guarded, upstream_port))
                target = ["--url", upstream, "--oauth-client-id", "e2e-service",
                          "--oauth-client-credentials"]
            else:
                target = ["--", *served[server]]
            if opaque:
                secret = tmp_path / "introspection.secret"
                secret.write_text("e2e-service-secret\n")
                target = ["--oauth-introspection-client-id", "e2e-service",
                          "--oauth-introspection-secret-file", str(secret), *target]
            cmd = [sys.executable, "-m", "bridge", "serve", "--listen", url, "--oauth-issuer",
                   issuer, "--oauth-scope", SCOPE, "--log-format", "json", *target]
            env = (f"MCP_ROSETTA_OAUTH_CLIENT_SECRET=e2e-service-secret "
                   f"XDG_CONFIG_HOME={tmp_path / 'config'}")
            with cs.http_server(["sh", "-c", f'{env} exec "$@" 2>>{log}', "front", *cmd],
                                port):
                yield Setup(issuer, url, signing_key, log, tmp_path / "as.log")

    return start


def hmac_with_public_key(setup: Setup) -> str:
    """The algorithm confusion attack: HS256 keyed with the server's public key (PEM), which
    anyone may fetch. Made by hand: PyJWT will not key HMAC with a PEM."""
    pem = setup.key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    head = _b64({"alg": "HS256", "typ": "at+jwt", "kid": KID})
    body = _b64({"iss": setup.issuer, "aud": setup.url, "sub": "mallory", "exp": now + 60,
                 "scope": SCOPE})
    mac = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def sign_in_and_use(python: venvs.SdkPython, url: str, mode: str,
                    user: str) -> dict[str, Any]:
    done = subprocess.run(python.peer("oauth_client", url, mode, user), capture_output=True,
                          text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in report, (report, done.stderr[-4000:])
    return report


def request(url: str, token: str | None, method: str = "POST", path: str = "/mcp",
            tool: str | None = None) -> tuple[int, dict[str, str], Any]:
    """A modern tools/list (or tools/call of `tool`) with `token` (or none): status,
    headers, JSON body."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    rpc = "tools/list" if tool is None else "tools/call"
    params: dict[str, Any] = {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}}
    if tool is not None:
        params.update(name=tool, arguments={})
    body = {"jsonrpc": "2.0", "id": 7, "method": rpc, "params": params}
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2026-07-28", "mcp-method": rpc}
    if tool is not None:
        headers["mcp-name"] = tool
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request(method, path, json.dumps(body) if method == "POST" else None, headers)
        response = conn.getresponse()
        data = response.read()
        if response.getheader("content-type") == "text/event-stream":
            data = [line for line in data.split(b"\n") if line.startswith(b"data: ")][-1][6:]
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                json.loads(data) if data else None)
    finally:
        conn.close()


@pytest.mark.parametrize("server", ["legacy", "modern"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_sdk_client_signs_in_by_itself_and_uses_the_front(oauth_front, modern_python,
                                                              server, mode):
    with oauth_front(server) as setup:
        report = sign_in_and_use(modern_python, setup.url, mode, "alice")
    assert report["echo"] == ["hello from alice"], report
    assert {"echo", "pid"} <= set(report["tools"]) and report["signed_in"] == 1
    assert setup.granted() == ["authorization_code"]
    log = setup.log.read_text()
    assert "oauth.keys_fetched" in log
    assert setup.issuer in log and "Bearer ey" not in log


@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_mcp_remote_under_a_legacy_stdio_client_signs_in_by_itself(
        oauth_front, legacy_python, tmp_path, server):
    # The browser mcp-remote opens (through xdg-open, which takes $BROWSER): one that
    # follows the authorization URL's redirects to mcp-remote's callback.
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nexec {sys.executable} '
                       f'{venvs.PEERS_DIR / "follow_redirects.py"} "$1"\n')
    browser.chmod(0o755)
    proxy = venvs.npm_client("mcp-remote") / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    with oauth_front(server) as setup:
        remote = [cs.node(), str(proxy), setup.url, str(cs.free_port()), "--transport",
                  "http-only"]
        # mcp-remote keeps its OAuth state in ~/.mcp-auth: a HOME of its own
        report = venvs.run_client(legacy_python, "basic", remote,
                                  env={"HOME": str(tmp_path), "BROWSER": str(browser)})
    assert "protocolVersion" in report.get("initialize", {}), (
        report.get("errors"), report["_stderr"][-3000:], setup.log.read_text()[-3000:])
    checks.check_legacy_basic(report)
    assert setup.granted() == ["authorization_code"]


def test_the_metadata_names_the_issuer_and_a_401_names_the_metadata(oauth_front):
    with oauth_front() as setup:
        status, headers, body = request(setup.url, None)
        assert status == 401, body
        metadata_url = setup.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        assert headers["www-authenticate"] == \
            f'Bearer resource_metadata="{metadata_url}", scope="{SCOPE}"'
        status, _, document = request(setup.url, None, "GET",
                                      "/.well-known/oauth-protected-resource/mcp")
        assert status == 200
        assert document["resource"] == setup.url
        assert document["authorization_servers"] == [setup.issuer]
        assert document["scopes_supported"] == [SCOPE]
        status, _, _ = request(setup.url, None, "GET",
                               "/.well-known/oauth-authorization-server")
        assert status == 404  # the authorization server's, not the front's
        assert request(setup.url, setup.token())[0] == 200


def test_tokens_it_must_not_take_get_401_and_a_missing_scope_403(oauth_front):
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with oauth_front() as setup:
        now = int(time.time())
        refused = {
            "another audience": setup.token(aud="http://127.0.0.1:1/other"),
            "expired": setup.token(exp=now - 3600, iat=now - 7200),
            "another issuer": setup.token(iss="http://127.0.0.1:2"),
            "another key": setup.token(key=other_key),
            "alg none": setup.token(key=None, alg="none"),
            "hmac with the public key": hmac_with_public_key(setup),
            "not yet valid": setup.token(nbf=now + 3600),
            "no subject": setup.token(sub=None),
            "not a token": "opaque-and-unknown",
        }
        for why, token in refused.items():
            status, headers, body = request(setup.url, token)
            assert status == 401, (why, body)
            assert 'error="invalid_token"' in headers["www-authenticate"], why
            assert "resource_metadata=" in headers["www-authenticate"], why
            assert body["id"] == 7 and body["error"]["message"].startswith("Unauthorized")
        status, headers, body = request(setup.url, setup.token(scope="other"))
        assert status == 403, body
        assert headers["www-authenticate"].endswith(
            f'scope="{SCOPE}", error="insufficient_scope", error_description="the token '
            f'does not grant the scope {SCOPE}"')
        assert request(setup.url, setup.token())[0] == 200
    log = setup.log.read_text()
    for token in refused.values():
        assert token not in log


def test_two_identities_are_two_tenants(oauth_front, modern_python):
    with oauth_front("legacy") as setup:
        alice = sign_in_and_use(modern_python, setup.url, "2026-07-28", "alice")
        bob = sign_in_and_use(modern_python, setup.url, "2026-07-28", "bob")
        again = sign_in_and_use(modern_python, setup.url, "2026-07-28", "alice")
    # One legacy server per tenant: Alice's two sign-ins share hers; Bob has his own.
    assert alice["pid"] == again["pid"] != bob["pid"]
    started = [json.loads(line) for line in setup.log.read_text().splitlines()
               if '"http.tenant_started"' in line]
    assert len(started) == 2
    assert all(len(line["tenant"]) == 16 for line in started)


def test_the_client_s_token_never_reaches_the_server_s_environment(oauth_front):
    with oauth_front("env") as setup:
        token = setup.token()
        status, _, body = request(setup.url, token, tool="env")
    assert status == 200, body
    seen = json.loads(body["result"]["content"][0]["text"])["env"]
    assert seen and not any(token in f"{name}={value}" or "Bearer" in value
                            for name, value in seen.items())


def test_the_client_s_token_never_reaches_an_upstream(oauth_front, modern_python, tmp_path):
    with oauth_front("upstream") as setup:
        report = sign_in_and_use(modern_python, setup.url, "2026-07-28", "alice")
    assert report["echo"] == ["hello from alice"], report
    presented = (tmp_path / "presented.log").read_text().split()
    assert presented and report["token_sha256"] not in presented
    # The upstream was sent the front's own token (the service client's), and only that.
    accepted = [json.loads(line) for line in
                (tmp_path / "accepted.log").read_text().splitlines()]
    assert accepted and {a["client"] for a in accepted} == {"e2e-service"}
    assert sorted(setup.granted()) == ["authorization_code", "client_credentials"]


def test_opaque_tokens_are_introspected(oauth_front, modern_python):
    with oauth_front("legacy", opaque=True) as setup:
        alice = sign_in_and_use(modern_python, setup.url, "2026-07-28", "alice")
        bob = sign_in_and_use(modern_python, setup.url, "2026-07-28", "bob")
        status, headers, body = request(setup.url, "an-opaque-token-nobody-issued")
        log = setup.log.read_text()
    assert alice["echo"] == ["hello from alice"] and alice["pid"] != bob["pid"]
    assert status == 401 and "not active" in body["error"]["message"]
    assert 'error="invalid_token"' in headers["www-authenticate"]
    assert "e2e-service-secret" not in log


def test_the_many_clients_tour_keeps_two_identities_apart(oauth_front, modern_python):
    """test_http_tenants.py's tour of two clients, each an identity of the authorization
    server (its key signs their tokens) rather than a static token."""
    with oauth_front("legacy") as setup:
        alice, bob = setup.token(sub="alice"), setup.token(sub="bob")
        cmd = [modern_python.path, str(venvs.PEERS_DIR / "tenant_client.py"), setup.url,
               alice, bob]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT * 2,
                              cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.splitlines()[-1])
    a, b = report["A"], report["B"]
    assert a["roots"] == {"roots": ["file:///secret-of-A"]}
    assert "secret-of-A" not in json.dumps(b["roots"])
    assert a["heard"] == {"b_added": [], "a_added": ["ToolsListChanged"]}
    assert a["logs"] == [["warning", "chatty warning"], ["error", "chatty error"]]
    assert b["logs"] == [["error", "chatty error"]]
