"""The front's answers beside its endpoint: no OAuth (404 at once, naming the token to send,
with or without tokens), and a short page at its root."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bridge.shell.http.auth import Tokens
from bridge.shell.http.front import Access
from tests.shell.test_http_front import running

OAUTH = [
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/openid-configuration"),
    ("GET", "/mcp/.well-known/openid-configuration"),
    ("POST", "/register"),
]


@pytest.mark.parametrize(("method", "target"), OAUTH)
@pytest.mark.parametrize("tokens", [True, False])
async def test_oauth_discovery_is_404_naming_the_token_to_send(
        method: str, target: str, tokens: bool, autojump_clock: Any) -> None:
    access = Access(tokens=Tokens((b"alice-token",))) if tokens else Access()
    async with running(access=access) as r:
        client = await r.client()
        body = b'{"client_name":"x"}' if method == "POST" else b""
        await client.send(method, body, {"content-type": "application/json"}, target=target)
        answer = await client.whole()
        assert answer.status == 404
        assert "www-authenticate" not in answer.headers
        message = json.loads(answer.body)["error"]["message"]
        assert message.startswith("Not Found: this server does not sign clients in with OAuth")
        assert "Authorization: Bearer <token>" in message


async def test_other_paths_still_ask_for_the_token_first(autojump_clock: Any) -> None:
    async with running(access=Access(tokens=Tokens((b"alice-token",)))) as r:
        client = await r.client()
        for target in ("/.well-known/other", "/registered", "/mcp"):
            await client.send("GET", target=target)
            assert (await client.whole()).status == 401


async def test_the_root_is_a_page_naming_the_endpoint(autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        await client.send("GET", target="/")
        answer = await client.whole()
        assert answer.status == 200
        assert answer.headers["content-type"].startswith("text/plain")
        assert b"is at /mcp" in answer.body
