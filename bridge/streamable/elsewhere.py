"""What the front answers itself at paths beside its MCP endpoint, before asking for a token.

An OAuth client (mcp-remote, an SDK's) that meets a 401 looks for the server's OAuth metadata
and registers itself before it asks the user to sign in. A front with bearer tokens but no
OAuth must say "no OAuth here" at those paths at once (404, as the Authorization section's
discovery takes a missing document), or the client waits for a sign-in that can never end;
the 404 names the token the client should send instead. A front that takes OAuth tokens
serves its protected resource metadata there instead (its other discovery paths are the
authorization server's, not the front's: 404). A browser at the front's root gets a
short page saying what is served where, rather than an empty 404.
"""

from __future__ import annotations

from bridge.core.eras import INVALID_REQUEST
from bridge.streamable.replies import Reply, not_found

# RFC 9728 §3 (protected resource metadata, also under the resource's path), RFC 8414 §3
# (authorization server metadata), OpenID Connect Discovery §4, and the default registration
# endpoint of dynamic client registration (RFC 7591) a client tries when discovery fails.
DISCOVERY_PREFIXES = ("/.well-known/oauth-protected-resource",
                      "/.well-known/oauth-authorization-server",
                      "/.well-known/openid-configuration")
OPENID_APPENDED = "/.well-known/openid-configuration"
"""OpenID Connect Discovery also appends its path to an issuer's (`/mcp/.well-known/...`)."""
REGISTRATION = "/register"
PROTECTED_RESOURCE = DISCOVERY_PREFIXES[0]

NO_OAUTH = ("Not Found: this server does not sign clients in with OAuth; send "
            "Authorization: Bearer <token> with every request (a token of the front's "
            "token file or MCP_ROSETTA_TOKEN)")

SIGN_IN_ELSEWHERE = ("Not Found: this server is not an authorization server; its protected "
                     "resource metadata (" + PROTECTED_RESOURCE + " followed by the "
                     "endpoint's path) names the one to sign in with")


def elsewhere(method: str, path: str, endpoint: str,
              metadata: Reply | None = None) -> Reply | None:
    """The front's own answer to `method` at `path` (not its `endpoint`), or None when the
    request goes on as any other (to a token check, then a 404). `metadata`: the front's
    protected resource metadata when it takes OAuth tokens."""
    if path == endpoint:
        return None
    if _oauth(method, path):
        if metadata is None:
            return not_found(INVALID_REQUEST, NO_OAUTH, reason="no OAuth on this front")
        if method == "GET" and path in (PROTECTED_RESOURCE + endpoint.rstrip("/"),
                                        PROTECTED_RESOURCE):
            return metadata
        return not_found(INVALID_REQUEST, SIGN_IN_ELSEWHERE,
                         reason="the authorization server is elsewhere")
    if path == "/" and method == "GET":
        page = (f"mcp-rosetta: an MCP server (Streamable HTTP, both eras) is at {endpoint}; "
                "point an MCP client there.\n").encode()
        return Reply(200, page, (("content-type", "text/plain; charset=utf-8"),),
                     reason="the front's root: its page")
    return None


def _oauth(method: str, path: str) -> bool:
    if method == "POST" and path == REGISTRATION:
        return True
    return method == "GET" and (path.endswith(OPENID_APPENDED) or any(
        path == prefix or path.startswith(prefix + "/") for prefix in DISCOVERY_PREFIXES))
