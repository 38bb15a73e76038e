"""The HTTP upstream (`--url`): a Streamable HTTP server, to the driver one more server of
JSON-RPC lines. `endpoint` (cheap: settings only), `auth` (the auth provider), `upstream`
(httpx2); what each line becomes over HTTP is `bridge.streamable.outbound`'s (pure)."""
