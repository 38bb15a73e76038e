"""A front's stop as a load balancer sees it: serving, then draining (not ready, taking no
new session, still serving what it holds), then stopping (what it holds is ended).

Must not wait, read a clock nor count what is in flight (the front does, and asks `drained`,
`refusal` and `takes`): this module holds the rules only, so each is tested without a front.

A node told to stop (SIGTERM, as systemd and Kubernetes send) drains first: /readyz says
so at once, so the balancer sends new clients elsewhere; a new legacy session (`initialize`
without `Mcp-Session-Id`) or a new tenant's first request is answered 503 with Retry-After,
naming the drain, so the client (or a balancer that retries a 503) goes to another node;
the requests of the sessions and tenants it holds are served as before, forwarded ones too.
In a fleet, a new tenant whose home is being stopped is served at the next node of its
order, not refused until the drain ends: the node passes itself over as the home of a
tenant it does not hold (`takes`), and its refusals say it took nothing of the request
(`replies.NOTHING_TAKEN`), so a peer that offered it one offers it to the next node.
Once nothing is in flight and no call is parked, or `drain_grace` has passed, it stops:
from then on every JSON-RPC request and stream is 503 (nothing new reaches a server being
stopped; the client's answers still reach the calls owed), and what is still owed is ended
with an error saying the node stopped.
"""

from __future__ import annotations

from enum import Enum

from bridge.core.states import IllegalMove
from bridge.streamable import replies
from bridge.streamable.headers import LISTEN
from bridge.streamable.replies import Reply

NODE_STOPPED = ("mcp-rosetta is shutting down: this node stopped; send the request again "
                "(a legacy session: initialize again) and another node takes it")
"""The error of a request the front's cores still owe when they stop (their
`shutdown_message`), or that reaches one as it winds down."""


class NodeStage(Enum):
    SERVING = "serving"
    DRAINING = "draining"
    """Told to stop: not ready; what it holds is served, nothing new is taken."""
    STOPPING = "stopping"
    """The drain is over: its sessions and tenants end, every new request is refused."""


_MOVES: dict[NodeStage, frozenset[NodeStage]] = {
    NodeStage.SERVING: frozenset({NodeStage.DRAINING, NodeStage.STOPPING}),
    NodeStage.DRAINING: frozenset({NodeStage.STOPPING}),
    NodeStage.STOPPING: frozenset(),
}


def moved(now: NodeStage, to: NodeStage) -> NodeStage:
    """`to`, if the table allows the move from `now`; IllegalMove otherwise."""
    if to not in _MOVES[now]:
        raise IllegalMove("node", now, to)
    return to


class Ask(Enum):
    """What a request asks of the node, as the drain tells them apart."""

    NEW = "a new legacy session, or a new tenant"
    HELD = "a request or a stream of a session or tenant the node holds"
    ANSWER = ("the client's answer, notification or cancellation, or a session's DELETE: "
              "what lets the calls still owed end, taken until the node is gone")


def ask_of(http_method: str, message: object) -> Ask:
    """What a request of a session or tenant the node holds asks (`message`: a POST's body,
    decoded; None otherwise): a JSON-RPC request or a stream is HELD, the rest ANSWER."""
    if http_method == "DELETE":
        return Ask.ANSWER
    if http_method == "POST" and not (isinstance(message, dict) and "method" in message
                                      and "id" in message):
        return Ask.ANSWER
    return Ask.HELD


def refusal(stage: NodeStage, ask: Ask, request_id: object) -> Reply | None:
    """The answer that refuses a request at `stage`; None to serve it."""
    if stage is NodeStage.SERVING:
        return None
    if ask is Ask.ANSWER:
        return None
    if stage is NodeStage.STOPPING:
        return replies.node_stopping(request_id)
    return replies.node_draining(request_id) if ask is Ask.NEW else None


def takes(stage: NodeStage, *, held: bool) -> bool:
    """Whether a node at `stage` serves a tenant's requests (`held`: the tenant is the node's
    already): a new one only while it serves, one it holds until it stops. One it does not
    is passed over as the tenant's home, for the next node of the tenant's order."""
    return refusal(stage, Ask.HELD if held else Ask.NEW, None) is None


def only_listens(http_method: str, rpc: object) -> bool:
    """Whether a request is one a drain does not wait for: a legacy session's GET stream or
    a modern `subscriptions/listen` only listen, for as long as the client likes (it opens
    them again elsewhere once they end); `rpc`: its JSON-RPC method, None before it is read."""
    return http_method == "GET" or rpc == LISTEN


def drained(requests: int, calls: int) -> bool:
    """Whether a draining node may stop before its grace ends: no request under way
    (`requests`: those `only_listens` does not name) and no call held by a tenant's core
    (`calls`: mode B's parked calls among them, which their client's retry resumes here)."""
    return requests == 0 and calls == 0
