"""OAuth 2.1 as an MCP client signs in, and as an MCP server checks the tokens it is sent
(basic/authorization of 2025-11-25 and 2026-07-28): the protocol's rules as pure functions,
with no I/O, clock or randomness of their own (the caller gives `now`, the random verifier
and state, and the bytes it fetched). The shell's glue moves the bytes: the client's in
bridge/shell/servers/remote/oauth.py, the HTTP front's (`resource`, `signed`) in
bridge/shell/http/oauth_gate.py."""
