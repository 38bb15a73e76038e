"""Reading a daemon's log in tests: how many sessions ran at once."""

from __future__ import annotations

from typing import Any


def most_at_once(events: list[dict[str, Any]]) -> int:
    """The most sessions running at once, from the daemon's log events in order (one task
    writes them, so their order is the order things happened)."""
    running = most = 0
    for event in events:
        if event["event"] == "session.started":
            running += 1
            most = max(most, running)
        elif event["event"] in ("session.ended", "session.crashed"):
            running -= 1
    return most
