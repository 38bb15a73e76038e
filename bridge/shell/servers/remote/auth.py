"""How the upstream's requests are authorised: the plug-in point of an auth provider.

Must not log or echo a credential. The upstream is given one `AuthProvider` when it is made
and never looks at credentials itself: the provider's `httpx2.Auth` signs every request the
upstream sends (POSTs, the GET streams, the DELETE), and may answer a 401 itself by sending
the request again with fresh credentials (httpx2's auth flow: `response = yield request`),
as the OAuth provider does (bridge/shell/servers/remote/oauth.py). A 401/403 that reaches the
upstream is the provider's last word: one error to the client, naming the URL, the server's
`WWW-Authenticate` challenge and the provider's `remedy`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Protocol

import httpx2

if TYPE_CHECKING:
    from bridge.shell.logs import Logger
    from bridge.shell.servers.remote.endpoint import Endpoint


class AuthProvider(Protocol):
    """What the upstream needs of whatever authorises its requests."""

    def auth(self) -> httpx2.Auth:
        """The httpx2 auth flow every request to the endpoint goes through."""
        ...

    def remedy(self, status: int) -> str:
        """What the user should do after the server refused with `status` (401 or 403)."""
        ...


class StaticHeaders(httpx2.Auth):
    """The user's own headers (--header, `headers = {...}`), the same on every request: the
    first provider. It cannot renew a refused credential; the user gives another one."""

    def __init__(self, headers: tuple[tuple[str, str], ...]) -> None:
        self._headers = headers

    def auth(self) -> httpx2.Auth:
        return self

    def remedy(self, status: int) -> str:
        given = any(name.lower() == "authorization" for name, _ in self._headers)
        if given:
            return ("check the credentials given with --header \"Authorization: ...\" "
                    "(expired, or not allowed here)")
        return 'give the credentials it asks for with --header "Authorization: Bearer ${TOKEN}"'

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response,
                                                              None]:
        for name, value in self._headers:
            request.headers[name] = value
        yield request


def provider_for(endpoint: Endpoint, log: Logger) -> AuthProvider:
    """The endpoint's provider: OAuth sign-in beside the user's headers, unless the user
    gives their own Authorization header (then those headers alone)."""
    if endpoint.oauth is None:
        return StaticHeaders(endpoint.headers)
    import os

    from bridge.shell.servers.remote.oauth import OAuth, SignIn
    from bridge.shell.servers.remote.token_store import TokenStore, config_root

    store = TokenStore(config_root(os.environ))
    return OAuth(endpoint.headers, SignIn(endpoint.url, endpoint.oauth, store, log,
                                          interactive=endpoint.interactive))
