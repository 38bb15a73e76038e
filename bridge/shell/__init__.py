"""The shell, on trio: stdio, the child process, readers, outlets, signals, the clock, the daemon.

Must not interpret the protocol: every decision is the core's (bridge.core.bridge.Bridge).
"""
