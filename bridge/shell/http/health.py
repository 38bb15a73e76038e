"""`GET /healthz` and `GET /readyz` on the front's port, beside (not under) the MCP path.

Must not touch the core or the connection: it reads the server's state through `ServerView`
and words the answer; `router.py` asks it first, before any other check, so a probe is
answered whatever its Host header says (a load balancer or kubelet names the backend by its
address) and without a token:
- `/healthz` is 200 `{"status":"ok"}` while the process serves HTTP at all: it says nothing
  a client could use.
- `/readyz` is 200 `{"status":"ready"}` once the server child answers, else 503 naming the
  state (`starting`, `restarting`, `down`, `draining`: told to stop, still serving what it
  holds (`bridge.streamable.drain`), `stopping`). It needs no token either: it gives
  one word, no reason or detail (those are in the log and systemd's STATUS=), and the
  callers that need it (load balancers, orchestrators' probes) usually hold no credential.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from bridge.core.bridge import ServerState
from bridge.core.codec import encode
from bridge.shell.http.connection import Request
from bridge.streamable import replies
from bridge.streamable.drain import NodeStage
from bridge.streamable.media import JSON
from bridge.streamable.replies import Reply

HEALTHZ = "/healthz"
READYZ = "/readyz"
PATHS = frozenset({HEALTHZ, READYZ})
_JSON = ((("content-type", JSON),))


class ServerView(Protocol):
    """What /readyz reads of the core (`bridge.core.bridge.Bridge` has both)."""

    @property
    def server_state(self) -> ServerState: ...

    @property
    def has_served(self) -> bool: ...


class Readiness(Enum):
    READY = "ready"
    STARTING = "starting"
    """The first server is starting or being probed."""
    RESTARTING = "restarting"
    """A server served, exited, and its successor is starting or being probed."""
    DOWN = "down"
    """No server runs: a restart's back-off, or the session has failed."""
    DRAINING = "draining"
    """Told to stop: it serves the sessions it holds, and takes no new one."""
    STOPPING = "stopping"
    UNKNOWN = "unknown"
    """The front was given no view of the server (tests with a scripted core)."""


def readiness(view: ServerView | None, stopping: bool, draining: bool = False) -> Readiness:
    if stopping:
        return Readiness.STOPPING
    if draining:
        return Readiness.DRAINING
    if view is None:
        return Readiness.UNKNOWN
    state = view.server_state
    if state is ServerState.SERVING:
        return Readiness.READY
    if state is ServerState.DOWN:
        return Readiness.DOWN
    return Readiness.RESTARTING if view.has_served else Readiness.STARTING


@dataclass(slots=True)
class Health:
    view: ServerView | None = None
    stage: NodeStage = NodeStage.SERVING
    """Moved by the front once asked to stop: ready no more, though still answering."""

    def answer(self, request: Request) -> Reply | None:
        """The answer to a health request, or None for any other request."""
        path = request.target.split("?", 1)[0]
        if path not in PATHS:
            return None
        if request.method != "GET":
            return replies.health_method_not_allowed(request.method, path)
        if path == HEALTHZ:
            return Reply(200, b'{"status":"ok"}', _JSON, "health")
        stage = self.stage
        state = readiness(self.view, stage is NodeStage.STOPPING, stage is NodeStage.DRAINING)
        status = 200 if state is Readiness.READY else 503
        return Reply(status, encode({"status": state.value}), _JSON, f"readiness {state.value}")
