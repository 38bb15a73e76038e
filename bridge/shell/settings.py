"""The shell's own settings (those the core never sees), with their defaults.

Must not read files, flags or the environment: bridge/config.py fills this in.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Timing:
    shutdown_grace: float = 2.0
    """Seconds from closing the child's stdin to SIGTERM."""
    kill_grace: float = 2.0
    """Seconds from SIGTERM to SIGKILL."""


@dataclass(frozen=True, slots=True)
class ShellConfig:
    command: tuple[str, ...] = ()
    """The server command and its arguments."""
    log_level: str = "info"
    """debug, info, warning, error or critical."""
    log_format: str = "auto"
    """json, console, or auto (console on a TTY, else JSON lines)."""
    timing: Timing = field(default_factory=Timing)
    """Grace periods of the child's shutdown."""
