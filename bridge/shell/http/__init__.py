"""The Streamable HTTP front of `mcp-rosetta serve --listen http://…`.

Must not hold protocol logic: bridge sessions (each core decides everything: one per tenant,
one per legacy session) behind an HTTP/1.1 endpoint on h11; the transport's rules are
`bridge.streamable`'s (the era of a request, its headers, the renaming of its ids, the
front's own answers, event-stream framing). The modules, from the bytes up: `address` (the
listen address and the hosts it answers to), `connection` (one h11 connection over a trio
stream), `auth` (static bearer tokens), `oauth_gate` and `resource_setup` (access tokens of
an authorization server, when `[oauth]` is set), `route` (one answer's queue of messages),
`modern` (the routes of 2026-07-28 POSTs on a tenant's core), `tenants` (each credential's
session for its 2026-07-28 clients), `legacy` and `legacy_requests` (legacy sessions and their
requests), `router` (one HTTP request: which answer it gets) and `front` (the listener, the
front's own session and the nursery that owns every task). Where each session's server comes
from (a child, or the remote endpoint of `--url`) is bridge/shell/session/server_side.py's.
"""
