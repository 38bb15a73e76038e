"""`mcp-rosetta serve --listen http://…` as a process: the socket, the tokens, the signals,
systemd, the trio run.

Must not serve requests itself (`front.py` does; the process around it is
bridge/shell/services/service.py's). The listening socket is systemd's when it
passes one (a .socket unit with a TCP `ListenStream=`), else bound here. A socket bound to
anything but loopback needs bearer tokens (streamable-http.mdx §Security & Endpoint: bind
localhost when running locally, authenticate otherwise). SIGTERM, SIGINT and SIGQUIT stop
the front, after its drain (`drain_grace`; a second one skips the drain and the grace
periods); SIGHUP reads the configuration again for
what a running front can change (the allowlist, the tokens, `max_connections`); SIGCHLD
reaps adopted orphans.
"""

from __future__ import annotations

import dataclasses
import resource
import socket
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import trio

from bridge.core.bridge import Bridge
from bridge.errors import ConfigError
from bridge.shell import logs
from bridge.shell.http.address import is_loopback, parse_address
from bridge.shell.http.auth import TOKEN_ENV, Tokens, exposed, read_tokens
from bridge.shell.http.fleet import Fleet, fleet_of
from bridge.shell.http.front import FD_FIX, Access, Front
from bridge.shell.http.resource_setup import oauth_gate, read_secret
from bridge.shell.servers.child import check_command
from bridge.shell.services.listeners import tcp_listener
from bridge.shell.services.notify import Notifier
from bridge.shell.services.orphans import Orphans
from bridge.shell.services.service import Service, watchdog_interval
from bridge.shell.session.pool import FRONT_MAX_SERVERS, PoolSettings
from bridge.shell.session.server_side import check_reload, servers_for
from bridge.shell.session.session import SessionSettings
from bridge.shell.settings import Settings
from bridge.streamable.drain import NODE_STOPPED

if TYPE_CHECKING:
    from bridge.core.config import CoreConfig
    from bridge.shell.http.oauth_gate import Gate

RELOADED = frozenset({"allowed_hosts", "allowed_origins", "token_file", "max_connections"})
"""The settings a SIGHUP changes in a running front; the others need a restart (the sessions
and their servers were started with them)."""
Reload = Callable[[], Settings]
FD_MARGIN = 64
"""fds beyond one per connection: the listener, the child's pipes, refusals under way."""
FDS_PER_SESSION = 4
"""A legacy session's or a tenant's server child: its three pipes and its pidfd."""


def run_http(settings: Settings, reload: Reload) -> int:
    """Serve the Streamable HTTP front until stopped; the exit status."""
    if settings.shell.url is None:
        check_command(settings.shell.command)
    from bridge.shell.metrics.watch import Watch

    watch = Watch("tcp")  # the front always serves /metrics
    sessions = SessionSettings.of(settings.shell, watch.series)
    servers = servers_for(settings.shell, sessions)  # a URL's ${VAR} read once, now
    assert settings.daemon.listen is not None
    address = parse_address(settings.daemon.listen)
    tokens = read_tokens(settings.daemon.token_file)
    # The front's cores say the node stopped, and what to do, for what they still owe then.
    cores = dataclasses.replace(settings.core, shutdown_message=NODE_STOPPED)
    oauth = settings.daemon.oauth
    secret = read_secret(oauth)
    listener = tcp_listener(settings.daemon.listen, address.host, address.port)
    with listener:
        bound, port = listener.getsockname()[:2]
        if oauth is None:
            _require_tokens(bound, tokens)
        fleet = fleet_of(settings.daemon, port)
        log = logs.configure(settings.shell.log_level, settings.shell.log_format)
        log.info("daemon.started", **logs.started_fields(settings.shell),
                 tokens=len(tokens), **_fleet_fields(fleet))
        gate = None if oauth is None else oauth_gate(oauth, secret, address, port, log)
        loose = exposed(settings.daemon.token_file)
        if loose is not None:
            log.warning("http.token_file_exposed", fix=loose)
        daemon = settings.daemon
        sessions_at_most = daemon.max_sessions + daemon.max_tenants
        room_for(daemon.max_connections + FDS_PER_SESSION * sessions_at_most + FD_MARGIN, log)
        def own_core(route: str, legacy: bool) -> Bridge:
            """A legacy session's or a tenant's core, as a daemon session's; `route`: its
            name in a tenant's pool; `legacy`: the front's own core found the server so."""
            core = core_settings(cores, fleet, route)
            if route or legacy:
                core = dataclasses.replace(core, server_era="legacy")
            return watch.core(core)

        bridge = watch.core(core_settings(cores, fleet, ""))
        notify = Notifier(log)
        front = Front(bridge, servers, address, log,
                      settings=sessions, notify=notify,
                      make_core=own_core, max_sessions=daemon.max_sessions,
                      session_idle=daemon.session_idle, max_tenants=daemon.max_tenants,
                      tenant_idle=daemon.tenant_idle, idle_timeout=daemon.connection_idle,
                      pool=PoolSettings.of(settings.shell, FRONT_MAX_SERVERS),
                      max_connections=daemon.max_connections,
                      stream_backlog=daemon.stream_backlog,
                      access=_access(settings, _tokens(None, tokens, fleet), gate),
                      view=bridge, fleet=fleet, scrape=watch.exposition.render,
                      drain_grace=daemon.drain_grace)
        watch.series.tenants = front.tenants.__len__
        watch.series.pool_processes = lambda: front.processes.count
        reloading = Reloading(front, settings, bound, log)
        service = Service(front, log, notify, read=reload, apply=reloading.apply,
                          kill_grace=settings.shell.timing.kill_grace,
                          watchdog=watchdog_interval(), orphans=Orphans())
        return trio.run(partial(_serve, service, front, notify, gate), listener)


