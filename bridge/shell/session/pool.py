"""A pool: one modern client's (on the HTTP front, one tenant's) bridge sessions, each a core
before a process of the same server.

Must not decide where a request goes (mode B's `placement.py` does) nor read the client's
transport (the front's router, or `clients/fd_pool.py` on stdio). A legacy server's request
names no call, so a process can run only one call that may be asked for input at a time; the
pool starts another process for the next such call, up to `max_servers` (and, on the front,
`max_servers_total` over all tenants), and a call that finds every process busy waits, in
order, for one to be free. Every process past `min_servers` that held no call for
`server_idle` seconds is stopped.

The first session is the client's own (its end is the pool's); it takes every request that
is not a call, so the client's listen streams are all at its core. A change another process's
server raises (a list_changed after a call it ran) is handed to that core (`share`), which
tells the streams that asked; with `on_change` set (a fleet), every change goes there too. A new
process gets its own handshake from its first call's envelope and is pinned to the legacy
era (the first process found it), so it starts without a probe.

    session 0 (the first) ─┬─ pool       places waiting calls, starts and stops the others
                           ├─ idle       (a tenant's) ends it after tenant_idle
                           └─ member-N   session N: a core, its server process
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import trio

from bridge.core.codec import Message
from bridge.core.events import CLIENT, ChangeRelayed, MessageDecoded, Send, ShutdownRequested
from bridge.core.modern_server_legacy_client.placement import (
    PENDING,
    Load,
    Need,
    Start,
    choose,
    idle,
    load_of,
    need_of,
    route_named,
)
from bridge.shell.fdio.pump import Throttle
from bridge.shell.logs import Logger
from bridge.shell.session.driver import Core, Driver
from bridge.shell.session.session import Session, SessionSettings
from bridge.shell.session.sides import NEVER_FULL, OpenServer
from bridge.shell.settings import ShellConfig
from bridge.streamable import replies


class Clients(Protocol):
    """Where the pool's cores send the client's messages: the HTTP front's `Mapping` (each
    onto its POST), or a byte client's writes (`clients/fd_pool.py`)."""

    def deliver(self, send: Send) -> bool:
        """Carry `send` to the client (never waiting); True if it was its request's answer."""

    def close(self, request_id: object) -> None:
        """The core that had `request_id` is gone without answering it."""

    def abandon_all(self) -> None:
        """The pool is over: nothing more reaches the client."""


class PooledCore(Core, Protocol):
    @property
    def handler(self) -> object:
        """Its mode's handler, whose load placement reads (`placement.load_of`)."""

    @property
    def legacy_server(self) -> bool:
        """Its server answered the probe as a legacy one, for good (the next start skips it)."""


MakeCore = Callable[[str, bool], PooledCore]
"""A session's core: its requestState sealed with the route given ("" but in a pool's later
processes), and its server known to be legacy (no probe) if told so."""


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """How far each tenant's pool grows and shrinks, and the front's bound on processes."""

    max_servers: int = 1
    """Processes of one tenant (its first included)."""
    min_servers: int = 1
    """Processes of one tenant never stopped for idleness (its first at least)."""
    server_idle: float = 300.0
    """Seconds a process past min_servers may hold no call before it is stopped."""
    max_servers_total: int = 64
    """Processes the front runs for its pools beyond each tenant's first."""

    @classmethod
    def of(cls, shell: ShellConfig, max_servers: int) -> PoolSettings:
        """The shell's settings, `max_servers` the mode's default unless set."""
        return cls(shell.max_servers or max_servers, shell.min_servers, shell.server_idle,
                   shell.max_servers_total)


FRONT_MAX_SERVERS = 8
"""Processes of a tenant on the HTTP front unless max_servers says: many clients' calls."""
STDIO_MAX_SERVERS = 1
"""Processes of a stdio bridge's (or a daemon session's) unless max_servers says: one client,
and a server that keeps state in memory should not find a second instance by surprise."""


