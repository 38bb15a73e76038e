"""A client of the modern SDK (mcp 2.x `Client`) that signs in by itself with the SDK's OAuth
provider (`OAuthClientProvider`): on the server's 401 it reads the protected resource metadata,
registers at the authorization server (dynamic registration), and runs the authorization code
flow with PKCE. The user's browser is played here: the authorization URL is followed through
its redirects (cookies kept) up to the redirect URI, whose code the provider then takes; the
authorization server (peers/oauth_server.mjs) signs in the account named by `login_hint`.

Usage: oauth_client.py URL MODE USER
  MODE: "legacy" (initialize handshake) or "2026-07-28"; USER: the account to sign in as.
Prints ONE JSON object on stdout: {"echo": text, "pid": the server's pid, "tools": [names],
"signed_in": how many sign-ins it ran, "token_sha256": of the access token it used}, or
{"error": "..."}.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

REDIRECT = "http://127.0.0.1:9/callback"
"""Never fetched: the browser below stops at it and hands its query to the provider."""
TIMEOUT = 60.0


class Memory:
    """The provider's storage: this run's tokens and registration."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """Follows the authorization URL's redirects as a user's browser would."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.answer: dict[str, str] = {}
        self.sign_ins = 0

    async def open(self, url: str) -> None:
        self.sign_ins += 1
        url = f"{url}&{urlencode({'login_hint': self.user})}"
        async with httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as http:
            for _ in range(20):
                response = await http.get(url)
                location = response.headers.get("location")
                if location is None:
                    raise RuntimeError(f"the sign-in stopped at {url}: {response.status_code}")
                url = urljoin(url, location)
                if url.startswith(REDIRECT):
                    query = parse_qs(urlsplit(url).query)
                    self.answer = {k: v[0] for k, v in query.items()}
                    return
        raise RuntimeError("the sign-in redirected too often")

    async def redirected(self) -> AuthorizationCodeResult:
        if "code" not in self.answer:
            raise RuntimeError(f"the authorization server sent no code: {self.answer}")
        return AuthorizationCodeResult(code=self.answer["code"], state=self.answer.get("state"),
                                       iss=self.answer.get("iss"))


async def run(url: str, mode: str, user: str) -> dict[str, Any]:
    browser = Browser(user)
    metadata = OAuthClientMetadata(client_name=f"e2e {user}", redirect_uris=[REDIRECT],
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none")
    memory = Memory()
    provider = OAuthClientProvider(url, metadata, memory, redirect_handler=browser.open,
                                   callback_handler=browser.redirected)
    http = httpx2.AsyncClient(auth=provider, timeout=TIMEOUT)
    async with Client(streamable_http_client(url, http_client=http), mode=mode,
                      read_timeout_seconds=TIMEOUT) as client:
        echoed = await client.call_tool("echo", {"text": f"hello from {user}"})
        pid = await client.call_tool("pid", {})
        tools = await client.list_tools()
    text = [c.text for c in echoed.content if isinstance(c, types.TextContent)]
    pid_value = (pid.structured_content or {}).get("pid")
    if pid_value is None:
        pid_value = json.loads(pid.content[0].text)["pid"]  # type: ignore[union-attr]
    assert memory.tokens is not None
    used = hashlib.sha256(memory.tokens.access_token.encode()).hexdigest()
    return {"echo": text, "pid": pid_value, "tools": sorted(t.name for t in tools.tools),
            "signed_in": browser.sign_ins, "token_sha256": used}


if __name__ == "__main__":
    try:
        out = anyio.run(run, *sys.argv[1:4])
    except BaseException as exc:  # the test prints what went wrong
        out = {"error": repr(exc)}
    print(json.dumps(out), flush=True)
