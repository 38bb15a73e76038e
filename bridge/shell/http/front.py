"""The front: a listening TCP socket, the bridge sessions behind it, and the nursery that
owns every task of them.

Must not hold protocol logic (the cores decide) nor touch the process (signals, systemd's
environment: `main.py`). Every modern request, whatever connection carries it, is a client
message of its tenant's session (bridge/shell/session/session.py, its client side
`tenants.ModernClients`), so a server is started once per tenant, not per request. The
front's own session is started with it (its server's readiness is /readyz's): without tokens
it is every client's; with tokens each credential's first request starts a tenant of its
own. Each legacy session (`legacy.py`) is a session of its own too, with its own core and
server, as a daemon session is. A server is a child or a session with a remote endpoint
(bridge/shell/session/server_side.py): the tasks below are a child's; a remote one's are
`http-dispatch`, one per request, `http-listen-N`.

    front ─┬─ shared ─── read-server-N / wait-server-N / read-stderr-N, clock   (session.py)
           ├─ changes ── in a fleet, a task per change sent to a node          (changes.py)
           ├─ drain ──── once told to stop: waits out what is in flight, then ends the rest
           ├─ sessions ─┬─ session-1 ─┬─ read-server-N ... clock   its own server and core
           │            │             └─ idle-1    ends it after session_idle
           │            ├─ tenant-D ──┬─ read-server-N ... clock   D: its credential's digest
           │            │             └─ idle-D    ends it after tenant_idle
           │            └─ session-2 ...
           └─ accept ─┬─ connection-1 ─┬─ (one request at a time; h11)
                      │                └─ read-client   its bytes; its close cancels an answer
                      └─ connection-2 ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge.shell.http.address import Address, front_names
from bridge.shell.http.auth import Credential, Tokens
from bridge.shell.http.connection import Bodies, Connection, HttpError
from bridge.shell.http.health import Health, ServerView
from bridge.shell.http.legacy import LegacySession, Sessions
from bridge.shell.http.modern import Mapping, Seal
from bridge.shell.http.route import STREAM_BACKLOG
from bridge.shell.http.router import FrontEndpoint, RequestRouter
from bridge.shell.http.tenants import ModernClients, Tenants
from bridge.shell.logs import Logger
from bridge.shell.services.service import REFUSAL_WAIT, accept_all
from bridge.shell.session.driver import Driver
from bridge.shell.session.pool import MakeCore, Pool, PooledCore, PoolSettings, Processes
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import Session, SessionSettings
from bridge.streamable import replies
from bridge.streamable.drain import Ask, NodeStage, drained, moved, refusal, takes
from bridge.streamable.replies import Reply

if TYPE_CHECKING:
    from bridge.shell.http.changes import ChangeRelay
    from bridge.shell.http.fleet import Fleet
    from bridge.shell.http.forward import Forwarder
    from bridge.shell.http.home import TenantHomes
    from bridge.shell.http.oauth_gate import Gate

MAX_HEADER = 16 * 1024
IDLE_TIMEOUT = 60.0
"""A connection with no request under way is closed after this long; a request's head and
body must arrive within it too (a client sending a byte a second holds nothing for long)."""
MAX_CONNECTIONS = 1024
"""Connections served at once; one more gets 503 (within REFUSAL_WAIT) and is closed."""
BODIES_HELD = 4
"""Request bodies of max_message_bytes the front holds at once, over all connections; past
that a request is 503 (a burst of large bodies cannot take the front's memory)."""
DRAIN_POLL = 0.05
"""Seconds between two looks, while draining, at what is still in flight."""
FD_FIX = ("raise the open-file limit (LimitNOFILE= in the unit, ulimit -n) or lower "
          "max_connections")


@dataclass(frozen=True, slots=True)
class Access:
    """Who may reach the front beyond its own names: the allowlist, and the bearer tokens
    every request but the health checks must present (None: no token asked), or the OAuth
    gate whose access tokens it takes beside them."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    tokens: Tokens | None = None
    gate: Gate | None = None


class Front:
    """Serves one listening socket until the core stops or `stop` is called: what an HTTP
    listening service serves (bridge/shell/services/service.py)."""

    events = "http"
    fd_fix = FD_FIX

    def __init__(self, core: PooledCore, servers: Servers, address: Address, log: Logger, *,
                 settings: SessionSettings | None = None,
                 notify: Callable[[str], None] = lambda _: None,
                 idle_timeout: float = IDLE_TIMEOUT, max_header: int = MAX_HEADER,
                 keep_alive: float | None = None,
                 max_connections: int = MAX_CONNECTIONS, access: Access = Access(),
                 view: ServerView | None = None, stream_backlog: int = STREAM_BACKLOG,
                 make_core: MakeCore | None = None, max_sessions: int = 16,
                 session_idle: float = 1800.0, max_tenants: int = 16,
                 tenant_idle: float = 1800.0, pool: PoolSettings = PoolSettings(),
                 fleet: Fleet | None = None,
                 scrape: Callable[[], bytes] | None = None, drain_grace: float = 0.0) -> None:
        """`servers`: where each session's server side comes from (a child per session, or
        a session with the remote endpoint per session); `make_core`: a legacy session's
        or a tenant's own core (None: both are refused, as over `max_sessions` and
        `max_tenants`); `session_idle`, `tenant_idle`: seconds after which an idle one
        ends; `stream_backlog`: the bound of every stream's route (`route.py`); `fleet`:
        the fleet this front is a node of (`fleet.py`): its legacy session ids name it, and
        a request for a session another node holds is forwarded there; `scrape`: the text
        of GET /metrics (None: 404 there); `drain_grace`: seconds the first `stop` drains
        before the cores are asked to stop (`bridge.streamable.drain`; 0: no drain)."""
        self._core = core
        self._servers = servers
        self._address = address
        self._log = log
        self._settings = settings = settings or SessionSettings()
        self._idle = idle_timeout
        self._max_header = max_header
        self._keep_alive = keep_alive
        self._max_connections = max_connections
        self._access = access
        self._health = Health(view)
        """Its `stage` is the node's: serving, draining, stopping."""
        self._drain_grace = drain_grace
        self._drain_asked = trio.Event()
        self._scrape = scrape
        self._router: RequestRouter | None = None
        self.connections = 0
        self._make_core = make_core
        self.sessions = Sessions(max_sessions if make_core is not None else 0,
                                 fleet.mint if fleet is not None else None)
        self._fleet = fleet
        self._relay: ChangeRelay | None = None
        """In a fleet: the changes of each tenant's servers, sent to and taken from the
        other nodes (`changes.py`)."""
        self._session_idle = session_idle
        self._session_tasks: trio.Nursery | None = None
        self._stream_backlog = stream_backlog
        self._pool = pool
        self.processes = Processes(pool.max_servers_total)
        """The processes of every tenant's pool beyond its first."""
        self.mapping = Mapping(log, stream_backlog, self._seal(None))
        self._clients = ModernClients(self.mapping, self._pool_of(self.mapping, log, core), log)
        self.tenants = Tenants(max_tenants if make_core is not None else 0, self._clients)
        self._tenant_idle = tenant_idle
        self._bodies = Bodies(BODIES_HELD * settings.max_message_bytes)
        self.session = Session(core, log, settings=settings, notify=_serving(notify))
        self._numbers = itertools.count(1)
        self._asked = 0
        self._notify = notify
        self.listening = trio.Event()
        self.port = 0

    @property
    def driver(self) -> Driver:
        """The shared session's driver."""
        return self.session.driver

    @property
    def stage(self) -> NodeStage:
        return self._health.stage

    def stop(self) -> None:
        """Drain for up to `drain_grace` (the `drain` task), then ask the cores to stop,
        answering what they owe within shutdown_grace; again: at once."""
        self._asked += 1
        if self._asked == 1:
            self._notify("STOPPING=1")
        if self._asked == 1 and self._drain_grace > 0:
            self._health.stage = moved(self.stage, NodeStage.DRAINING)
            self._log.info("http.draining", grace_s=self._drain_grace)
            self._drain_asked.set()
            return
        self._end(hurry=self._asked > 1)

    def _end(self, hurry: bool) -> None:
        """The drain is over, or there is none: the cores stop (`hurry`: at once, their
        servers' grace periods skipped), and the router refuses what would reach them."""
        first = self.stage is not NodeStage.STOPPING
        if first:
            self._health.stage = moved(self.stage, NodeStage.STOPPING)
        grace = 0.0 if hurry else self._settings.timing.shutdown_grace
        if first:
            self.session.shut_down(grace)
        if hurry:  # its second ask: the session hurries its server too
            self.session.shut_down(0.0)
        self.sessions.end_all(grace)
        self.tenants.end_all(grace)

    async def _drain(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Once told to stop: wait until nothing is in flight, or `drain_grace` has passed;
        then what is left is ended (unless a second signal ended it already)."""
        task_status.started()
        await self._drain_asked.wait()
        assert self._router is not None
        router = self._router
        with trio.move_on_after(self._drain_grace) as waited:
            while not drained(router.in_flight, self._held_calls()):
                await trio.sleep(DRAIN_POLL)
        if self.stage is NodeStage.DRAINING:
            self._log.info("http.drained", grace_passed=waited.cancelled_caught,
                           requests=router.in_flight, calls=self._held_calls(),
                           sessions=len(self.sessions))
            self._end(hurry=False)

    def _held_calls(self) -> int:
        """Calls the tenants' cores hold (mode B's, parked ones among them)."""
        return sum(tenant.pool.calls() for tenant in (self.tenants.shared, *self.tenants))

    async def run(self, listener: socket.socket) -> int:
        """Serve until the shared core says Stop; its exit code."""
        host, self.port = listener.getsockname()[:2]
        forwarder: Forwarder | None = None
        homes: TenantHomes | None = None
        if self._fleet is not None:
            from bridge.shell.http.changes import ChangeRelay  # httpx2: only in a fleet
            from bridge.shell.http.forward import Forwarder

            forwarder = Forwarder(self._fleet, self._log)
            if self._fleet.affinity == "tenant":
                from bridge.shell.http.home import TenantHomes

                homes = TenantHomes(self._fleet, forwarder, self._takes)
            self._relay = ChangeRelay(self._fleet, self._log, self._listeners_of)
            self._clients.pool.on_change = partial(self._relay.share, None)
        series = self._settings.series
        self._router = RequestRouter(
            self._endpoint(), self._tenant_of, self._log, self._health, self.sessions,
            self._open_session, self._settings.timing.shutdown_grace, fleet=self._fleet,
            forward=forwarder.forward if forwarder is not None else None,
            scrape=self._scrape, refused=None if series is None else series.failed,
            hear=self._relay.hear if self._relay is not None else None, home=homes)
        try:
            await self._serve(listener, host)
        finally:
            if forwarder is not None:
                with trio.CancelScope(shield=True):
                    await forwarder.aclose()
        code = self.driver.stop_code
        assert code is not None
        self._log.info("http.stopped", code=code)
        return code

    async def _serve(self, listener: socket.socket, host: str) -> None:
        async with trio.open_nursery() as nursery:
            if self._relay is not None:
                await nursery.start(self._relay.run, name="changes")
            await nursery.start(self._hold_sessions, name="sessions")
            await nursery.start(self._drain, name="drain")
            await nursery.start(self._serve_shared, nursery, name="shared")
            nursery.start_soon(self._accept, trio.socket.from_stdlib_socket(listener),
                               name="accept")
            self._log.info("http.listening", url=f"http://{_hostport(host, self.port)}"
                                                  f"{self._address.path}")
            self.listening.set()

    async def _serve_shared(self, nursery: trio.Nursery, *,
                            task_status: trio.TaskStatus[None]) -> None:
        """The shared session, its server started before the first request is read; once
        it has ended and every legacy session and tenant with it, the front ends."""
        opener = self._servers.opener(self._log, reach_first=True)
        await self.session.run(self._clients.first, opener, task_status=task_status)
        await self.sessions.wait_empty()
        await self.tenants.wait_empty()
        nursery.cancel_scope.cancel()

    # Legacy sessions ------------------------------------------------------------------------

    async def _hold_sessions(self, *, task_status: trio.TaskStatus[None]) -> None:
        """The nursery of the legacy sessions and the tenants; they are ended when the
        shared session stops."""
        async with trio.open_nursery() as sessions:
            self._session_tasks = sessions
            task_status.started()
            await self.session.stopped.wait()
            self.sessions.end_all(self._settings.timing.shutdown_grace)
            self.tenants.end_all(self._settings.timing.shutdown_grace)
            await trio.sleep_forever()

    async def _open_session(self) -> LegacySession | None:
        """A new legacy session, its server started: the core can take its `initialize`;
        None if it ended before that (logged `http.session_crashed`)."""
        assert self._make_core is not None and self._session_tasks is not None
        client = self.sessions.new(self._log, self._session_idle, self._stream_backlog)
        log = self._log.bind(session=client.number)
        try:
            session = Session(self._make_core("", False), log, settings=self._settings)
            await self._session_tasks.start(self._run_session, client, session, log,
                                            name=f"session-{client.number}")
        except Exception as exc:  # contained: this client is told, the front goes on
            if not isinstance(exc, RuntimeError):  # else `_run_session` logged it
                log.error("http.session_crashed", error=repr(exc))
            self.sessions.discard(client)
            return None
        return client

    async def _run_session(self, client: LegacySession, session: Session, log: Logger, *,
                           task_status: trio.TaskStatus[None]) -> None:
        log.info("http.session_started", sessions=len(self.sessions))
        try:
            code = await session.run(client, self._servers.opener(log),
                                     task_status=task_status)
            log.info("http.session_ended", code=code)
        except Exception as exc:  # contained: the front and the other sessions go on
            log.error("http.session_crashed", error=repr(exc))
        finally:
            self.sessions.discard(client)

    # Tenants ---------------------------------------------------------------------------------

    async def _tenant_of(self, credential: Credential | None,
                         request_id: object) -> ModernClients | Reply:
        """The tenant of `credential`, started on its first request (at `max_tenants`, the
        one idle longest makes room); the refusal if there is no room or it cannot start."""
        tenant = self.tenants.get(credential)
        if tenant is None:
            assert credential is not None  # the shared tenant is always there
            refused = refusal(self.stage, Ask.NEW, request_id)
            if refused is not None:
                return refused
            if self.tenants.closing:
                return replies.session_not_started(request_id)
            if self.tenants.full and self.tenants.make_room() is None:
                return replies.too_many_tenants(request_id, self.tenants.limit)
            tenant = self._open_tenant(credential)
        if not tenant.started.is_set():  # else no checkpoint on every request's path
            await tenant.started.wait()
        if tenant.ended:
            return replies.session_not_started(request_id)
        tenant.touch()
        return tenant

    def _takes(self, credential: Credential | None) -> bool:
        """Whether this node serves the tenant of `credential` now (`drain.takes`)."""
        return takes(self.stage, held=self.tenants.get(credential) is not None)

    def _open_tenant(self, credential: Credential) -> ModernClients:
        """A new tenant, in the table at once (a second request of its credential waits for
        the same one); its session starts in the sessions' nursery."""
        assert self._make_core is not None and self._session_tasks is not None
        log = self._log.bind(tenant=credential.digest)
        # The front's own session probed the server: a tenant's need not, if it found it legacy.
        first = self._make_core("", self._core.legacy_server)
        mapping = Mapping(log, self._stream_backlog, self._seal(credential))
        tenant = ModernClients(mapping, self._pool_of(mapping, log, first), log, credential,
                               idle=self._tenant_idle)
        if self._relay is not None:
            tenant.pool.on_change = partial(self._relay.share, credential.digest)
        self.tenants.add(tenant)
        session = Session(tenant.first.core, log, settings=self._settings)
        self._session_tasks.start_soon(self._run_tenant, tenant, session, log,
                                       name=f"tenant-{credential.digest}")
        return tenant

    def _seal(self, credential: Credential | None) -> Seal | None:
        """In a fleet, the envelope a tenant's answers put their requestState in (the
        tenant of `credential`: only its retries open it); None outside one."""
        if self._fleet is None:
            return None
        return partial(self._fleet.wrapped, None if credential is None else credential.digest)

    def _listeners_of(self, credential: str | None) -> Driver | None:
        """The driver of the core holding the listen streams of the tenant `credential`
        names (None: the one without tokens); None if it has none here (or not yet)."""
        tenant = self.tenants.get(None if credential is None else Credential(credential))
        if tenant is None or tenant.ended or not tenant.started.is_set():
            return None
        return tenant.first.driver

    def _pool_of(self, mapping: Mapping, log: Logger, first: PooledCore) -> Pool:
        """A tenant's pool, its first session's core given."""
        return Pool(mapping, log, first, make_core=self._make_core,
                    open_server=self._servers.opener, processes=self.processes,
                    settings=self._pool, session=self._settings)

    async def _run_tenant(self, tenant: ModernClients, session: Session, log: Logger) -> None:
        log.info("http.tenant_started", tenants=len(self.tenants))
        try:
            async with trio.open_nursery() as starting:
                await starting.start(partial(session.run, tenant.first,
                                             self._servers.opener(log)))
                tenant.started.set()
                if self.tenants.closing:  # the front began stopping while it started
                    tenant.end("the front is stopping", self._settings.timing.shutdown_grace)
            log.info("http.tenant_ended", code=session.driver.stop_code)
        except Exception as exc:  # contained: the front and the other tenants go on
            log.error("http.tenant_crashed", error=repr(exc))
        finally:
            tenant.ended = True
            tenant.started.set()
            self.tenants.discard(tenant)

    @property
    def access(self) -> Access:
        return self._access

    def reload(self, access: Access, max_connections: int) -> None:
        """New access rules (the allowlist, the tokens) and connection cap, from the next
        request on; the connections already open stay open."""
        self._access, self._max_connections = access, max_connections
        if self._router is not None:
            self._router.endpoint = self._endpoint()

    def _endpoint(self) -> FrontEndpoint:
        access = self._access
        names = front_names(self._address.host, self.port, access.allowed_hosts,
                            access.allowed_origins)
        endpoint = FrontEndpoint(self._address.path, names, tokens=access.tokens,
                                 gate=access.gate)
        if self._keep_alive is not None:
            endpoint = dataclasses.replace(endpoint, keep_alive=self._keep_alive)
        return endpoint

    async def _accept(self, listening: trio.socket.SocketType) -> None:
        async with trio.open_nursery() as connections:
            await accept_all(listening, self, connections, self._log)

    @property
    def full(self) -> bool:
        return self.connections >= self._max_connections

    def admit(self, nursery: trio.Nursery, connection: trio.socket.SocketType,
              peer: str) -> None:
        number = next(self._numbers)
        self.connections += 1  # taken here, before the task runs: a burst cannot pass
        assert self._router is not None
        nursery.start_soon(self._connection, trio.SocketStream(connection), self._router,
                           number, peer, name=f"connection-{number}")

    async def _connection(self, stream: trio.SocketStream, router: RequestRouter, number: int,
                          peer: str) -> None:
        conn = Connection(stream, max_header=self._max_header,
                          max_body=self._settings.max_message_bytes, peer=peer,
                          stall_timeout=self._settings.timing.drain_timeout,
                          bodies=self._bodies)
        log = self._log.bind(connection=number)
        try:
            async with conn.reading():
                while True:
                    with trio.move_on_after(self._idle) as idle:
                        request = await conn.next_request()
                    if idle.cancelled_caught:
                        log.info("http.idle_closed", idle_s=self._idle)
                        break
                    if request is None:
                        break
                    await router.serve(conn, request)
                    if not conn.reusable:
                        break
        except HttpError as exc:
            refusal = exc.reply
            log.info("http.rejected", status=refusal.status, reason=refusal.reason)
            with trio.move_on_after(1.0):
                await conn.refuse(refusal.status, refusal.body, refusal.headers)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away: any request it had in flight was cancelled
        finally:
            self.connections -= 1
            conn.release()
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await conn.close()

    async def refuse(self, connection: trio.socket.SocketType) -> None:
        """One connection over `max_connections`: its request read (h11 answers only a
        request), 503, closed; all within REFUSAL_WAIT."""
        conn = Connection(trio.SocketStream(connection), max_header=self._max_header,
                          max_body=0)
        refusal = replies.over_capacity(self._max_connections)
        self._log.warning("http.refused", reason=refusal.reason)
        with trio.move_on_after(REFUSAL_WAIT):
            async with conn.reading():
                with contextlib.suppress(HttpError, trio.BrokenResourceError,
                                         trio.ClosedResourceError):
                    await conn.next_request()
                await conn.refuse(refusal.status, refusal.body, refusal.headers)
        with trio.CancelScope(shield=True), trio.move_on_after(REFUSAL_WAIT):
            await conn.close()


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _serving(notify: Callable[[str], None]) -> Callable[[str], None]:
    """The shared session's notifications: its core's READY=1 says the server answers (the
    process said READY=1 once it listened). A legacy session tells systemd nothing."""
    def tell(state: str) -> None:
        notify("READY=1\nSTATUS=serving: the server answers" if state == "READY=1" else state)

    return tell
