"""The server's restarts: why it went, how long to wait before starting it again, when to stop.

Must not act: the server's life (server_life.py) asks, then restarts or gives up; this only
describes an outage and keeps the budget, `max_restarts` within `restart_window` seconds, and
the back-off, `restart_backoff` doubling with each restart the window still counts.
"""

from __future__ import annotations

from collections import deque

from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.stderr_cause import telling_line

# What of a server's stderr an error carries: its last lines, each cut short.
STDERR_LINES, STDERR_LINE_CHARS = 10, 400


class Outage:
    """How the server went: its exit status, or None while only its output is known closed;
    what the shell knows beyond it (`cause`: why it could not start) and its last stderr
    lines."""

    __slots__ = ("cause", "code", "stderr_tail", "telling", "went")

    def __init__(self, code: int | None, cause: str = "",
                 stderr_tail: tuple[str, ...] = (), went: str = "") -> None:
        self.code = code
        self.cause = cause
        self.went = went
        self.stderr_tail = tuple(line[:STDERR_LINE_CHARS] for line in stderr_tail[-STDERR_LINES:])
        telling = telling_line(stderr_tail)
        self.telling = None if telling is None else telling[:STDERR_LINE_CHARS]
        """The line of its stderr that says why (`stderr_cause`), from all the lines given."""

    def learn(self, later: Outage) -> None:
        """The second word of the same crash (its exit after its closed output)."""
        if self.code is None:
            self.code = later.code
        self.cause = self.cause or later.cause
        if not self.stderr_tail:
            self.stderr_tail, self.telling = later.stderr_tail, later.telling

    @property
    def what(self) -> str:
        """What happened, after "the server": "exited with status 1", "closed its output"."""
        if self.went:
            return self.went
        if self.code is None:
            return "closed its output"
        if self.code < 0:  # ChildExited: a negative status is the signal that killed it
            return f"was killed by signal {-self.code}"
        return f"exited with status {self.code}"

    def error(self) -> tuple[str, Message]:
        """The message and data of the error each request lost with the server gets."""
        return (f"mcp-rosetta: the server {self.what} and is being restarted; "
                f"the request was lost with it",
                {"source": "mcp-rosetta", "exitStatus": self.code})

    def data(self) -> Message:
        """What an error the session ends with carries: the exit status, never null when it
        is known, why it could not start and its last stderr lines, if known."""
        data: Message = {"source": "mcp-rosetta", "exitStatus": self.code}
        if self.cause:
            data["cause"] = self.cause
        if self.stderr_tail:
            data["stderrTail"] = list(self.stderr_tail)
        return data

    def never_served(self) -> str:
        """Why a server that never answered anything cannot be used, and what to do."""
        if self.cause:
            text = f"mcp-rosetta: the server could not be started: {self.cause}"
        else:
            text = (f"mcp-rosetta: the server {self.what} before it answered anything; "
                    f"run the server command by hand to see why")
        if self.telling is None:
            return text
        last = next(line for line in reversed(self.stderr_tail) if line.strip())
        told = "ended with" if last.strip() == self.telling else "said"
        return f"{text}. Its stderr {told}: {self.telling}"


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
