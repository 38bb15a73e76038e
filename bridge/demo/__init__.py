"""`mcp-rosetta demo`: a legacy client and a modern-only server, shown talking through the bridge.

Must not be imported by the bridge itself: it is an example and a smoke test, nothing more.
"""
