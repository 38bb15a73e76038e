"""`mcp-rosetta --url` signing in at a real authorization server: panva's oidc-provider
(peers/oauth_server.mjs: dynamic registration, PKCE S256, RFC 8707 resource indicators with
JWT access tokens for the MCP server, rotating refresh tokens, revocation), in front of
modern_server.py's Streamable HTTP server checking those JWTs (peers/guarded_server.py).

The client is the legacy SDK's (mcp 1.x) over stdio, the bridge its server; the browser is
peers/follow_redirects.py (the server approves at once), or `false` where no sign-in may
happen. Access tokens live TTL seconds, which is within the bridge's refresh margin of
expiry after TTL - REFRESH_MARGIN seconds: waiting DUE seconds makes the next use refresh.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import checks
import conformance_suite
import pytest
import venvs
from remote_peers import free_port, serving, wait_listening, without_proxies

from bridge.oauth.registration import DEVICE_GRANT
from bridge.oauth.tokens import REFRESH_MARGIN

TTL = REFRESH_MARGIN + 6
DUE = 7.0
FOLLOW = shlex.join([sys.executable, str(venvs.PEERS_DIR / "follow_redirects.py")]) + " %s"


@dataclass
class Servers:
    issuer: str
    url: str
    as_log: Path
    accepted_log: Path
    config: Path

    def events(self) -> list[dict[str, Any]]:
        lines = self.as_log.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def granted(self, grant_type: str) -> int:
        return sum(1 for e in self.events()
                   if e["event"] == "granted" and e["grant_type"] == grant_type)

    def errors(self) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["event"].endswith("error")]

    def accepted(self) -> list[str]:
        return [json.loads(line)["jti"] for line in self.accepted_log.read_text().splitlines()]

    def stored(self) -> dict[str, Any]:
        (found,) = (self.config / "mcp-rosetta" / "oauth" / "credentials").glob("*.json")
        stored: dict[str, Any] = json.loads(found.read_text())
        return stored

    def env(self, browser: str) -> dict[str, str]:
        return {"BROWSER": browser, "XDG_CONFIG_HOME": str(self.config)}


@pytest.fixture
def servers(tmp_path: Path, modern_python: venvs.SdkPython) -> Iterator[Servers]:
    as_port, mcp_port = free_port(), free_port()
    issuer, url = f"http://127.0.0.1:{as_port}", f"http://127.0.0.1:{mcp_port}/mcp"
    script = venvs.npm_peer("oidc-provider", "oauth_server.mjs")
    as_log, accepted = tmp_path / "as.log", tmp_path / "accepted.log"
    accepted.touch()
    with open(as_log, "w") as out:
        auth = subprocess.Popen(
            [conformance_suite.node(), str(script), str(as_port), url, str(int(TTL))],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_listening(as_port, auth, 30)
        guarded = modern_python.peer("guarded_server", str(mcp_port), issuer, str(accepted))
        for served in serving(guarded, mcp_port):
            yield Servers(issuer, served, as_log, accepted, tmp_path / "config")
    finally:
        auth.kill()
        auth.wait()


def tour(python: venvs.SdkPython, servers: Servers, browser: str, *options: str,
         env: dict[str, str] | None = None) -> dict[str, Any]:
    """The legacy client's basic tour through `mcp-rosetta --url`, checked."""
    bridge = [sys.executable, "-m", "bridge", "--url", servers.url, *options]
    report = venvs.run_client(python, "basic", bridge, env={**servers.env(browser),
                                                            **(env or {})})
    # What the client, the bridge and the authorization server said, should the tour fail.
    assert "protocolVersion" in report.get("initialize", {}), (
        report.get("errors"), report["_stderr"][-3000:], servers.events())
    checks.check_legacy_basic(report)
    return report


def test_signs_in_then_refreshes_early_with_the_rotated_refresh_token(legacy_python,
                                                                       servers):
    tour(legacy_python, servers, FOLLOW)
    assert servers.granted("authorization_code") == 1 and not servers.errors()
    first = servers.stored()["grant"]
    assert first["refresh_token"] and servers.accepted()
    seen = set(servers.accepted())
    time.sleep(DUE)
    tour(legacy_python, servers, "false")  # no browser: the stored grant must do
    assert servers.granted("authorization_code") == 1
    assert servers.granted("refresh_token") >= 1 and not servers.errors(), servers.events()
    after = servers.stored()["grant"]
    assert after["refresh_token"] != first["refresh_token"]
    assert after["access_token"] != first["access_token"]
    assert set(servers.accepted()) - seen  # the server was sent the refreshed token