async def _serve(service: Service, front: Front, notify: Callable[[str], None],
                 gate: Gate | None, listener: socket.socket) -> int:
    if gate is not None:  # before any request: a bad issuer stops the start, saying why
        await gate.start()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_tell_listening, front, notify, name="ready")
        code = await service.run(listener)
        nursery.cancel_scope.cancel()
    return code


async def _tell_listening(front: Front, notify: Callable[[str], None]) -> None:
    await front.listening.wait()
    notify(f"READY=1\nSTATUS=listening on port {front.port}; the server is starting")


def room_for(fds: int, log: logs.Logger) -> None:
    """Raise the soft open-file limit to `fds` if the hard one allows: systemd and most
    shells start a process at a soft 1024, below what max_connections needs (systemd's
    own advice is that a server raises its soft limit itself). Below that: said once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= fds:
        return
    target = fds if hard == resource.RLIM_INFINITY else min(fds, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < fds:
        log.warning("http.open_files_low", limit=target, needed=fds, fix=FD_FIX)


def _require_tokens(bound: str, tokens: tuple[bytes, ...]) -> None:
    if not tokens and not is_loopback(bound):
        raise ConfigError(f"the HTTP front listens on {bound}, not loopback: anyone who "
                          "reaches it could use the server. Set token_file = \"/path\" (or "
                          f"--token-file) or the environment variable {TOKEN_ENV}, or "
                          "listen on 127.0.0.1 behind a reverse proxy")


def _access(settings: Settings, tokens: Tokens | None, gate: Gate | None) -> Access:
    daemon = settings.daemon
    return Access(daemon.allowed_hosts, daemon.allowed_origins, tokens, gate)


def _tokens(current: Tokens | None, tokens: tuple[bytes, ...],
            fleet: Fleet | None = None) -> Tokens | None:
    """The tokens now in force, under the same digest key (a Credential survives a reload;
    in a fleet every node's key is the fleet's, so a Credential is the same on each)."""
    if not tokens:
        return None
    if current is not None:
        return current.with_tokens(tokens)
    return Tokens(tokens, fleet.keys.credentials) if fleet is not None else Tokens(tokens)


def core_settings(core: CoreConfig, fleet: Fleet | None, route: str) -> CoreConfig:
    """`core` for the core of the pool's process `route` ("" for a tenant's first): the
    route its parked calls' requestState carry names that process and, in a fleet, this
    node (outside one, a tenant's first core seals no route). A later process shares the
    changes its server raises with the first, which holds the listen streams; in a fleet
    every core shares them with the other nodes."""
    state_route = fleet.state_route(route) if fleet is not None else route
    if not state_route:
        return core
    return dataclasses.replace(core, state_route=state_route,
                               share_changes=bool(route) or fleet is not None)


def _fleet_fields(fleet: Fleet | None) -> dict[str, object]:
    """The first line's word on the fleet: this node's name and address, how many nodes (or
    the name that lists them), its affinity; never its key."""
    if fleet is None:
        return {}
    return {"node": fleet.node, "node_url": fleet.address,
            "fleet": fleet.dns if fleet.dns is not None else len(fleet.nodes),
            "fleet_affinity": fleet.affinity}


def _changed(old: Settings, new: Settings) -> list[str]:
    """The names of the settings that differ between `old` and `new`."""
    names = []
    for part in ("core", "shell", "daemon"):
        before, after = getattr(old, part), getattr(new, part)
        names += [f.name for f in dataclasses.fields(before)
                  if getattr(before, f.name) != getattr(after, f.name)]
    return sorted(set(names) - {"config_file"})


class Reloading:
    """What a SIGHUP changes in a running front: the allowlist, the tokens, the connection
    cap; the other settings are reported as needing a restart."""

    def __init__(self, front: Front, settings: Settings, bound: str, log: logs.Logger) -> None:
        self._front = front
        self._settings = settings
        """As the front started: what a reload changed is measured from them."""
        self._bound = bound
        self._log = log

    def apply(self, settings: Settings) -> None:
        """Refused (BridgeError) for tokens a non-loopback front cannot go without, or a
        server its legacy sessions could not start."""
        check_reload(settings.shell)
        tokens = read_tokens(settings.daemon.token_file)
        gate = self._front.access.gate  # the issuer's keys stay: [oauth] needs a restart
        if gate is None:
            _require_tokens(self._bound, tokens)
        loose = exposed(settings.daemon.token_file)  # a file changed since the start, too
        if loose is not None:
            self._log.warning("http.token_file_exposed", fix=loose)
        changed = _changed(self._settings, settings)
        self._front.reload(_access(settings, _tokens(self._front.access.tokens, tokens), gate),
                           settings.daemon.max_connections)
        self._log.info("daemon.reloaded", applied=sorted(RELOADED & set(changed)),
                       needs_restart=[name for name in changed if name not in RELOADED],
                       tokens=len(tokens))
