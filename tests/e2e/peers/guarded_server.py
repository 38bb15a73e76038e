"""modern_server.py's Streamable HTTP server as a protected resource: every request to /mcp
needs a bearer JWT access token (RFC 9068) that the authorization server signed (its JWKS),
for this server (audience), from that issuer, not expired; else 401 with a WWW-Authenticate
naming the protected resource metadata (RFC 9728 §5.1), which this server also serves.

Every token it accepts is appended (its `jti`) to ACCEPTED_LOG, so a test can tell a
refreshed token from the one before it; with PRESENTED_LOG, the SHA-256 of every bearer token
presented (accepted or not) is appended there, so a test can tell which tokens reached it.

Usage: python guarded_server.py PORT ISSUER ACCEPTED_LOG [PRESENTED_LOG]
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import anyio
import jwt
import modern_server
import uvicorn

SCOPE = "mcp"


class Guard:
    """The ASGI app in front of the MCP app: metadata, then the token check."""

    def __init__(self, app: Any, port: int, issuer: str, accepted_log: str,
                 presented_log: str | None = None) -> None:
        self.app = app
        self.issuer = issuer
        self.resource = f"http://127.0.0.1:{port}/mcp"
        self.metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        self.keys = jwt.PyJWKClient(f"{issuer}/jwks", cache_keys=True)
        self.accepted_log = accepted_log
        self.presented_log = presented_log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["path"].startswith("/.well-known/oauth-protected-resource"):
            await answer(send, 200, {"resource": self.resource, "authorization_servers":
                                     [self.issuer], "scopes_supported": [SCOPE]})
        elif await self.verified(dict(scope["headers"]).get(b"authorization", b"")):
            await self.app(scope, receive, send)
        else:
            challenge = f'Bearer resource_metadata="{self.metadata_url}", scope="{SCOPE}"'
            await answer(send, 401, {"error": "invalid_token"},
                         [(b"www-authenticate", challenge.encode())])

    async def verified(self, header: bytes) -> bool:
        scheme, _, token = header.decode().partition(" ")
        if scheme.lower() != "bearer" or not token:
            return False
        if self.presented_log is not None:
            with open(self.presented_log, "a") as log:
                log.write(hashlib.sha256(token.encode()).hexdigest() + "\n")
        try:
            key = await anyio.to_thread.run_sync(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(token, key.key, algorithms=["RS256", "PS256", "ES256", "EdDSA"],
                                audience=self.resource, issuer=self.issuer,
                                options={"require": ["exp", "iat", "aud", "iss", "jti"]})
        except jwt.PyJWTError:
            return False
        if SCOPE not in str(claims.get("scope", "")).split():
            return False
        with open(self.accepted_log, "a") as log:
            log.write(json.dumps({"jti": claims["jti"], "client": claims.get("client_id")}) + "\n")
        return True


async def answer(send: Any, status: int, body: dict[str, Any],
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


if __name__ == "__main__":
    port, issuer, accepted = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    presented = sys.argv[4] if len(sys.argv) > 4 else None
    app = Guard(modern_server.SERVER.streamable_http_app(), port, issuer, accepted, presented)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
