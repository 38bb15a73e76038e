"""The front: a listening TCP socket, one shared bridge session behind it, and the nursery
that owns every task of both.

Must not hold protocol logic (the shared core decides) nor touch the process (signals,
systemd's environment: `main.py`). Every modern request, whatever connection carries it, is
a client message of the one session, so its server is started once, not per request.
Each legacy session (`legacy.py`) has a core and a server of its own, as a daemon session
has. A server is a child or a session with a remote endpoint (`server_side.py`): the tasks
below are a child's; a remote one's are `http-dispatch`, one per request, `http-listen-N`.

    front ─┬─ read-server-N / wait-server-N / read-stderr-N   the shared server (supervisor)
           ├─ clock                                            the core's next deadline
           ├─ sessions ─┬─ session-1 ─┬─ read-server-N ... clock   its own server and core
           │            │             └─ idle-1    ends it after session_idle
           │            └─ session-2 ...
           └─ accept ─┬─ connection-1 ─┬─ (one request at a time; h11)
                      │                └─ watch-close   the client's end while an answer waits
                      └─ connection-2 ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import socket
from collections.abc import Callable
from dataclasses import dataclass

import trio

from bridge.core.events import CLIENT, Action, NotifyReady, Send, ShutdownRequested
from bridge.shell.daemon import GONE_BEFORE_ACCEPT, NO_ROOM, NO_ROOM_WAIT
from bridge.shell.driver import Core, Driver, line_of
from bridge.shell.http.address import Address, front_names
from bridge.shell.http.auth import Tokens
from bridge.shell.http.connection import Bodies, Connection, HttpError
from bridge.shell.http.health import Health, ServerView
from bridge.shell.http.legacy import LegacySession, Sessions
from bridge.shell.http.modern import Mapping
from bridge.shell.http.route import STREAM_BACKLOG
from bridge.shell.http.router import Endpoint, Router
from bridge.shell.http.server_side import ServerSide
from bridge.shell.logs import Logger
from bridge.shell.session import Clock, SessionSettings, Upstream
from bridge.streamable import replies

MAX_HEADER = 16 * 1024
IDLE_TIMEOUT = 60.0
"""A connection with no request under way is closed after this long; a request's head and
body must arrive within it too (a client sending a byte a second holds nothing for long)."""
BACKLOG = 128
MAX_CONNECTIONS = 1024
"""Connections served at once; one more gets 503 (within REFUSAL_WAIT) and is closed."""
REFUSAL_WAIT = 1.0
BODIES_HELD = 4
"""Request bodies of max_message_bytes the front holds at once, over all connections; past
that a request is 503 (a burst of large bodies cannot take the front's memory)."""
FD_FIX = ("raise the open-file limit (LimitNOFILE= in the unit, ulimit -n) or lower "
          "max_connections")


@dataclass(frozen=True, slots=True)
class Access:
    """Who may reach the front beyond its own names: the allowlist, and the bearer tokens
    every request but the health checks must present (None: no token asked)."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    tokens: Tokens | None = None


class FrontDriver(Driver):
    """The session's driver, with the client's messages routed by request instead of written
    to one outlet: `deliver` gets each `Send` to the client as the core made it."""

    def __init__(self, core: Core, log: Logger, deliver: Callable[[Send], None], *,
                 limit: int, notify: Callable[[str], None], debug: bool = False) -> None:
        super().__init__(core, log, limit=limit, notify=notify, debug=debug)
        self._deliver = deliver

    def _run(self, actions: list[Action]) -> None:
        for action in actions:
            if type(action) is Send:
                if action.side == CLIENT:
                    self._deliver(action)
                else:
                    self._to_server.append(line_of(action))
            else:
                self._execute(action)

    def _execute(self, action: Action) -> None:
        if type(action) is NotifyReady:  # the process said READY=1 once it listened
            self._notify("READY=1\nSTATUS=serving: the server answers")
            return
        super()._execute(action)

    def feed(self, line: bytes) -> None:
        """One client message (a POST's request, renamed, or its cancellation)."""
        self.lines(CLIENT, [line])


def bind(address: Address) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address.host, address.port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


class Front:
    """Serves one listening socket until the core stops or `stop` is called."""

    def __init__(self, core: Core, servers: ServerSide, address: Address, log: Logger, *,
                 settings: SessionSettings | None = None,
                 notify: Callable[[str], None] = lambda _: None,
                 idle_timeout: float = IDLE_TIMEOUT, max_header: int = MAX_HEADER,
                 keep_alive: float | None = None,
                 max_connections: int = MAX_CONNECTIONS, access: Access = Access(),
                 view: ServerView | None = None, stream_backlog: int = STREAM_BACKLOG,
                 make_core: Callable[[], Core] | None = None, max_sessions: int = 16,
                 session_idle: float = 1800.0) -> None:
        """`servers`: where each session's server side comes from (a child per session, or
        a session with the remote endpoint per session: `server_side.py`); `make_core`: a
        legacy session's own core (None: legacy sessions are refused, as
        over `max_sessions`); `session_idle`: seconds after which an idle one ends;
        `stream_backlog`: the bound of every stream's route (`route.py`)."""
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
        self._router: Router | None = None
        self.connections = 0
        self._make_core = make_core
        self.sessions = Sessions(max_sessions if make_core is not None else 0)
        self._session_idle = session_idle
        self._session_tasks: trio.Nursery | None = None
        self._stream_backlog = stream_backlog
        self.mapping = Mapping(log, stream_backlog)
        self._bodies = Bodies(BODIES_HELD * settings.max_message_bytes)
        self.driver = FrontDriver(core, log, self.mapping.deliver,
                                  limit=settings.max_message_bytes, notify=notify,
                                  debug=settings.debug)
        self._numbers = itertools.count(1)
        self._asked = 0
        self.listening = trio.Event()
        self.port = 0

    def stop(self, grace: float | None = None) -> None:
        """Ask the core to stop (answering what it owes within `grace`); again: at once."""
        self._asked += 1
        self._health.stopping = True
        if grace is None:
            grace = self._settings.timing.shutdown_grace
        self.driver.post(ShutdownRequested(grace if self._asked == 1 else 0.0))
        self.sessions.end_all(grace if self._asked == 1 else 0.0)

    async def run(self, listener: socket.socket) -> int:
        """Serve until the core says Stop; its exit code."""
        driver = self.driver
        settings = self._settings
        host, self.port = listener.getsockname()[:2]
        self._router = router = Router(self._endpoint(), self.mapping, driver, self._log,
                                       self._health, self.sessions, self._open_session,
                                       settings.timing.shutdown_grace)
        server: Upstream | None = None
        try:
            async with trio.open_nursery() as nursery:
                server = self._serve_core(nursery, driver, self._core, self._log, shared=True)
                await nursery.start(self._hold_sessions, name="sessions")
                nursery.start_soon(self._accept, trio.socket.from_stdlib_socket(listener),
                                   router, name="accept")
                self._log.info("http.listening", url=f"http://{_hostport(host, self.port)}"
                                                      f"{self._address.path}")
                self.listening.set()
                await driver.stopped.wait()
                self.mapping.abandon_all()
                self.sessions.end_all(settings.timing.shutdown_grace)
                await server.stop()
                await self.sessions.wait_empty()
                nursery.cancel_scope.cancel()
        finally:
            if server is not None:
                server.kill_all()
        assert driver.stop_code is not None
        self._log.info("http.stopped", code=driver.stop_code)
        return driver.stop_code

    def _serve_core(self, nursery: trio.Nursery, driver: FrontDriver, core: Core,
                    log: Logger, *, shared: bool = False) -> Upstream:
        """A core's server side (its tasks in `nursery`), started, and its clock."""
        server = self._servers(driver, nursery, log, shared=shared)
        driver.server, driver.clock = server, Clock(driver, core)
        server.serve()
        nursery.start_soon(driver.clock.run, name="clock")
        return server

    # Legacy sessions ------------------------------------------------------------------------

    async def _hold_sessions(self, *, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as sessions:
            self._session_tasks = sessions
            task_status.started()
            await trio.sleep_forever()

    async def _open_session(self) -> LegacySession | None:
        """A new legacy session, its server started: the core can take its `initialize`;
        None if it ended before that (logged `http.session_crashed`)."""
        assert self._make_core is not None and self._session_tasks is not None
        session = self.sessions.new(self._log, self._session_idle, self._stream_backlog)
        log = self._log.bind(session=session.number)
        settings = self._settings
        try:
            core = self._make_core()
            driver = FrontDriver(core, log, session.deliver, limit=settings.max_message_bytes,
                                 notify=_no_notify, debug=settings.debug)
            session.driver = driver
            await self._session_tasks.start(self._run_session, session, core, driver, log,
                                            name=f"session-{session.number}")
        except Exception as exc:  # contained: this client is told, the front goes on
            if not isinstance(exc, RuntimeError):  # else `_run_session` logged it
                log.error("http.session_crashed", error=repr(exc))
            self.sessions.discard(session)
            return None
        return session

    async def _run_session(self, session: LegacySession, core: Core, driver: FrontDriver,
                           log: Logger, *, task_status: trio.TaskStatus[None]) -> None:
        log.info("http.session_started", sessions=len(self.sessions))
        try:
            await session.run(lambda nursery: self._serve_core(nursery, driver, core, log),
                              task_status=task_status)
            log.info("http.session_ended", code=driver.stop_code)
        except Exception as exc:  # contained: the front and the other sessions go on
            log.error("http.session_crashed", error=repr(exc))
        finally:
            self.sessions.discard(session)

    @property
    def access(self) -> Access:
        return self._access

    def reload(self, access: Access, max_connections: int) -> None:
        """New access rules (the allowlist, the tokens) and connection cap, from the next
        request on; the connections already open stay open."""
        self._access, self._max_connections = access, max_connections
        if self._router is not None:
            self._router.endpoint = self._endpoint()

    def _endpoint(self) -> Endpoint:
        access = self._access
        names = front_names(self._address.host, self.port, access.allowed_hosts,
                            access.allowed_origins)
        endpoint = Endpoint(self._address.path, names, tokens=access.tokens)
        if self._keep_alive is not None:
            endpoint = dataclasses.replace(endpoint, keep_alive=self._keep_alive)
        return endpoint

    async def _accept(self, listening: trio.socket.SocketType, router: Router) -> None:
        async with trio.open_nursery() as connections:
            while True:
                sock, peer = await self._next(listening)
                number = next(self._numbers)
                stream = trio.SocketStream(sock)
                if self.connections >= self._max_connections:
                    connections.start_soon(self._refuse, stream, name="refuse")
                    continue
                self.connections += 1  # taken here, before the task runs: a burst cannot pass
                connections.start_soon(self._connection, stream, router, number, peer,
                                       name=f"connection-{number}")

    async def _next(self, listening: trio.socket.SocketType
                    ) -> tuple[trio.socket.SocketType, str]:
        """The next connection. Out of fds (a burst of idle connections holds many): wait
        for one to be freed, saying so once, instead of ending the front (as the daemon)."""
        told = False
        while True:
            try:
                sock, peer = await listening.accept()
                return sock, _hostport(*peer[:2])
            except OSError as exc:
                if exc.errno in GONE_BEFORE_ACCEPT:
                    continue
                if not told:
                    told = True
                    self._log.warning("http.accept_waiting", reason=exc.strerror,
                                      fix=FD_FIX if exc.errno in NO_ROOM else None)
                await trio.sleep(NO_ROOM_WAIT)

    async def _connection(self, stream: trio.SocketStream, router: Router, number: int,
                          peer: str) -> None:
        conn = Connection(stream, max_header=self._max_header,
                          max_body=self._settings.max_message_bytes, peer=peer,
                          stall_timeout=self._settings.timing.drain_timeout,
                          bodies=self._bodies)
        log = self._log.bind(connection=number)
        try:
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
            log.info("http.rejected", status=exc.status, reason=exc.problem)
            refusal = replies.rejected(exc.status, exc.problem)
            with trio.move_on_after(1.0):
                await conn.refuse(refusal.status, refusal.body, refusal.headers)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away: any request it had in flight was cancelled
        finally:
            self.connections -= 1
            conn.release()
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await conn.close()

    async def _refuse(self, stream: trio.SocketStream) -> None:
        """One connection over `max_connections`: its request read (h11 answers only a
        request), 503, closed; all within REFUSAL_WAIT."""
        conn = Connection(stream, max_header=self._max_header, max_body=0)
        refusal = replies.over_capacity(self._max_connections)
        self._log.warning("http.refused", reason=refusal.reason)
        with trio.move_on_after(REFUSAL_WAIT):
            with contextlib.suppress(HttpError, trio.BrokenResourceError,
                                     trio.ClosedResourceError):
                await conn.next_request()
            await conn.refuse(refusal.status, refusal.body, refusal.headers)
        with trio.CancelScope(shield=True), trio.move_on_after(REFUSAL_WAIT):
            await conn.close()


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _no_notify(_: str) -> None:
    """A legacy session tells systemd nothing (READY and STATUS are the front's)."""
