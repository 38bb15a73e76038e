"""A tenant's request offered along its order of nodes, without sockets: a fake fleet and
forwarder for `TenantHomes`, httpx2's MockTransport for the node a `Forwarder` offers to.
What is checked: a home being stopped that declines a request (a drain's 503, which says it
took nothing) is passed over for the next node, as one that cannot be reached is; this
node passes itself over only for a tenant it would refuse; when no node takes a request,
this node answers it; an offer declined writes nothing to the client, and leaves its node
reachable and unlogged as lost; `forward` passes that same 503 on unchanged."""

from __future__ import annotations

from typing import Any

import httpx2
import structlog
from structlog.testing import capture_logs

from bridge.fleet.home import Local
from bridge.fleet.keys import derive
from bridge.shell import logs
from bridge.shell.http.auth import Credential
from bridge.shell.http.connection import Request
from bridge.shell.http.fleet import Fleet
from bridge.shell.http.forward import Forwarder, Unsent
from bridge.shell.http.home import TenantHomes
from bridge.shell.http.outcome import Outcome
from bridge.streamable import replies
from bridge.streamable.replies import Reply

KEYS = derive(b"fleet-secret-of-this-test-0123456789")
HERE, NEAR, FAR = "http://10.0.0.1:8808", "http://10.0.0.2:8808", "http://10.0.0.3:8808"
HELD, NEW = Credential("held-tenant-0001"), Credential("new-tenant-00002")
SERVED = Reply(200, b'{"jsonrpc":"2.0","id":1,"result":{}}')
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


class Ordered:
    """The fleet as `TenantHomes` asks it: this node's address, and one order for all."""

    address = HERE

    def __init__(self, *order: str) -> None:
        self.order = order

    async def homes(self, credential: str | None) -> tuple[str, ...]:
        return self.order


class Offers:
    """The forwarder as `TenantHomes` uses it: each node's answer to an offer, and the
    nodes offered a request, in turn."""

    def __init__(self, answers: dict[str, Reply | Unsent], lost: frozenset[str] = frozenset()
                 ) -> None:
        self.answers = answers
        self.lost = lost
        self.offered: list[str] = []

    def reachable(self, node: str) -> bool:
        return node not in self.lost

    async def offer(self, conn: Any, request: Request, node: str, outcome: Outcome,
                    gone: Any) -> Reply | Unsent:
        self.offered.append(node)
        return self.answers[node]


def taking_held_only(credential: Credential | None) -> bool:
    """This node being stopped: it takes the tenant it holds, no new one."""
    return credential == HELD


async def sent(order: tuple[str, ...], offers: Offers, credential: Credential) -> Any:
    homes = TenantHomes(Ordered(*order), offers, taking_held_only)  # type: ignore[arg-type]
    request, outcome = Request("POST", "/mcp", {}, BODY), Outcome(credential=credential)
    return await homes.send(object(), request, 1, outcome)  # type: ignore[arg-type]


async def test_a_home_that_declines_is_passed_over_for_the_next_node() -> None:
    offers = Offers({NEAR: Unsent.DECLINED, FAR: SERVED})
    assert await sent((NEAR, FAR, HERE), offers, NEW) == SERVED
    assert offers.offered == [NEAR, FAR]


async def test_this_node_being_stopped_passes_itself_over_for_a_tenant_it_does_not_hold(
        ) -> None:
    offers = Offers({NEAR: SERVED})
    assert await sent((HERE, NEAR), offers, NEW) == SERVED
    assert offers.offered == [NEAR]
    held = Offers({NEAR: SERVED})
    assert await sent((HERE, NEAR), held, HELD) is Local.HOME
    assert held.offered == []


async def test_when_no_node_takes_a_request_this_node_answers_it() -> None:
    offers = Offers({NEAR: Unsent.DECLINED, FAR: Unsent.REFUSED})
    assert await sent((NEAR, HERE, FAR), offers, NEW) is Local.HOME
    assert offers.offered == [NEAR, FAR]
    skipped = Offers({NEAR: Unsent.DECLINED}, lost=frozenset({FAR}))
    assert await sent((FAR, HERE, NEAR), skipped, NEW) is Local.HOME
    assert skipped.offered == [NEAR]


class Client:
    """The client's connection as the forwarder writes to it: what it wrote."""

    def __init__(self) -> None:
        self.written: list[tuple[Any, ...]] = []

    async def until_closed(self, work: Any) -> None:
        await work()

    async def respond(self, status: int, body: bytes, headers: Any = ()) -> None:
        self.written.append((status, body, dict(headers)))

    async def start_stream(self, status: int, headers: Any) -> None:
        self.written.append((status, "stream", dict(headers)))

    async def send(self, data: bytes) -> None:
        self.written.append((data,))

    async def end_stream(self) -> None:
        self.written.append(("end",))


def answering(reply: Reply) -> Forwarder:
    """A forwarder at HERE whose every peer answers `reply`."""

    async def node(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(reply.status, headers=list(reply.headers), content=reply.body)

    return Forwarder(Fleet("n1", HERE, KEYS, (HERE, NEAR, FAR)), logs.logger().bind(node="n1"),
                     transport=httpx2.MockTransport(node))


async def offered(forwarder: Forwarder, client: Client, outcome: Outcome) -> Any:
    request = Request("POST", "/mcp", {"content-type": "application/json"}, BODY)
    return await forwarder.offer(client, request, NEAR, outcome,  # type: ignore[arg-type]
                                 lambda why: replies.home_lost(1, why))


async def test_a_drain_s_refusal_of_an_offer_is_declined_not_relayed_nor_lost() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    for refused in (replies.node_draining(1), replies.node_stopping(1)):
        forwarder, client, outcome = answering(refused), Client(), Outcome()
        with capture_logs() as captured:
            assert await offered(forwarder, client, outcome) is Unsent.DECLINED
        await forwarder.aclose()
        assert client.written == []
        assert (outcome.status, outcome.forwarded_to) == (0, None)
        assert forwarder.reachable(NEAR)
        assert [(e["event"], e["holder"]) for e in captured] == [("fleet.home_declined", NEAR)]


async def test_any_other_503_of_a_home_reaches_the_client() -> None:
    forwarder, client, outcome = answering(replies.over_capacity(4)), Client(), Outcome()
    assert await offered(forwarder, client, outcome) is None
    await forwarder.aclose()
    [(status, _, headers)] = client.written
    assert (status, headers["retry-after"], outcome.forwarded_to) == (503, "1", NEAR)


async def test_forward_passes_a_drain_s_refusal_on_unchanged() -> None:
    refused = replies.node_draining(1)
    forwarder, client, outcome = answering(refused), Client(), Outcome()
    request = Request("POST", "/mcp", {"content-type": "application/json"}, BODY)
    assert await forwarder.forward(client, request, NEAR, outcome) is None  # type: ignore[arg-type]
    await forwarder.aclose()
    [(status, body, headers)] = client.written
    assert (status, body) == (503, refused.body)
    assert (headers["retry-after"], headers[replies.NOTHING_TAKEN]) == ("1", "draining")
    assert outcome.forwarded_to == NEAR
