"""The HTTP upstream (`--url`): a Streamable HTTP server, to the driver one more server of
JSON-RPC lines. `endpoint` (cheap: settings only), `mapping` (pure), `auth` (the auth
provider), `upstream` (httpx2)."""
