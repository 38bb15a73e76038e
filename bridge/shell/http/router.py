"""One HTTP request on the front: which answer it gets, and its `http.request` log line.

Must not read or write bytes itself (`connection.py`) nor answer for the core: it refuses
what the transport refuses (path, method, Host and Origin, media type, a body that is not one
request, mismatched headers: `bridge.streamable` decides and words each), and hands a modern
request to its tenant's session (`tenants.py`) through the tenant's `modern.Mapping`, then
carries the core's messages for it back as one JSON answer or an event stream. In a fleet,
a request another node forwarded is taken on that node's pass (`bridge.fleet.passes`) in
place of the Host, Origin and token checks that node made, and a modern client's retry of a
call held at another node (its requestState's envelope says which: `bridge.fleet.states`;
or mode B's `placement.node_elsewhere`) is forwarded there before any tenant here is looked
at (the pass carries its credential: the holder finds the same tenant), which opens the
envelope before its server sees the state. With `fleet_affinity = "tenant"` every other
modern request goes to its tenant's home (`home.py`) unless another node forwarded it here.
A node told to stop counts the requests its drain waits for (`in_flight`) and, once the
drain is over, refuses what would reach a server being stopped (`bridge.streamable.drain`
says which).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge.core.codec import Message
from bridge.core.events import CLIENT, MessageDecoded
from bridge.fleet import changes, passes
from bridge.fleet.home import Local
from bridge.fleet.states import Here, Lost, echoed, unwrapped
from bridge.shell.http.address import Names
from bridge.shell.http.auth import Credential, Denied, Tokens
from bridge.shell.http.connection import Connection, Request
from bridge.shell.http.health import Health
from bridge.shell.http.legacy import LegacySession, Sessions
from bridge.shell.http.legacy_requests import Answer, Forward, LegacyRequests, OpenSession
from bridge.shell.http.modern import PostExchange, Routes
from bridge.shell.http.outcome import Outcome
from bridge.shell.http.route import STOPPED_READING, Route, RouteState
from bridge.shell.http.tenants import ModernClients
from bridge.shell.logs import Logger
from bridge.shell.metrics.exposition import CONTENT_TYPE
from bridge.streamable import replies, sse
from bridge.streamable.drain import Ask, NodeStage, ask_of, only_listens, refusal
from bridge.streamable.elsewhere import elsewhere
from bridge.streamable.era import SESSION_HEADER, Era, era_of
from bridge.streamable.headers import (
    body_value,
    check,
    refuse_body,
    refuse_method,
    takes_stream,
)
from bridge.streamable.media import JSON
from bridge.streamable.replies import Reply
from bridge.streamable.target import logged, path_of

if TYPE_CHECKING:
    from bridge.shell.http.fleet import Fleet
    from bridge.shell.http.home import TenantHomes
    from bridge.shell.http.oauth_gate import Gate

KEEP_ALIVE_S = 15.0
METRICS = "/metrics"



@dataclass(frozen=True, slots=True)
class FrontEndpoint:
    """What the front serves requests as: its path, the names it answers to, its tokens."""

    path: str
    names: Names
    """The Host and Origin values this front accepts (its own, and the allowlist's)."""
    keep_alive: float = KEEP_ALIVE_S
    tokens: Tokens | None = None
    """When set, every request but the health checks presents one (auth.py)."""
    gate: Gate | None = None
    """When set, a request presents one of `tokens` or an access token the gate admits
    (`oauth_gate.py`); its metadata is served at the discovery paths."""


TenantOf = Callable[[Credential | None, object], Awaitable[ModernClients | Reply]]
"""The tenant a request's credential names (`tenants.py`), its session started; or the
refusal that answers the request (its id given) when none can be."""


class RequestRouter:
    """Gives each HTTP request of the front its answer: a refusal, a legacy session's, or
    its tenant's core's."""

    def __init__(self, endpoint: FrontEndpoint, tenant_of: TenantOf, log: Logger,
                 health: Health | None = None, sessions: Sessions | None = None,
                 open_session: OpenSession | None = None, grace: float = 0.0,
                 *, fleet: Fleet | None = None, forward: Forward | None = None,
                 scrape: Callable[[], bytes] | None = None,
                 refused: Callable[[str], None] | None = None,
                 hear: Callable[[Request, Outcome], Reply] | None = None,
                 home: TenantHomes | None = None) -> None:
        """`fleet`, `forward`: this node's fleet, and how a request reaches another node;
        `home`: sends a modern request to its tenant's home (`fleet_affinity = "tenant"`);
        `scrape`: the text GET /metrics answers; `refused`: counts a refusal of the front's;
        `hear`: takes the changes the fleet's other nodes send (`changes.PATH`)."""
        self.endpoint = endpoint
        """Replaced whole when a reload changes the allowlist or the tokens."""
        self._tenant_of = tenant_of
        self._log = log
        self._health = health or Health()
        self._fleet = fleet
        self._forward = forward
        self._scrape = scrape
        """The text GET /metrics answers (Prometheus'), behind the tokens; None: no such
        path."""
        self._refused = refused
        """Counts a request the front refused itself (an error of class "refused")."""
        self._hear = hear
        self._home = home
        self._legacy = LegacyRequests(Sessions(0) if sessions is None else sessions,
                                      open_session or _no_session,
                                      self._through_core, keep_alive=endpoint.keep_alive,
                                      grace=grace, fleet=fleet, forward=forward,
                                      refuse_new=self._refuse_new)
        self.in_flight = 0
        """Requests under way that a draining node waits for (`drain.only_listens`)."""

    async def serve(self, conn: Connection, request: Request) -> None:
        start = trio.current_time()
        outcome = Outcome()
        self._wait_for(outcome, not only_listens(request.method, None))
        try:
            await self._serve(conn, request, outcome)
        finally:
            self._wait_for(outcome, False)
            fields: dict[str, object] = {}
            if outcome.rpc is not None:
                fields["rpc_method"] = outcome.rpc
            if outcome.stream:
                fields["stream"] = True
            if outcome.cancelled:
                fields["cancelled"] = True
            if outcome.reason:
                fields["reason"] = outcome.reason
            if outcome.credential is not None:
                fields["credential"] = outcome.credential.digest
            if outcome.forwarded_to is not None:
                fields["forwarded_to"] = outcome.forwarded_to
            if outcome.forwarded_by is not None:
                fields["forwarded_by"] = outcome.forwarded_by
            self._log.info("http.request", method=request.method, path=logged(request.target),
                           status=outcome.status, peer=conn.peer, session=outcome.session,
                           duration_ms=round((trio.current_time() - start) * 1000, 3),
                           **fields)

    async def _serve(self, conn: Connection, request: Request, outcome: Outcome) -> None:
        if self._hear is not None and path_of(request.target) == changes.PATH:
            refused: Reply | None = self._hear(request, outcome)  # its pass is its admission
        else:
            refused = self._refusal(request, outcome)
        if refused is None and self.endpoint.gate is not None and outcome.forwarded_by is None:
            refused = await self._signed_in(request, outcome)  # a forwarded one was, at its node
        if refused is None:
            refused = self._at_endpoint(request)
        if refused is None:
            refused = await self._admitted(conn, request, outcome)
        if refused is not None:
            outcome.status, outcome.reason = refused.status, refused.reason
            if refused.status >= 400 and self._refused is not None:
                self._refused("refused")
            await conn.respond(refused.status, refused.body, refused.headers)

    async def _admitted(self, conn: Connection, request: Request,
                        outcome: Outcome) -> Reply | None:
        """A request the front admitted: refused if its node is stopping (it hands nothing
        new to its servers), else on its era's path; its body decoded once."""
        message = body_value(request.body) if request.method == "POST" else None
        if self._health.stage is not NodeStage.SERVING:
            refused = refusal(self._health.stage, ask_of(request.method, message),
                              _id_in(message))
            if refused is not None:
                return refused
        if request.method == "POST":
            return await self._post(conn, request, message, outcome)
        return await self._legacy.stream(conn, request, outcome)

    async def _post(self, conn: Connection, request: Request, message: object,
                    outcome: Outcome) -> Reply | None:
        """A POST of either era (`era.era_of` decides), its body's value given, or its
        refusal."""
        if message is not None and era_of(request.headers, message) is Era.LEGACY:
            return await self._legacy.post(conn, request, message, outcome)
        refused = refuse_body(message)
        if refused is not None:
            return refused
        assert isinstance(message, dict)
        outcome.rpc = message.get("method")
        if only_listens(request.method, outcome.rpc):
            self._wait_for(outcome, False)
        if self._fleet is not None:
            held = self._held_at(message, outcome)
            if isinstance(held, Reply):
                return held
            if held is not None and self._forward is not None:
                return await self._forward(conn, request, held, outcome,
                                           partial(replies.parked_call_lost, message.get("id")))
        if self._home is not None and outcome.forwarded_by is None and echoed(message) is None:
            sent = await self._home.send(conn, request, message.get("id"), outcome)
            if sent is not Local.HOME:
                return sent
        tenant = await self._tenant_of(outcome.credential, message.get("id"))
        if isinstance(tenant, Reply):
            return tenant
        refused = check(request.headers, message, tenant.mapping.param_headers)
        if refused is None:
            await self._modern(conn, request, message, outcome, tenant)
        return refused

    def _wait_for(self, outcome: Outcome, waited: bool) -> None:
        """Count the request of `outcome` in `in_flight`, or no more."""
        if waited != outcome.waited_for:
            self.in_flight += 1 if waited else -1
            outcome.waited_for = waited

    def _refuse_new(self, request_id: object) -> Reply | None:
        """The refusal of a new legacy session by a draining node; None while it serves."""
        return refusal(self._health.stage, Ask.NEW, request_id)

    def _retry_holder(self, message: Message, outcome: Outcome) -> str | None:
        """The other node holding the call `message` retries, to forward it to; None to
        serve it here. A request another node forwarded is never forwarded again."""
        if self._fleet is None or outcome.forwarded_by is not None:
            return None
        return self._fleet.parked_at(message)

    def _held_at(self, message: Message, outcome: Outcome) -> str | Reply | None:
        """In a fleet: the other node holding the call `message` retries, to forward it to;
        the answer for a retry of a call held nowhere; or None to serve it here, its
        requestState's envelope (if any) opened (`bridge.fleet.states`). A request another
        node forwarded is never forwarded again."""
        assert self._fleet is not None
        credential = outcome.credential.digest if outcome.credential is not None else None
        place = self._fleet.placed(message, credential)
        if place is None:  # no envelope: mode B's route, if any, says where
            return self._retry_holder(message, outcome)
        if isinstance(place, Here):
            unwrapped(message, place.state)
            return None
        rid = message.get("id")
        if place is Lost.TAMPERED:
            return replies.state_unsigned(rid)
        if place is Lost.RESTARTED:
            return replies.call_outlived(rid)
        if outcome.forwarded_by is not None:
            return replies.parked_call_lost(rid, f"forwarded by {outcome.forwarded_by}, "
                                                 f"held by {place.node}")
        return place.node

    async def _modern(self, conn: Connection, request: Request, message: Message,
                      outcome: Outcome, tenant: ModernClients) -> None:
        """A modern request through its tenant's core, and its answer back."""
        mapping = tenant.mapping
        exchange, renamed = mapping.admit(message, conn.peer)
        answer = None if takes_stream(request.headers) \
            else partial(self._answer, json_only=True)
        # The core takes the value decoded here: the body is parsed once.
        hand_in = partial(tenant.decoded, MessageDecoded(CLIENT, renamed))
        tenant.posts += 1
        try:
            await self._through_core(conn, exchange, hand_in, outcome, mapping,
                                     partial(tenant.cancel, exchange.names.wire),
                                     answer=answer)
        finally:
            tenant.posts -= 1
            tenant.touch()

    def _refusal(self, request: Request, outcome: Outcome) -> Reply | None:
        health = self._health.answer(request)
        if health is not None:
            return health
        forwarded = self._forwarded(request, outcome)
        if forwarded is not None:
            return forwarded
        if outcome.forwarded_by is None:
            return self._admission(request, outcome)
        return None

    def _forwarded(self, request: Request, outcome: Outcome) -> Reply | None:
        """A request another node of the fleet forwarded: its pass checked, refused (403)
        if this node cannot accept it, else the node and the credential it names taken as
        checked (that node checked the Host, the Origin and the bearer token)."""
        value = request.headers.get(passes.HEADER)
        if value is None or self._fleet is None:
            return None
        bound = passes.Bound(request.method, request.target,
                             request.headers.get(SESSION_HEADER, ""), request.body)
        checked = self._fleet.check(value, bound)
        if isinstance(checked, str):
            return replies.fleet_pass_refused(checked)
        outcome.forwarded_by = checked.node
        if checked.credential is not None:
            outcome.credential = Credential(checked.credential)
        return None

    def _admission(self, request: Request, outcome: Outcome) -> Reply | None:
        """Who may ask: the Host, the Origin, the bearer token (and what the front answers
        at paths beside its own before asking for one)."""
        endpoint = self.endpoint
        host = request.headers.get("host", "").lower()
        if not endpoint.names.admits_host(host):
            return replies.host_forbidden(host)
        origin = request.headers.get("origin")
        if origin is not None and not endpoint.names.admits_origin(origin):
            return replies.origin_forbidden(origin)
        own = elsewhere(request.method, path_of(request.target), endpoint.path,
                        None if endpoint.gate is None else endpoint.gate.metadata)
        if own is not None:
            return own
        if endpoint.tokens is not None and endpoint.gate is None:
            try:
                outcome.credential = endpoint.tokens.check(request.headers.get("authorization"))
            except Denied as denied:
                return replies.unauthorized(denied.problem, presented=denied.presented,
                                            request_id=_id_of(request))
        return None

    async def _signed_in(self, request: Request, outcome: Outcome) -> Reply | None:
        """A front taking OAuth tokens: one of its static tokens, else an access token the
        gate admits (its identity is the credential); the refusal otherwise."""
        from bridge.shell.http.oauth_gate import Refused

        endpoint = self.endpoint
        assert endpoint.gate is not None
        header = request.headers.get("authorization")
        if endpoint.tokens is not None and header is not None:
            try:
                outcome.credential = endpoint.tokens.check(header)
                return None
            except Denied:
                pass  # not a static token: perhaps an access token
        try:
            outcome.credential = await endpoint.gate.admit(header)
        except Refused as refused:
            return replies.refused_token(refused.status, refused.problem, refused.challenge,
                                         _id_of(request))
        return None

    def _at_endpoint(self, request: Request) -> Reply | None:
        path = path_of(request.target)
        if path == METRICS != self.endpoint.path and self._scrape is not None \
                and request.method == "GET":
            return Reply(200, self._scrape(), (("content-type", CONTENT_TYPE),),
                         reason="metrics")
        if path != self.endpoint.path:
            return replies.not_found_path(request.target)
        return refuse_method(request.method, request.headers)

    async def _through_core(self, conn: Connection, exchange: PostExchange,
                            hand_in: Callable[[], None], outcome: Outcome, routes: Routes,
                            feed: Callable[[bytes], None],
                            headers: tuple[tuple[str, str], ...] = (),
                            answer: Answer | None = None) -> None:
        """The request of `exchange` to a core (`hand_in`), and its messages
        back, written by `answer` (by default: JSON, or an event stream once anything
        precedes the answer); `headers` go on the answer (a legacy session's id)."""
        hand_in()
        write = answer or self._answer
        answered = False
        route = exchange.route

        async def carry() -> None:
            nonlocal answered
            answered = await write(conn, exchange, outcome, headers)

        try:
            # The route cancels its scope when it gives up on a client that stopped reading,
            # even while a write waits for the client to take bytes; the client going away
            # mid-answer is its cancellation (below).
            with route.scope:
                await conn.until_closed(carry)
        finally:
            if conn.stalled:
                route.give_up(stalled_s=conn.stall_timeout)
            if not answered:
                outcome.reason = self._why_unanswered(conn, route)
                cancel = routes.abandon(exchange)
                if cancel is not None:  # else the core answered it already: nothing to end
                    outcome.cancelled = True
                    feed(cancel)

    @staticmethod
    def _why_unanswered(conn: Connection, route: Route) -> str:
        if conn.stalled:
            return f"{STOPPED_READING} (took nothing for {conn.stall_timeout} s)"
        if route.state is RouteState.GAVE_UP:
            return f"{STOPPED_READING} (over {route.bound} bytes queued)"
        return "the client closed the connection before the answer"

    async def _answer(self, conn: Connection, exchange: PostExchange, outcome: Outcome,
                      headers: tuple[tuple[str, str], ...] = (), *,
                      json_only: bool = False) -> bool:
        """Carry the core's messages for `exchange` to the client; True once its answer is
        out. The first message decides the shape: the answer alone is a JSON answer,
        anything before it makes an event stream (§Sending Messages 6). For a client whose
        Accept takes no stream (`json_only`), what precedes the answer has nowhere to go."""
        route = exchange.route
        try:
            first = await route.get()
            while json_only and not first.final:
                self._log.debug("http.dropped", request=exchange.names.original,
                                reason="the client's Accept takes no event stream")
                first = await route.get()
        except trio.EndOfChannel:  # the front stopped before the core answered
            refusal = replies.front_stopping()
            outcome.status, outcome.reason = refusal.status, refusal.reason
            await conn.respond(refusal.status, refusal.body, refusal.headers)
            return True
        if first.final:
            outcome.status = first.status
            await conn.respond(first.status, first.line,
                               (("content-type", JSON), *headers))
            return True
        outcome.status, outcome.stream = 200, True
        await conn.start_stream(200, (*sse.HEADERS, *headers))
        await conn.send(sse.event_of(first.line))
        while True:
            with trio.move_on_after(self.endpoint.keep_alive) as waited:
                try:
                    taken = await route.take()
                except trio.EndOfChannel:
                    break  # abandoned (the front is stopping)
            if waited.cancelled_caught:
                await conn.send(sse.KEEP_ALIVE)
                continue
            # The route closes after the answer: it is the last of what it hands over.
            await conn.send(sse.events_of([outgoing.line for outgoing in taken]))
            if taken[-1].final:
                await conn.end_stream()
                return True
        await conn.end_stream()
        return True



def _id_of(request: Request) -> object:
    """The id of the JSON-RPC request a refused POST carried, if it carried one."""
    return _id_in(body_value(request.body) if request.method == "POST" else None)


def _id_in(message: object) -> object:
    """The id of a request's decoded body, if it is a JSON-RPC request's."""
    rid = message.get("id") if isinstance(message, dict) else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


async def _no_session() -> LegacySession | None:  # pragma: no cover - Sessions(0) is always full
    raise AssertionError("this router serves no legacy sessions")
