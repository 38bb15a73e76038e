"""The trio shell: stdio, the child process, pumps, signals, timers, systemd and logging.

Must not interpret the protocol: every decision is the core's (bridge.core.bridge.Bridge).
"""
