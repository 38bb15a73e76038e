"""Mode B: the bridge is a modern server to the client and a legacy client to the server."""
