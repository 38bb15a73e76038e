"""The process's series, kept as plain numbers: what every session's core counted of the
requests it answered (`observe.Tally`, shared) and what its driver did (messages carried,
restarts), plus the live sessions whose state the gauges read when scraped.

Must not import the exporter (`exposition.py` turns this into Prometheus' text when asked)
nor grow without bound: every label value is bounded (a method is one the specification
names, else "other"; a tool name is one of the first `MAX_TOOLS` well-formed names seen,
else "other", so a peer that invents names cannot mint series; the tally itself holds at
most `observe.BINS_AT_MOST` kinds). Nothing here runs per call: the tally is read, and its
labels bounded, when scraped.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from typing import Protocol

from bridge.core.bridge import ServerState
from bridge.core.events import Answered
from bridge.core.observe import CLIENT_METHODS, Observer, Tally

# OpenTelemetry's advice for `mcp.server.operation.duration` (seconds), and for
# `mcp.server.session.duration`.
OPERATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
                     120.0, 300.0)
SESSION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0, 1800.0, 3600.0, 14400.0, 86400.0)
MAX_TOOLS = 100
"""Distinct tool names labelled; later ones are "other"."""
OTHER = "other"

# A tool's name as the specification advises it (1-128 of these characters); cut shorter here.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-/]{1,64}")

OperationKey = tuple[str, str, str, str, str, str]
"""mcp_method_name, gen_ai_tool_name, error_type, mode, client_era, server_era."""


class Histogram:
    """Counts per bucket (the last: above every bound) and the sum of what was observed."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value


class Watched(Protocol):
    """What the gauges read of a live session's core (a Bridge given an observer)."""

    @property
    def server_state(self) -> ServerState: ...

    @property
    def observer(self) -> Observer | None: ...


class Series:
    """Every series of one process."""

    def __init__(self) -> None:
        self.tally = Tally(OPERATION_BUCKETS)
        """What every session's core counted of the requests it answered."""
        self.sessions = Histogram(SESSION_BUCKETS)
        self.refused: dict[str, int] = {}
        self.messages = {"client": 0, "server": 0}
        """Messages read from each peer, to be carried to the other."""
        self.restarts = 0
        self.live: set[Watched] = set()
        """The cores of the sessions now open."""
        self.tenants: Callable[[], int] = _none
        """The HTTP front's tenants now served (the front sets it)."""
        self.pool_processes: Callable[[], int] = _none
        """Server processes the pools run beyond each one's first (the front sets it)."""
        self.traced: Callable[[Answered], None] | None = None
        """What makes a span of each answered request (spans.py), if anything does."""
        self._tools: set[str] = set()

    def answered(self, fact: Answered) -> None:
        """A request answered, reported for its span (the tally has counted it)."""
        if self.traced is not None:
            self.traced(fact)

    def operations(self) -> dict[OperationKey, list[float]]:
        """The tally by bounded labels: counts per bucket of OPERATION_BUCKETS, then the
        sum of the durations."""
        merged: dict[OperationKey, list[float]] = {}
        for (method, tool, error_type, face), counts in self.tally.counts().items():
            known = method if method in CLIENT_METHODS else OTHER
            key = (known, self.tool(tool) if tool else "", error_type or "", *face)
            into = merged.get(key)
            if into is None:
                merged[key] = list(counts)
            else:
                merged[key] = [a + b for a, b in zip(into, counts, strict=True)]
        return merged

    def errors(self) -> dict[str, int]:
        """Error answers by class: the tally's, and the refusals before any core."""
        errors = dict(self.refused)
        for (_, _, error_type, _), counts in self.tally.counts().items():
            if error_type is not None:
                errors[error_type] = errors.get(error_type, 0) + int(sum(counts[:-1]))
        return errors

    def failed(self, error_type: str) -> None:
        """An error of that class reached a client before any core (a refusal)."""
        self.refused[error_type] = self.refused.get(error_type, 0) + 1

    def tool(self, name: str) -> str:
        """The label of a tool's name: bounded in length, charset and number."""
        tools = self._tools
        if name in tools:
            return name
        if len(tools) >= MAX_TOOLS or not _TOOL_NAME.fullmatch(name):
            return OTHER
        tools.add(name)
        return name

    def restarted(self) -> None:
        self.restarts += 1

    def opened(self, core: Watched) -> None:
        self.live.add(core)

    def closed(self, core: Watched, seconds: float) -> None:
        self.live.discard(core)
        self.sessions.observe(seconds)

    def servers(self) -> dict[str, int]:
        """The live sessions' servers by state (lower case)."""
        counts = {state.name.lower(): 0 for state in ServerState}
        for core in list(self.live):
            counts[core.server_state.name.lower()] += 1
        return counts

    def parked(self) -> int:
        return sum(core.observer.parked for core in list(self.live)
                   if core.observer is not None)


def _none() -> int:
    return 0
