"""The shell, on trio: the session (session/), fd I/O (fdio/), client and server sides (clients/,
servers/), the processes the bridge runs as (services/) and the HTTP front (http/).

Must not interpret the protocol: every decision is the core's (bridge.core.bridge.Bridge).
"""
