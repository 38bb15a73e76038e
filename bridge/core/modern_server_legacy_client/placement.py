"""Where a modern client's request goes when a legacy server runs as a pool of processes.

Must not start, stop or wait for anything: the shell's pool asks and carries out the choice.
A legacy server's request names no call, so a process runs at most one call that may be
asked for input at a time (mode B's attribution, `inputs.py`). A pool of processes of the
same server lets such calls run side by side, each alone at a process of its own; a retry
goes back to the process whose core parked its call, named by the route its requestState
carries (`request_state.py`), and everything else goes to the first process, which also
holds the client's listen streams.

A route names the process by its place in the pool: "" for the first, "1", "2", ... for the
others. On a front that is a node of a fleet it names the node too, so that a retry which
the balancer hands to another node finds the node that holds its call: base64url of the
node's address, NODE_END, then the process ("aHR0cDovLzEwLjAuMC4yOjg4MDg!2"). Outside a
fleet a route is the process alone, so the first process's requestState carries none.
A route is read unauthenticated, as where to take a retry; only the core that sealed the
state can tell whether it was altered (the shell forwards only to the fleet's nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Final, Protocol

from bridge.core.codec import Message
from bridge.core.eras import META_CLIENT_CAPABILITIES
from bridge.core.methods import ELIGIBLE
from bridge.core.modern_server_legacy_client.request_state import route_of
from bridge.core.record import record

NODE_END: Final = "!"
"""Ends a route's node: outside base64url's alphabet, and neither the "." that ends a
requestState's parts nor the "~" that ends its route (`request_state.py`)."""
INPUT_CAPABILITIES: Final = frozenset({"roots", "sampling", "elicitation"})
"""What a call declares when it may be asked for input (a legacy server's request)."""


class Need(Enum):
    """What one client request needs of the pool."""

    FIRST = "first"
    """Not a call (a list, a listen stream, discovery): the first process serves it."""
    SHARED = "shared"
    """A call that declares no input capability: any process whose calls it may join."""
    OWN = "own"
    """A call that may be asked for input: a process where it runs alone."""
    RETRY = "retry"
    """A call's retry: the process its requestState names."""


@record(frozen=True)
class Load:
    """What one process's core holds, as placement sees it."""

    own_free: bool
    """A call that may be asked for input would start there now."""
    shared_free: bool
    """A call that declares no input capability would start there now."""
    calls: int
    """Calls it holds: waiting, at the server, or parked (0: the process is idle)."""


PENDING: Final = Load(own_free=False, shared_free=False, calls=0)
"""The load of a core whose mode is not chosen yet: its client's first request tells it the
client's era, and until then no one knows whether its server makes a pool."""


class Start(Enum):
    """A choice that names no process of the pool."""

    NEW = "new"
    """Start one more process for the request."""
    WAIT = "wait"
    """Wait for a process to be free, in order."""


Choice = int | Start
"""The index of the process that takes the request, or `Start`."""


def need_of(message: Message) -> Need:
    """What `message` (a request of a modern client, decoded) needs of the pool."""
    if message.get("method") not in ELIGIBLE:
        return Need.FIRST
    params = message.get("params")
    if type(params) is not dict:
        return Need.FIRST  # the first process's core refuses it
    if "requestState" in params:
        return Need.RETRY
    meta = params.get("_meta")
    caps = meta.get(META_CLIENT_CAPABILITIES) if type(meta) is dict else None
    if type(caps) is dict and not INPUT_CAPABILITIES.isdisjoint(caps):
        return Need.OWN
    return Need.SHARED


def route_for(node: str, process: str) -> str:
    """The route of `process` ("" for the first) of a pool on the node at address `node`
    ("" outside a fleet)."""
    return f"{_b64(node)}{NODE_END}{process}" if node else process


def process_of(route: str) -> str:
    """The process a route names, whichever node it names."""
    return route.rpartition(NODE_END)[2]


def node_of(route: str) -> str | None:
    """The address of the node a route names; None when it names none (outside a fleet) or
    what it names is no address's base64url (a state altered: only its core can tell)."""
    head, end, _ = route.rpartition(NODE_END)
    if not end:
        return None
    import base64  # a fleet's retries alone need it
    import binascii

    try:
        return base64.b64decode(head + "=" * (-len(head) % 4), altchars=b"-_",
                                validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def route_named(message: Message) -> str:
    """The process a retry's requestState names in its pool ("" if it names none)."""
    return process_of(_state_route(message))


def node_named(message: Message) -> str | None:
    """The address of the node a retry's requestState names (None: it names none)."""
    return node_of(_state_route(message))


def node_elsewhere(message: Message, own: str) -> str | None:
    """The address of the other node of a fleet whose core parked the call `message` retries
    (the state is opened there alone); None to take it here, at the node at address `own`:
    a request that is no retry, a state naming no node, or naming this one."""
    if need_of(message) is not Need.RETRY:
        return None
    node = node_named(message)
    return None if node is None or node == own else node


def _state_route(message: Message) -> str:
    params = message.get("params")
    state = params.get("requestState") if type(params) is dict else None
    return route_of(state) if type(state) is str else ""


def _b64(text: str) -> str:
    import base64

    return base64.urlsafe_b64encode(text.encode("utf-8")).rstrip(b"=").decode("ascii")


class Pooled(Protocol):
    """Mode B's handler, as placement reads it."""

    def load(self) -> Load: ...


def load_of(handler: object) -> Load | None:
    """What a session's handler holds (a `Bridge.handler`): `PENDING` before a mode is
    chosen, None in a mode other than B (there is no pool)."""
    if handler is None:
        return PENDING
    if getattr(handler, "mode", None) != "B":
        return None
    pooled: Pooled = handler  # type: ignore[assignment]  # mode B's handler is ModeB
    return pooled.load()


def choose(need: Need, loads: Sequence[Load | None], may_start: bool,
           first_asked: bool = True) -> Choice:
    """Which process takes a request that needs `need` (not a retry), given each process's
    load (None: not serving a legacy server), whether one more may start, and whether the
    first process has been given a request.

    If the first process serves in another mode there is no pool: it takes everything.
    Before its mode is chosen it takes the first request (which decides it) and calls wait."""
    first = loads[0]
    if need is Need.FIRST or first is None:
        return 0
    if first is PENDING:
        return Start.WAIT if first_asked else 0
    for index, load in enumerate(loads):
        if load is not None and (load.own_free if need is Need.OWN else load.shared_free):
            return index
    return Start.NEW if may_start else Start.WAIT


def idle(load: Load | None) -> bool:
    """Whether the process holds no call (and so may be ended when the pool shrinks)."""
    return load is not None and load.calls == 0
