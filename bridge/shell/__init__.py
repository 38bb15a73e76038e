"""The shell: stdio, the child process, reader threads, outlets, signals, the clock, systemd, logs.

Must not interpret the protocol: every decision is the core's (bridge.core.bridge.Bridge).
"""
