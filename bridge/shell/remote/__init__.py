"""The HTTP upstream: a Streamable HTTP server, to the driver one more server of JSON-RPC lines."""
