"""What one HTTP request came to: the fields of its `http.request` log line.

Must not log (`router.RequestRouter.serve` does, once per request); the paths that serve a request
(`router.py` for both eras, `legacy_requests.py` for legacy sessions) fill it in as they go.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.shell.http.auth import Credential


@dataclass(slots=True)
class Outcome:
    status: int = 0
    rpc: str | None = None
    reason: str = ""
    stream: bool = False
    cancelled: bool = False
    session: int | None = None
    """The legacy session's number (never its id: that is the client's secret)."""
    credential: Credential | None = None
    """The token the request presented (when tokens are in force): a session created by
    it is bound to it."""
    forwarded_to: str | None = None
    """In a fleet: the address of the node that holds the session, which answered."""
    forwarded_by: str | None = None
    """In a fleet: the node that forwarded this request here (its pass checked)."""
    waited_for: bool = False
    """Counted among the requests a drain waits for (`drain.only_listens` says which)."""
