"""The server's restarts: why it went, how long to wait before starting it again, when to stop.

Must not act: the lifecycle (bridge.py) asks, then restarts, answers and stops; this only
describes an outage and keeps the budget, `max_restarts` within `restart_window` seconds, and
the back-off, `restart_backoff` doubling with each restart the window still counts.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from bridge.core.config import CoreConfig


class Outage:
    """How the server went: its exit status, or None while only its output is known closed."""

    __slots__ = ("code",)

    def __init__(self, code: int | None) -> None:
        self.code = code

    @property
    def what(self) -> str:
        """What happened, after "the server": "exited with status 1", "closed its output"."""
        if self.code is None:
            return "closed its output"
        if self.code < 0:  # ChildExited: a negative status is the signal that killed it
            return f"was killed by signal {-self.code}"
        return f"exited with status {self.code}"

    def error(self) -> tuple[str, dict[str, Any]]:
        """The message and data of the error each request lost with the server gets."""
        return (f"mcp-rosetta: the server {self.what} and is being restarted; "
                f"the request was lost with it",
                {"source": "mcp-rosetta", "exitStatus": self.code})


class Restarts:
    """The restarts counted in the window, and the back-off before the next one."""

    __slots__ = ("_config", "_times", "total")

    def __init__(self, config: CoreConfig) -> None:
        self._config = config
        self._times: deque[float] = deque()
        self.total = 0  # over the whole session

    def take(self, now: float) -> int | None:
        """Count a restart at `now`: its number within the window, or None past the budget."""
        window = self._config.restart_window
        times = self._times
        while times and times[0] <= now - window:
            times.popleft()
        if len(times) >= self._config.max_restarts:
            return None
        times.append(now)
        self.total += 1
        return len(times)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before restart number `attempt` of the window."""
        first, largest = self._config.restart_backoff
        return float(min(largest, first * 2 ** (attempt - 1)))

    def gave_up(self, outage: Outage) -> str:
        """Why the session ends: the reason every request still waiting is given."""
        config = self._config
        if config.max_restarts == 0:
            return f"mcp-rosetta: the server {outage.what} (restarts are off: max_restarts = 0)"
        return (f"mcp-rosetta: the server {outage.what} after {config.max_restarts} restarts "
                f"within {config.restart_window:g} s; mcp-rosetta gives up")
