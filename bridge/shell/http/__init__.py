"""The Streamable HTTP front of `mcp-rosetta serve --listen http://…` (issue 21).

Must not hold protocol logic: one shared bridge session (its core decides everything) behind
an HTTP/1.1 endpoint on h11. The modules, from the bytes up: `address` (the listen address and
the hosts it answers to), `connection` (one h11 connection over a trio stream), `sse` (the
event-stream writer), `modern` (a 2026-07-28 POST mapped onto the shared core: headers checked
against the body, ids renamed, what the core sends routed back by `Send.request`), `replies`
(the front's own answers), `router` (one HTTP request: which answer it gets), `server_side`
(where each session's server comes from: a child, or the remote endpoint of `--url`) and
`front` (the listener, the shared session and the nursery that owns every task).
"""
