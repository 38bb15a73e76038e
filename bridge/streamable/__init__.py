"""Streamable HTTP without I/O: the protocol's rules for both faces of the bridge, as h11 is
HTTP/1.1's for the connections beneath them.

Must not do I/O, wait, read a clock or log (no trio, structlog, os, time, sockets): given a
request's headers and decoded body, or a line the core sends a server, it decides; the async
shell (`bridge/shell/http` for the front, `bridge/shell/remote` for the upstream) moves the
bytes and awaits. It imports the core's vocabulary only (`bridge.core`), never the shell.

The modules: `era` (which era a request of an endpoint serving both belongs to), `media`
(media types and the Accept rule), `target` (a request target's path, and how it is logged),
`headers` (a modern request's metadata headers checked against its body, `Mcp-Param-*`),
`renaming` (a modern request's id, progress token and subscription id in the front's own id
space, and back), `replies` (every answer the front gives itself, and the HTTP status of the
core's), `sse` (event-stream framing), `event_ids` (a legacy stream's event ids and the events
kept for a resumption) and `outbound` (the upstream's: what a line the core sends a server
becomes as a POST, and what an HTTP answer becomes for the core).
"""