def test_two_processes_refreshing_at_once_use_the_refresh_token_once(legacy_python, servers):
    tour(legacy_python, servers, FOLLOW)
    time.sleep(DUE)
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(tour, legacy_python, servers, "false") for _ in range(2)]
        for run in runs:
            run.result()
    # A rotated refresh token used twice would revoke the grant (an invalid_grant error, and
    # a new sign-in that the `false` browser fails).
    assert servers.granted("authorization_code") == 1
    assert servers.granted("refresh_token") >= 1
    assert not servers.errors(), servers.events()
    assert not any(e["event"] == "revoked" for e in servers.events())


def test_a_revoked_grant_signs_in_once_more(legacy_python, servers):
    tour(legacy_python, servers, FOLLOW)
    stored = servers.stored()
    revoke(servers.issuer, stored["grant"]["refresh_token"], stored["client"]["client_id"])
    time.sleep(DUE)
    tour(legacy_python, servers, FOLLOW)
    assert servers.granted("authorization_code") == 2, servers.events()
    refused = [e for e in servers.errors() if e["event"] == "grant_error"]
    assert [e["error"] for e in refused] == ["invalid_grant"], servers.events()


def test_the_daemon_uses_the_stored_sign_in(legacy_python, servers, tmp_path):
    bridge = [sys.executable, "-m", "bridge"]
    env = {**without_proxies(dict(os.environ)), **servers.env(FOLLOW)}
    login = subprocess.run([*bridge, "auth", "login", servers.url], capture_output=True,
                           text=True, timeout=60, env=env)
    assert login.returncode == 0, login.stderr[-2000:]
    assert servers.granted("authorization_code") == 1
    sock = tmp_path / "d.sock"
    with open(tmp_path / "daemon.log", "w") as log:
        daemon = subprocess.Popen([*bridge, "serve", "--listen", f"unix:{sock}", "--url",
                                   servers.url, "--log-format", "json"],
                                  stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                                  env={**env, "BROWSER": "false"})
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        report = venvs.run_client(legacy_python, "basic", [*bridge, "connect", f"unix:{sock}"],
                                  env=servers.env("false"))
        checks.check_legacy_basic(report)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    daemon_log = (tmp_path / "daemon.log").read_text()
    assert servers.granted("authorization_code") == 1 and not servers.errors()
    assert "oauth.signed_in" not in daemon_log
    assert servers.stored()["grant"]["access_token"] not in daemon_log


def test_a_service_signs_in_with_client_credentials(legacy_python, servers):
    # The client oauth_server.mjs registered for services, its secret from the environment.
    service = ("--oauth-client-id", "e2e-service", "--oauth-client-credentials")
    secret = {"MCP_ROSETTA_OAUTH_CLIENT_SECRET": "e2e-service-secret"}
    tour(legacy_python, servers, "false", *service, env=secret)
    assert servers.granted("client_credentials") == 1 and not servers.errors()
    first = servers.stored()["grant"]
    assert first["refresh_token"] is None
    time.sleep(DUE)  # due: a new grant, as there is no refresh token
    tour(legacy_python, servers, "false", *service, env=secret)
    assert servers.granted("client_credentials") >= 2 and not servers.errors()
    assert servers.granted("authorization_code") == 0
    assert servers.stored()["grant"]["access_token"] != first["access_token"]


def test_auth_login_by_device_then_the_bridge_uses_it(legacy_python, servers):
    # No browser: `auth login --device` prints the page and the code; the user (another
    # device: peers/device_user.py) opens the page and approves; the login then returns.
    env = {**without_proxies(dict(os.environ)), **servers.env("false")}
    login = subprocess.Popen([sys.executable, "-m", "bridge", "auth", "login", "--device",
                              servers.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True, env=env)
    assert login.stderr is not None
    told = ""
    for line in login.stderr:
        told += line
        if (page := re.search(r"open (\S+) on any device and enter the code (\S+)", line)):
            break
    assert page is not None, told
    user = [sys.executable, str(venvs.PEERS_DIR / "device_user.py"), page[1]]
    subprocess.run(user, check=True, timeout=60, env=env)
    out, err = login.communicate(timeout=60)
    assert login.returncode == 0 and out == "", told + err  # stdout: the protocol's alone
    assert "auth.signed_in" in err and servers.url in err, told + err
    assert servers.granted(DEVICE_GRANT) == 1 and not servers.errors(), servers.events()
    tour(legacy_python, servers, "false")
    assert servers.granted("authorization_code") == 0 and not servers.errors()


def revoke(issuer: str, token: str, client_id: str) -> None:
    """RFC 7009 revocation of `token` by its public client: the grant goes with it."""
    form = urllib.parse.urlencode({"token": token, "token_type_hint": "refresh_token",
                                   "client_id": client_id}).encode()
    with urllib.request.urlopen(f"{issuer}/token/revocation", form, timeout=10) as answer:
        assert answer.status == 200