class Processes:
    """The front's count of pool processes beyond each tenant's first, against its bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    @property
    def full(self) -> bool:
        return self.count >= self.limit


class Member:
    """One process of a pool, as its session's client side: what its core sends the client
    goes to the pool's `Clients`. `tracked`: the requests it takes are counted until
    answered (the first process of a byte client is not: its answers skip `send`)."""

    batch = None
    throttle = NEVER_FULL

    def __init__(self, pool: Pool, route: str, core: PooledCore, tracked: bool = True) -> None:
        self.pool = pool
        self.tracked = tracked
        self.route = route
        self.core = core
        self.driver: Driver | None = None
        self.session: Session | None = None
        self.placed: set[object] = set()
        """The ids of the requests it took that are still unanswered (if `tracked`)."""
        self.asked = False
        """Whether it has been given a request yet."""
        self.idle_since: float | None = None
        self.ending = False

    @property
    def first(self) -> bool:
        return not self.route

    def open(self, driver: Driver, nursery: trio.Nursery) -> None:
        self.driver = driver
        driver.settled = self.pool.settled
        driver.share = partial(self.pool.share, self)
        if self.first:
            self.pool.opened(nursery)

    def listen(self, server: Throttle) -> None:
        """Requests come as the pool places them (`take`)."""

    def take(self, event: MessageDecoded) -> None:
        assert self.driver is not None
        if self.tracked:
            self.placed.add(event.message["id"])
        self.asked = True
        self.idle_since = None
        self.driver.decoded(event)

    def send(self, send: Send) -> None:
        if self.pool.clients.deliver(send):
            self.placed.discard(send.request)

    async def drain(self, stall_timeout: float) -> None:
        """The core stopped. The first session waits for the others to end: the tenant's
        end is theirs."""
        if self.first:
            await self.pool.end_others(stall_timeout)

    def close(self) -> None:
        self.pool.closed(self)


class Pool:
    """The members of one tenant, and the calls waiting for one."""

    def __init__(self, clients: Clients, log: Logger, first: PooledCore, *,
                 make_core: MakeCore | None = None,
                 open_server: Callable[[Logger], OpenServer] | None = None,
                 processes: Processes | None = None,
                 settings: PoolSettings = PoolSettings(),
                 session: SessionSettings = SessionSettings()) -> None:
        """`first`: the core of the tenant's own session; `make_core` and `open_server`
        make the others (None: the pool never grows), each a session with `session`'s
        settings; `processes`: the front's count."""
        self.clients = clients
        self._log = log
        self._make_core = make_core
        self._open_server = open_server
        self._processes = processes if processes is not None else Processes(0)
        self.max_servers = settings.max_servers if make_core is not None else 1
        self.min_servers = settings.min_servers
        self.server_idle = settings.server_idle
        self._session = session
        self._grace = session.timing.shutdown_grace
        self.first = Member(self, "", first)
        self.members: list[Member] = [self.first]
        self._numbers = 0
        self.waiting: deque[MessageDecoded] = deque()
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.ended = False
        self._gone = trio.Event()
        self.on_open: Callable[[trio.Nursery], None] | None = None
        """Told the first session's nursery (the tenant's own tasks run there too)."""
        self.on_change: Callable[[Message], None] | None = None
        """Told each change the pool's servers raise (the fleet's other nodes hear it)."""

    def opened(self, nursery: trio.Nursery) -> None:
        """The first session's nursery: the pool's task, and every other member, run in it."""
        self._nursery = nursery
        nursery.start_soon(self._run, name="pool")
        if self.on_open is not None:
            self.on_open(nursery)

    def share(self, member: Member, message: Message) -> None:
        """A change `member`'s server raised (`ShareChange`): to the first core, which holds
        the listen streams (unless it is that core: it told them), and to `on_change`."""
        first = self.first.driver
        if not member.first and first is not None:
            first.post(ChangeRelayed(message))
        if self.on_change is not None:
            self.on_change(message)

    # Placing requests ----------------------------------------------------------------------

    def take(self, event: MessageDecoded) -> None:
        """A modern client's request (renamed), to the member placement chooses; or queued
        behind the calls already waiting."""
        message = event.message
        assert isinstance(message, dict)
        need = need_of(message)
        if need is Need.FIRST:  # lists, listen streams: no process's load needs reading
            self.first.take(event)
            return
        if need is Need.RETRY:
            self._by_route(route_named(message)).take(event)
            return
        if self.waiting:
            self.waiting.append(event)  # in order: it waits behind them
            return
        choice = choose(need, self._loads(), self._may_start(), self.first.asked)
        if isinstance(choice, int):
            self.members[choice].take(event)
        else:
            self.waiting.append(event)
            self._wake.set()

    def cancel(self, request_id: object, line: bytes) -> None:
        """The client cancelled request `request_id` (`line` says so): to the member that has
        it; a request still waiting is dropped (no core has heard of it)."""
        for event in self.waiting:
            if event.message["id"] == request_id:
                self.waiting.remove(event)
                return
        for member in self.members:
            if request_id in member.placed:
                member.placed.discard(request_id)
                assert member.driver is not None
                member.driver.lines(CLIENT, [line])
                return
        if not self.first.tracked and self.first.driver is not None:
            self.first.driver.lines(CLIENT, [line])  # it counts nothing: it may have it

    def settled(self) -> None:
        """A member's core has handled an event: a waiting call may have a place now."""
        if self.waiting:
            self._wake.set()

    def calls(self) -> int:
        """Calls its processes hold, in mode B (waiting, at the server, or parked)."""
        return sum(load.calls for load in self._loads() if load is not None)

    def _loads(self) -> list[Load | None]:
        return [None if member.ending or member.driver is None else load_of(member.core.handler)
                for member in self.members]

    def _may_start(self) -> bool:
        return len(self.members) < self.max_servers and not self._processes.full \
            and self._nursery is not None and not self.ended

    def _by_route(self, route: str) -> Member:
        """The member `route` names; the first if none does (its core refuses the retry)."""
        for member in self.members:
            if member.route == route:
                return member
        return self.first

    # The pool's task -----------------------------------------------------------------------

    async def _run(self) -> None:
        while not self.ended:
            self._wake = trio.Event()  # before placing: what settles meanwhile wakes it again
            await self._place_waiting()
            with trio.move_on_after(self.server_idle / 4):
                await self._wake.wait()
            self._shrink()

    async def _place_waiting(self) -> None:
        while self.waiting and not self.ended:
            event = self.waiting[0]
            need = need_of(event.message)
            loads = self._loads()
            choice = choose(need, loads, self._may_start(), self.first.asked)
            if choice is Start.WAIT:
                if len(self.members) >= self.max_servers or loads[0] is PENDING \
                        or self._nursery is None:
                    return  # its turn comes when a member is free
                self.waiting.popleft()
                self._refuse(event)  # the front's bound, not the tenant's: no hang
                continue
            member = await self._start() if choice is Start.NEW else self.members[choice]
            if not self.waiting or self.waiting[0] is not event:
                continue  # cancelled while its process started (`cancel`): that one is idle
            self.waiting.popleft()
            if member is None:
                self._refuse(event)
            else:
                member.take(event)

    def _refuse(self, event: MessageDecoded) -> None:
        wire = event.message["id"]
        error = replies.too_many_servers(wire, self._processes.limit)
        self._log.warning("pool.full", max_servers_total=self._processes.limit)
        self.clients.deliver(Send(CLIENT, error, request=wire))

    async def _start(self) -> Member | None:
        """One more member, its server started; None if it could not be."""
        assert self._nursery is not None and self._make_core is not None
        self._numbers += 1
        route = str(self._numbers)
        member = Member(self, route, self._make_core(route, True))
        log = self._log.bind(server=route)
        member.session = Session(member.core, log, settings=self._session)
        self.members.append(member)
        self._processes.count += 1
        try:
            await self._nursery.start(self._serve, member, log, name=f"member-{route}")
        except Exception as exc:  # contained: the call is refused, the tenant goes on
            log.error("pool.start_failed", error=repr(exc))
            self._forget(member)
            return None
        log.info("pool.grew", servers=len(self.members))
        return member

    async def _serve(self, member: Member, log: Logger, *,
                     task_status: trio.TaskStatus[None]) -> None:
        assert member.session is not None and self._open_server is not None
        try:
            await member.session.run(member, self._open_server(log), task_status=task_status)
        finally:
            self._forget(member)

    def _forget(self, member: Member) -> None:
        if member in self.members:
            self.members.remove(member)
            self._processes.count -= 1
            self._wake.set()
            self._gone.set()

    def _shrink(self) -> None:
        """Stop each member past `min_servers` idle for `server_idle`."""
        now = trio.current_time()
        for member in self.members[self.min_servers:]:
            if member.ending or member.placed or not idle(load_of(member.core.handler)):
                member.idle_since = None
            elif member.idle_since is None:
                member.idle_since = now
            elif now - member.idle_since >= self.server_idle:
                self._end(member, f"idle for {self.server_idle:g} s (server_idle)")

    # Its end -------------------------------------------------------------------------------

    def _end(self, member: Member, reason: str, grace: float = 0.0) -> None:
        if member.ending or member.session is None:
            return
        member.ending = True
        self._log.info("pool.server_ending", server=member.route, reason=reason)
        member.session.shut_down(grace)

    def end_all(self, grace: float) -> None:
        """Ask every member's core to stop (the first one's end waits for the others')."""
        for member in self.members[1:]:
            self._end(member, "the tenant is ending", grace)
        assert self.first.driver is not None
        self.first.driver.post(ShutdownRequested(grace))

    async def end_others(self, stall_timeout: float) -> None:
        self.ended = True
        for member in self.members[1:]:
            self._end(member, "the tenant is ending", self._grace)
        with trio.move_on_after(stall_timeout + self._grace):
            while len(self.members) > 1:
                self._gone = trio.Event()
                await self._gone.wait()

    def closed(self, member: Member) -> None:
        """A member's session is over: what it still owed its clients is abandoned (their
        POSTs end, answered that the front could not finish them)."""
        for wire in member.placed:
            self.clients.close(wire)
        member.placed.clear()
        if member.first:
            self.ended = True
            for event in self.waiting:
                self.clients.close(event.message["id"])
            self.waiting.clear()
            self.clients.abandon_all()
