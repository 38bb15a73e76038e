"""Mode A: the bridge is a legacy server to the client and a modern client to the server."""
