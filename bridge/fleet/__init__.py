"""A fleet's rules without I/O: several fronts behind an ordinary load balancer, any of which
takes any request, because what a legacy session's id says is enough to find its node.

Must not do I/O, wait, read a clock or draw randomness (no trio, structlog, os, time, random,
sockets, HTTP libraries): the shell gives it the key, the time and the random bytes, and
moves the requests. Unlike `bridge.streamable` it signs, so it may use `hmac`.

The modules: `keys` (the keys a fleet's shared secret gives: one per use), `ids` (a legacy
session's `Mcp-Session-Id`: its node's address, a random part, a tag), `passes` (the header a
node puts on a request it forwards to the node that holds its session), `states` (the
envelope of a requestState: the node holding the call, its life), `members` (a node's
address, and which addresses belong to the fleet), `changes` (a change a tenant's server
raised, carried to that tenant's listen streams on the other nodes) and `home` (the node
that serves a tenant's modern requests, and the next ones while it cannot be reached).
"""
