"""OAuth 2.1 as an MCP client signs in (basic/authorization of 2025-11-25 and 2026-07-28):
the protocol's rules as pure functions, with no I/O, clock or randomness of their own (the
caller gives `now`, the random verifier and state, and the bytes it fetched). The shell's
glue (bridge/shell/servers/remote/oauth.py) moves the bytes."""
