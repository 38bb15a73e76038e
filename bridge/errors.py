"""Exit codes (sysexits.h) and the one exception type that carries them to the command line.

Must not print or exit: bridge/cli.py turns a BridgeError into one line on stderr and its code.
"""

from __future__ import annotations

EX_OK = 0
EX_USAGE = 64
"""The command line was wrong (unknown flag, no server command)."""
EX_UNAVAILABLE = 69
"""The server could not be started (missing, not executable, exec failed)."""
EX_SOFTWARE = 70
"""An internal error; reserved for crashes, never chosen deliberately."""
EX_CONFIG = 78
"""The configuration file is missing, not TOML, or holds an unknown key or a bad value."""


class BridgeError(Exception):
    """A failure the user can fix, with the exit code that names its kind."""

    code: int = EX_SOFTWARE

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(BridgeError):
    code = EX_USAGE


class ConfigError(BridgeError):
    code = EX_CONFIG


class ServerUnavailable(BridgeError):
    code = EX_UNAVAILABLE
